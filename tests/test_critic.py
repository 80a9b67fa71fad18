"""Step and trajectory critics: parsers, the judge over a run, labels on disk, ``agent-runtime judge``."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.config import ModelConfig
from agent_runtime.errors import ParseError
from agent_runtime.roles.caller import RoleCaller
from agent_runtime.roles.templates import load_template
from agent_runtime.traces import load_run
from agent_runtime.trainers.critics import step as critic
from agent_runtime.trainers.critics import trajectory as critic_trajectory
from agent_runtime.trainers.critics.judge import Judge, store
from agent_runtime.trainers.critics.labels import (
    CRITIC_FILE,
    StepCriticLabel,
    TrajectoryCriticLabel,
    append_step_labels,
    read_step_labels,
)
from agent_runtime.trainers.critics.step import mark_action, parse_step_critic
from agent_runtime.trainers.critics.trajectory import parse_trajectory_verdict, pick_images
from agent_runtime.trainers.data.samples import collect_samples
from tests.doubles import ScriptedChatModel, ScriptedOpenAIServer
from tests.test_filters import png, write_run

runner = CliRunner()


def step_reply(label: str, summary: str = "Tapped the Wi-Fi row.") -> str:
    return (
        f"### Analysis ###\nThe tap opened the page.\n### Summary ###\n{summary}\n### Annotation ###\n{label}"
    )


def verdict_reply(verdict: str) -> str:
    return f"### Reasoning ###\nLooked at the final screen.\n### Verdict ###\n{verdict}"


# -- parsers -----------------------------------------------------------------------------------


def test_step_critic_parser():
    out = parse_step_critic(step_reply("**HARMFUL** - it undid progress"))
    assert out.annotation == "HARMFUL" and out.summary == "Tapped the Wi-Fi row."
    long = parse_step_critic(step_reply("good", summary=" ".join(f"w{i}" for i in range(50))))
    assert long.annotation == "GOOD" and len(long.summary.split()) == 30
    with pytest.raises(ParseError, match="exactly one"):
        parse_step_critic(step_reply("GOOD or NEUTRAL"))
    with pytest.raises(ParseError, match="Annotation"):
        parse_step_critic("### Analysis ###\nfine")


def test_trajectory_verdict_parser():
    assert parse_trajectory_verdict(verdict_reply("Incorrect: stopped early")).verdict == "Incorrect"
    assert parse_trajectory_verdict(verdict_reply("**Correct**")).verdict == "Correct"
    with pytest.raises(ParseError):
        parse_trajectory_verdict(verdict_reply("maybe"))
    assert pick_images(10, 4) == [0, 3, 6, 9] and pick_images(2, 8) == [0, 1] and pick_images(5, 1) == [4]


def test_mark_action_circles_the_touched_point():
    raw = png((255, 255, 255), (200, 400))
    marked = Image.open(io.BytesIO(mark_action(raw, {"action": "click", "coordinate": [100, 200]}))).convert(
        "RGB"
    )
    radius = min(marked.size) // 30
    assert marked.getpixel((100 + radius, 200)) == (255, 0, 0)  # on the circle
    assert marked.getpixel((100, 200)) == (255, 255, 255)  # the target itself stays visible
    assert mark_action(raw, {"action": "system_button", "button": "Back"}) == raw


def test_labels_consensus_and_latest_wins(tmp_path):
    assert TrajectoryCriticLabel(text="Correct", multimodal="Correct").correct
    assert not TrajectoryCriticLabel(text="Correct", multimodal="Incorrect").correct
    append_step_labels(tmp_path, [StepCriticLabel(step=0, annotation="GOOD")])
    append_step_labels(tmp_path, [StepCriticLabel(step=0, annotation="HARMFUL")])
    with open(tmp_path / CRITIC_FILE, "a") as fh:
        fh.write('{"step": 1, "annot')  # torn last line of a killed judge
    labels = read_step_labels(tmp_path)
    assert list(labels) == [0] and labels[0].annotation == "HARMFUL" and labels[0].score == 0.0


# -- the judge over a run ----------------------------------------------------------------------


def caller(role: str, model: ScriptedChatModel, template: str) -> RoleCaller:
    cfg = ModelConfig(min_pixels=56 * 56, max_pixels=112 * 112)
    return RoleCaller(role, model, cfg, load_template(template), reask=1)


def judge_with(model: ScriptedChatModel, max_images: int = 8) -> Judge:
    return Judge(
        step=caller("critic_step", model, critic.TEMPLATE),
        caption=caller("critic_caption", model, critic_trajectory.CAPTION_TEMPLATE),
        text=caller("critic_text", model, critic_trajectory.TEXT_TEMPLATE),
        multimodal=caller("critic_multimodal", model, critic_trajectory.MULTIMODAL_TEMPLATE),
        max_images=max_images,
    )


def test_judge_labels_steps_and_trajectory_without_touching_steps_jsonl(tmp_path):
    d = write_run(tmp_path, "r1", [{"screen": 0}, {"screen": 2}, {"screen": 4}])
    steps_before = (d / "steps.jsonl").read_bytes()
    model = ScriptedChatModel(
        script={
            "critic_step": [
                "no annotation here",
                step_reply("GOOD", "Opened Settings."),
                step_reply("NEUTRAL"),
                step_reply("HARMFUL", "Turned Wi-Fi off again."),
            ],
            "critic_caption": lambda call: f"### Caption ###\nScreen number {call.index}.",
            "critic_text": verdict_reply("Correct"),
            "critic_multimodal": verdict_reply("Incorrect"),
        }
    )
    run = load_run(d)
    report = judge_with(model, max_images=3).judge(run)
    store(run, report)

    assert [(label.step, label.annotation) for label in report.step_labels] == [
        (0, "GOOD"),
        (1, "NEUTRAL"),
        (2, "HARMFUL"),
    ]
    assert (d / "steps.jsonl").read_bytes() == steps_before
    assert [json.loads(line)["annotation"] for line in (d / CRITIC_FILE).read_text().splitlines()] == [
        "GOOD",
        "NEUTRAL",
        "HARMFUL",
    ]
    judged = load_run(d).run.critic
    assert judged["text"] == "Correct" and judged["multimodal"] == "Incorrect" and judged["correct"] is False
    assert judged["steps"] == {"GOOD": 1, "NEUTRAL": 1, "HARMFUL": 1}

    steps = model.calls_for("critic_step")
    assert len(steps) == 4 and steps[1].attempt == 1  # the malformed first reply was re-asked
    assert all(c.n_images == 2 for c in steps)
    assert "Step 1: Opened Settings." in steps[2].prompt  # history = earlier steps' summaries
    assert len(model.calls_for("critic_caption")) == 4  # 3 screens before steps + the final one
    (text,) = model.calls_for("critic_text")
    assert (
        text.n_images == 0 and "Screen number 0." in text.prompt and "Turned Wi-Fi off again." in text.prompt
    )
    (mm,) = model.calls_for("critic_multimodal")
    assert mm.n_images == 3 and "Image 3: the final screen" in mm.prompt

    # the dataset builder sees the labels
    samples = {s.step: s for s in collect_samples(tmp_path, ["worker"]).samples}
    assert samples[0].critic_score == 1.0 and samples[2].critic_score == 0.0
    assert samples[0].trajectory_correct is False


# -- the command -------------------------------------------------------------------------------


def classify(prompt: str) -> str:
    if "### Annotation ###" in prompt:
        return "critic_step"
    if "### Caption ###" in prompt:
        return "critic_caption"
    if "from the text record below" in prompt:
        return "critic_text"
    return "critic_multimodal"


def write_config(path, base_url: str, retries: int = 0) -> None:
    path.write_text(
        f'[models.critic]\nbase_url = "{base_url}"\nmodel = "scripted-http"\nretries = {retries}\n'
        "timeout_s = 5\nmin_pixels = 3136\nmax_pixels = 12544\n",
        encoding="utf-8",
    )


def test_judge_command_over_http(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "r1", [{}, {"screen": 3}])
    write_run(runs, "r2", [{}], status="running", success=None)
    script = {
        "critic_step": step_reply("GOOD"),
        "critic_caption": "### Caption ###\nSettings, Wi-Fi on.",
        "critic_text": verdict_reply("Correct"),
        "critic_multimodal": verdict_reply("Correct"),
    }
    with ScriptedOpenAIServer(script, classify=classify) as server:
        cfg = tmp_path / "judge.toml"
        write_config(cfg, server.base_url)
        res = runner.invoke(app, ["judge", "--runs-dir", str(runs), "--config", str(cfg)], terminal_width=200)
        assert res.exit_code == 0, res.output
        assert "skip r2: still running" in res.output and "Correct" in res.output
        assert server.counts == {
            "critic_step": 2,
            "critic_caption": 3,
            "critic_text": 1,
            "critic_multimodal": 1,
        }
        assert len(read_step_labels(runs / "r1")) == 2 and load_run(runs / "r1").run.critic["correct"] is True

        again = runner.invoke(
            app, ["judge", "--runs-dir", str(runs), "--config", str(cfg), "--no-trajectory"]
        )
        assert again.exit_code == 0 and "already judged" in again.output
        assert server.counts["critic_step"] == 2

        one = runner.invoke(
            app, ["judge", "r1", "--runs-dir", str(runs), "--config", str(cfg), "--no-trajectory"]
        )
        assert one.exit_code == 0, one.output
        assert server.counts["critic_step"] == 4

        running = runner.invoke(app, ["judge", "r2", "--runs-dir", str(runs), "--config", str(cfg)])
        assert running.exit_code == 1 and "still running" in running.output
        unknown = runner.invoke(
            app, ["judge", "--runs-dir", str(runs), "--config", str(cfg), "--model", "nope"]
        )
        assert unknown.exit_code == 2 and "no model named 'nope'" in unknown.output


def test_judge_command_reports_a_dead_server_cleanly(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "r1", [{}])
    cfg = tmp_path / "judge.toml"
    write_config(cfg, "http://127.0.0.1:9/v1")
    res = runner.invoke(app, ["judge", "--runs-dir", str(runs), "--config", str(cfg), "--no-trajectory"])
    assert res.exit_code == 1 and "error:" in res.output and "Traceback" not in res.output
    assert not (runs / "r1" / CRITIC_FILE).exists()
