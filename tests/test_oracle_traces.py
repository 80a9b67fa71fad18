"""SimPhone demonstrations: the oracle plays every role through the real graph; trainers read the runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.config import ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.roles import manager, notetaker, reflector, worker
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.tasks import make_task
from agent_runtime.traces import iter_runs, load_run
from agent_runtime.trainers.data.datasets import assistant, to_text_conversational
from agent_runtime.trainers.data.filters import apply_filters
from agent_runtime.trainers.data.filters.pipeline import default_pipeline
from agent_runtime.trainers.data.filters.reweight import success_rates
from agent_runtime.trainers.data.samples import NOT_A_TARGET, collect_samples, samples_from_run
from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
from agent_runtime.trainers.distill import DataOptions
from tests.doubles import ScriptedChatModel

TEMPLATES = "SettingsToggle,ContactsPhoneQuestion"
GOLDEN = Path(__file__).parent / "data" / "oracle_demo_rows.json"
PARSERS = {
    "manager": manager.parse_manager,
    "worker": worker.parse_worker,
    "reflector": reflector.parse_reflector,
    "notetaker": notetaker.parse_notetaker,
}


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    report = write_demos(DemoOptions(tasks=TEMPLATES, episodes=1), out)
    return out, report


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    out = tmp_path_factory.mktemp("perturbed")
    tasks = "ContactsPhoneQuestion,ContactsFavorite,NotesCreate,ClockDeleteAlarm"
    report = write_demos(DemoOptions(tasks=tasks, episodes=1, perturb=1.0), out)
    return out, report


def test_demo_runs_load_and_become_valid_sft_samples_for_every_role(demos):
    out, report = demos
    assert report.episodes == 2 and len(report.runs) == 2 and not report.skipped
    for run_dir in iter_runs(out):
        run = load_run(run_dir)
        assert run.run.status == "completed" and run.run.eval["task_success"] is True
        assert run.run.eval["task"] in TEMPLATES.split(",") and run.run.eval["source"] == "oracle"
        assert {c.role for c in run.calls} == set(PARSERS)
        assert [s.step for s in run.steps] == list(range(len(run.steps)))
    found = collect_samples(out)
    assert {s.role for s in found.samples} == set(PARSERS)
    for s in found.samples:
        assert s.valid and s.outcome == "success" and s.outcome_source == "eval"
        # What was recorded as parsed is what the runtime's own parser makes of the completion.
        assert PARSERS[s.role](s.completion).model_dump(mode="json") == s.parsed
        # ui_tree mode: text only, the indexed tree in the prompt.
        assert all(p["type"] == "text" for m in s.messages for p in m["content"])
        assert "(UI Tree) ###" in s.prompt_text()
    clicks = [s for s in found.samples if s.role == "worker" and s.parsed["action"]["action"] == "click"]
    assert clicks and all(set(s.action) == {"action", "index"} for s in clicks)
    assert all(s.action_screen["coordinate"] for s in clicks)
    answers = [s for s in found.samples if s.role == "worker" and s.parsed["action"]["action"] == "answer"]
    assert len(answers) == 1
    finals = [s for s in found.samples if s.role == "manager" and s.parsed["finished"]]
    assert len(finals) == 1  # the non-question task ends with a Finished plan


def test_distill_filters_keep_demo_samples_and_rows_build(demos, perturbed):
    options = DataOptions(runs_dir=demos[0])
    for role in PARSERS:
        found = collect_samples(demos[0], [role]).samples
        if role == "reflector":
            # The Reflector filter trusts positives only from runs without failures and balances
            # A against B/C: clean and perturbed demonstrations together make it trainable.
            found += collect_samples(perturbed[0], [role]).samples
        kept, reports = apply_filters(found, default_pipeline(role, options.filters, success_rates(found)))
        assert kept, (role, [r.line() for r in reports])
        if role == "reflector":
            outcomes = [s.parsed["outcome"] for s in kept]
            assert outcomes.count("A") == outcomes.count("B") + outcomes.count("C") > 0, outcomes
    out = demos[0]
    pytest.importorskip("datasets")
    from agent_runtime.trainers.data.datasets import build_sft_dataset

    workers = collect_samples(out, ["worker"]).samples
    rows = build_sft_dataset(workers[:4])
    assert len(rows) == 4 and rows[0]["images"] == []
    assert rows[0]["completion"][0]["content"][0]["text"].startswith("### Thought ###")


def test_perturbed_steps_teach_b_and_c_verdicts_and_recovery(perturbed):
    out, report = perturbed
    assert report.perturbed > 0 and not report.skipped
    outcomes = {"B": 0, "C": 0}
    for run_dir in iter_runs(out):
        run = load_run(run_dir)
        assert run.run.eval["task_success"] is True  # the expert recovered every time
        worker_steps = {s.step for s in samples_from_run(run, ["worker"])}
        reflections = {c.step: c for c in run.calls_for("reflector")}
        for i, step in enumerate(run.steps):
            if step.verdict is None or step.verdict.success:
                continue
            outcomes[step.verdict.outcome] += 1
            # The Reflector's target says so, with a reason; the wrong action is no Worker target.
            target = reflections[step.step].parsed
            assert target["outcome"] == step.verdict.outcome and target["error_description"]
            # The graph asked the Worker, so the call is recorded — marked, never a sample.
            asked = next(c for c in run.calls_for("worker") if c.step == step.step)
            assert asked.extra[NOT_A_TARGET] and step.step not in worker_steps
            nxt = run.steps[i + 1]
            if step.verdict.outcome == "B":
                assert nxt.action == {"action": "system_button", "button": "Back"} and nxt.verdict.success
            else:
                assert nxt.subgoal == step.subgoal  # retried
            update = next(c for c in run.calls_for("manager") if c.step == step.step)
            assert "Failed" in update.messages[0]["content"][0]["text"]
            assert update.parsed["plan"] and update.parsed["plan"][0] == step.subgoal
    assert outcomes["B"] > 0 and outcomes["C"] > 0, outcomes


def test_demo_prompts_are_the_runtime_prompts(demos, tmp_path):
    """The same state rendered by a real run: Manager and Worker prompts match byte for byte."""
    out, _ = demos
    run = next(load_run(d) for d in iter_runs(out) if load_run(d).run.eval["task"] == "SettingsToggle")
    task = make_task("SettingsToggle", run.run.eval["seed"])
    phone = SimPhone(seed=task.seed)
    task.setup(phone)
    demo_manager, demo_worker = run.calls_for("manager")[0], run.calls_for("worker")[0]
    model = ScriptedChatModel(
        script={
            "manager": demo_manager.completion,
            "worker": demo_worker.completion,
            "reflector": "### Outcome ###\nA",
            "notetaker": "### Important Notes ###\nNone",
        }
    )
    config = RuntimeConfig(
        models={"default": ModelConfig(observation="ui_tree")},  # type: ignore[arg-type]
        roles={"rag": RoleConfig(enabled=False)},
    )
    Runtime(config, models=dict.fromkeys(PARSERS, model), runs_dir=tmp_path).run(
        task.goal, device=phone, max_steps=1
    )
    live = load_run(next(iter_runs(tmp_path)))
    assert live.calls_for("manager")[0].messages == demo_manager.messages
    assert live.calls_for("worker")[0].messages == demo_worker.messages
    assert live.steps[0].action == run.steps[0].action
    assert live.steps[0].action_screen == run.steps[0].action_screen


def test_screenshot_mode_demos_use_coordinates_and_images(tmp_path):
    report = write_demos(DemoOptions(tasks="SettingsToggle", observation="screenshot"), tmp_path)
    run = load_run(report.runs[0])
    call = run.calls_for("worker")[1]
    kinds = [p["type"] for p in call.messages[0]["content"]]
    assert kinds == ["text", "image_ref"] and "UI Tree" not in call.messages[0]["content"][0]["text"]
    click = next(s for s in run.steps if s.action["action"] == "click")
    assert "index" not in click.action and click.action["coordinate"] != click.action_screen["coordinate"]


def test_cli_writes_demos_and_rejects_bad_options(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "simphone",
            "demos",
            "--tasks",
            "SettingsBrightness",  # not template-held-out: demos leave those out unless asked
            "--out",
            str(tmp_path),
            "--json",
            "--perturb",
            "0.5",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert len(report["runs"]) == 1 and report["calls"]["worker"] >= 1
    bad = runner.invoke(app, ["simphone", "demos", "--out", str(tmp_path), "--perturb", "2"])
    assert bad.exit_code == 2 and "--perturb" in bad.output and "Traceback" not in bad.output
    bad = runner.invoke(app, ["simphone", "demos", "--out", str(tmp_path), "--observation", "pixels"])
    assert bad.exit_code == 2 and "observation" in bad.output


def training_rows(runs_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Per role, in call order: the rows ``distill --method sft`` builds from the training targets
    (``build_sft_dataset``'s text-only prompt and completion) with the call's step."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for s in collect_samples(runs_dir).samples:
        rows.setdefault(s.role, []).append(
            {
                "step": s.step,
                "prompt": to_text_conversational(s.messages),
                "completion": assistant(s.completion, text_only=True),
            }
        )
    return rows


def test_the_records_of_a_fixed_task_and_seed_are_what_training_reads(tmp_path):
    """Mistakes, Back, B verdicts and left-out Manager updates included, the episode's training
    rows are the checked-in ones (see ``about`` in the file; rewrite it with ``python -m
    tests.test_oracle_traces`` after a deliberate change to prompts, SimPhone or the oracle)."""
    golden = json.loads(GOLDEN.read_text())
    report = write_demos(DemoOptions(**golden["options"]), tmp_path)
    assert report.model_dump(mode="json", exclude={"runs", "seconds"}) == golden["report"]
    rows = training_rows(tmp_path)
    assert sorted(rows) == sorted(golden["rows"])
    for role, expected in golden["rows"].items():
        assert rows[role] == expected, role


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        doc = json.loads(GOLDEN.read_text())
        done = write_demos(DemoOptions(**doc["options"]), tmp)
        doc.update(
            report=done.model_dump(mode="json", exclude={"runs", "seconds"}), rows=training_rows(Path(tmp))
        )
    GOLDEN.write_text(json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
