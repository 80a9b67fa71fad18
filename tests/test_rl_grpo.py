"""Hi-Agent single-step GRPO: oracle data, r_ℓ, TRL phases, the alternating loop, ``distill --method grpo``.

The tiny random model never writes a well-formed action or subgoal, so every reward would be 0
and GRPO would learn nothing checkable. :func:`grpo_base` warm-starts it with a few supervised
steps (our SFT trainer) on the oracle's answer step towards the right reply *and* a wrong one in
equal measure — at both levels — so sampled groups have mixed rewards, as after a real SFT stage.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.hi_agent.grpo_data import GRPORecord, build_records, prompt_text
from tests.doubles import ScriptedChatModel

TASK = "SettingsWifiNetworkQuestion"
ANSWER = 2  # the oracle's step answering "Apt 4B"
SETTINGS = PromptSettings(min_pixels=56 * 56, max_pixels=112 * 112)
runner = CliRunner()


@pytest.fixture(autouse=True)
def one_torch_thread(request):
    """One CPU thread for torch tests: on a busy 2-core box two threads spin against each other."""
    if request.node.get_closest_marker("train") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[GRPORecord]:
    out = tmp_path_factory.mktemp("grpo_data")
    found, experts = build_records(out, SETTINGS, tasks=TASK, split="all", episodes=1, seed=0)
    assert experts.successful_episodes == 1
    return found


def right_action(r: GRPORecord) -> str:
    """The oracle action as the low level writes it, in its coordinate space (2 decimals)."""
    s = r.solution
    action: dict[str, object] = {"action": s.action_type}
    if s.touch_point is not None:
        action["coordinate"] = [
            round(s.touch_point[0] * r.image_size[0], 2),
            round(s.touch_point[1] * r.image_size[1], 2),
        ]
    if s.typed_text:
        action[{"system_button": "button", "terminate": "status"}.get(s.action_type, "text")] = s.typed_text
    return json.dumps(action)


def right_subgoal(r: GRPORecord) -> str:
    return f"<reasoning>Ok.</reasoning><instruction>Instruction: {r.instruction}</instruction>"


@pytest.fixture(scope="module")
def grpo_base(
    records: list[GRPORecord], tiny_vlm_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The tiny model, SFT-warm-started to answer right about half the time (module docstring)."""
    import torch
    from datasets import Dataset

    from agent_runtime.trainers.data.datasets import ImageLoader, assistant, sft_features
    from agent_runtime.trainers.sft_config import SFTConfig
    from agent_runtime.trainers.sft_trainer import train_sft

    torch.set_num_threads(1)
    loader = ImageLoader()
    rows = []
    for r in records[ANSWER : ANSWER + 1]:
        image = loader.load(Path(r.image_path).parent, Path(r.image_path).name, r.image_seen)
        pairs = [
            ("low", right_action(r)),
            ("low", '{"action": "wait"}'),
            ("high", right_subgoal(r)),
            ("high", "Tap."),
        ]
        for level, reply in pairs:
            prompt = [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "text": None},
                        {"type": "text", "text": prompt_text(r, level)},
                    ],
                }
            ]
            rows.append({"prompt": prompt, "completion": assistant(reply), "images": [image]})
    out = tmp_path_factory.mktemp("grpo_base") / "base"
    cfg = SFTConfig(
        base=str(tiny_vlm_dir),
        output_dir=out,
        lora=False,
        max_steps=80,
        learning_rate=1e-2,
        batch_size=4,
        progress=False,
    )
    train_sft(cfg, Dataset.from_list(rows, features=sft_features()))
    return out


def _cfg(base: Path, out: Path, **kw: object):
    from agent_runtime.trainers.hi_agent.grpo_config import GRPOConfig

    fields = {
        "base": str(base),
        "output_dir": out,
        "num_generations": 4,
        "batch_size": 4,
        "gradient_accumulation_steps": 1,
        "max_steps": 2,
        "max_new_tokens": 64,
        "temperature": 1.0,
        "learning_rate": 5e-3,
        "lora_r": 4,
        "lora_alpha": 8,
        "progress": False,
        **kw,
    }
    return GRPOConfig(**fields)


# -- data and rewards (no torch) --------------------------------------------------------------------


def test_records_carry_normalised_touch_points_at_the_oracle_element_centres(records, tmp_path) -> None:
    from agent_runtime.simphone.tasks import select, task_instances
    from agent_runtime.trainers.demos.experts import play_expert_episode

    assert [r.solution.action_type for r in records] == ["open_app", "click", "answer", "terminate"]
    assert records[0].instruction == "Open the Settings app." and records[0].solution.typed_text == "Settings"
    assert records[2].solution.typed_text == "Apt 4B" and records[3].solution.typed_text == "success"
    assert all(r.problem == records[0].problem and Path(r.image_path).is_file() for r in records)
    # The tap: its element is the one the instruction names, and the point is that element's centre.
    episode = play_expert_episode(task_instances(select(TASK), split="all", episodes=1, seed=0)[0], tmp_path)
    obs = episode.observations[1]
    label = records[1].instruction.split('"')[1]
    element = next(e for e in obs.elements if e.label == label)
    cx, cy = (element.bounds.x1 + element.bounds.x2) / 2, (element.bounds.y1 + element.bounds.y2) / 2
    w, h = obs.size
    tx, ty = records[1].solution.touch_point
    assert abs(tx * w - cx) <= 0.5 and abs(ty * h - cy) <= 0.5  # the centre, on the pixel grid
    assert records[1].solution.lift_point == records[1].solution.touch_point
    assert 0 < records[1].solution.touch_point[0] < 1 and records[1].image_size == (56.0, 140.0)


def test_low_level_reward_is_one_only_for_the_oracle_action(records) -> None:
    from agent_runtime.trainers.hi_agent.grpo_trainer import make_low_level_reward

    reward = make_low_level_reward(epsilon=0.002)
    tap, answer = records[1], records[2]

    def score(record: GRPORecord, replies: list[str]) -> list[float]:
        n = len(replies)
        return reward(
            replies,
            solution=[json.dumps(record.solution.model_dump(mode="json"))] * n,
            image_size=[list(record.image_size)] * n,
        )

    x, y = (c * e for c, e in zip(tap.solution.touch_point, tap.image_size, strict=True))
    assert score(
        tap,
        [
            right_action(tap),
            json.dumps({"action": "click", "coordinate": [x + 1, y]}),  # 1 px of 56: beyond epsilon
            json.dumps({"action": "long_press", "coordinate": [x, y]}),
            "tap it",
        ],
    ) == [1.0, 0.0, 0.0, 0.0]
    assert score(
        answer,
        [
            '{"action": "answer", "text": " apt  4b"}',
            '{"action": "answer", "text": "42"}',
            [{"role": "assistant", "content": right_action(answer)}],  # conversational completions too
        ],
    ) == [1.0, 0.0, 1.0]


# -- TRL phases and the loop -------------------------------------------------------------------------


@pytest.mark.train
def test_one_low_level_phase_runs_through_trl_and_moves_the_lora_weights(
    records, grpo_base, tmp_path
) -> None:
    from safetensors.torch import load_file

    from agent_runtime.trainers.hi_agent.grpo_data import build_dataset
    from agent_runtime.trainers.hi_agent.grpo_trainer import make_low_level_reward, run_phase

    dataset, dropped = build_dataset(records, "low")
    assert dropped == 0 and len(dataset) == 4 and dataset[0]["image"].size == records[0].image_seen
    dataset, _ = build_dataset(records[ANSWER : ANSWER + 1], "low")
    out = tmp_path / "phase"
    result = run_phase(_cfg(grpo_base, out, level="low"), dataset, [make_low_level_reward()])
    assert result.training.steps == 2 and len(result.training.losses) == 2
    assert all(math.isfinite(p.loss) for p in result.training.losses)
    assert set(result.rewards) == {"action_match"} and 0 < result.match_rate < 1, result.rewards
    lora_b = [t for k, t in load_file(str(out / "adapter_model.safetensors")).items() if "lora_B" in k]
    assert lora_b and max(float(t.abs().max()) for t in lora_b) > 0  # B starts at zero: it moved


@pytest.mark.train
def test_alternating_loop_updates_low_then_high_and_resumes(grpo_base, tmp_path) -> None:
    from agent_runtime.trainers.hi_agent.grpo_trainer import ChatJudge, train_grpo
    from agent_runtime.trainers.online.loop import RLOptions

    judge_model = ScriptedChatModel(script={"judge": ['{"reward": 1}', "not sure", '{"reward": 0}']})
    out = tmp_path / "alt"
    # 16 completions a step = all four oracle steps, G = 4 each.
    cfg = _cfg(grpo_base, out, role="manager", alternate=True, max_steps=1, batch_size=16)
    opts = RLOptions(tasks=TASK, split="all", iterations=1)
    lines: list[str] = []
    _, training, _ = train_grpo(cfg, opts, SETTINGS, judge=ChatJudge(judge_model), echo=lines.append)
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    phases = metrics[0]["phases"]
    assert [(p["level"], p["role"]) for p in phases] == [("low", "worker"), ("high", "manager")]
    assert set(phases[1]["rewards"]) == {"format_reward", "env_reward", "judge_reward"}
    assert phases[1]["rewards"]["format_reward"] > 0  # the warm start writes subgoals: judge and π_ℓ ran
    calls = judge_model.calls_for("judge")
    assert calls and all(c.n_images == 1 and "Instruction:" in c.prompt for c in calls)
    it1 = out / "iter_0001"
    assert json.loads((it1 / "manifest.json").read_text())["role"] == "manager"
    assert json.loads((it1 / "low_level" / "manifest.json").read_text())["role"] == "worker"
    # π_ℓ was saved before π_h's phase started: eq. 5's order.
    assert (it1 / "low_level" / "adapter_model.safetensors").stat().st_mtime <= (
        it1 / "adapter_model.safetensors"
    ).stat().st_mtime
    assert lines[-1].startswith("iter 1: worker reward") and "| manager reward" in lines[-1]
    assert training.steps == 2 and (out / "low_level" / "manifest.json").is_file()
    # --resume: iteration 2 only, from iteration 1's adapters.
    lines.clear()
    train_grpo(
        cfg,
        opts.model_copy(update={"iterations": 2, "resume": True}),
        SETTINGS,
        judge=ChatJudge(judge_model),
        echo=lines.append,
    )
    assert lines[0] == "resuming after iteration 1" and lines[1].startswith("iter 2:")
    manifest = json.loads((out / "iter_0002" / "manifest.json").read_text())
    assert [m["iteration"] for m in manifest["training"]["extra"]["iterations"]] == [1]
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2


# -- the CLI ----------------------------------------------------------------------------------------


def _cli(base: Path, out: Path, *extra: str):
    args = [
        "distill", "--method", "grpo", "--base", str(base), "--out", str(out), "--env", "simphone",
        "--tasks", TASK, "--split", "all", "--min-pixels", "3136", "--max-pixels", "12544",
        "--group-size", "2", "--batch-size", "2", "--grad-accum", "1", "--max-new-tokens", "24", *extra,
    ]  # fmt: skip
    return runner.invoke(app, args, terminal_width=200)


@pytest.mark.train
def test_distill_grpo_worker_end_to_end(grpo_base, tmp_path) -> None:
    out = tmp_path / "cli"
    res = _cli(grpo_base, out, "--role", "worker", "--iterations", "1", "--max-steps", "1", "--lora-r", "4")
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "oracle steps: 4 from 1/1 episodes" in said and "iter 1: worker reward" in said and "match" in said
    m = json.loads((out / "iter_0001" / "manifest.json").read_text())
    assert (m["method"], m["role"], m["kind"]) == ("grpo", "worker", "lora")
    assert m["hyperparameters"]["level"] == "low" and m["hyperparameters"]["num_generations"] == 2
    top = json.loads((out / "manifest.json").read_text())
    assert top["method"] == "grpo" and (out / "adapter_model.safetensors").is_file()
    res = _cli(grpo_base, out, "--role", "worker", "--iterations", "1")
    assert res.exit_code != 0 and "--resume" in res.output and "Traceback" not in res.output


def test_distill_grpo_misuse_is_a_clear_error(tmp_path) -> None:
    base = tmp_path / "no-model"
    for role, expected in (("reflector", "worker or the manager"), ("pilot", "unknown role")):
        res = _cli(base, tmp_path / "out", "--role", role)
        assert res.exit_code != 0 and expected in res.output and "Traceback" not in res.output
    res = runner.invoke(
        app,
        [
            "distill",
            "--method",
            "grpo",
            "--role",
            "worker",
            "--base",
            str(base),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code != 0 and "--env simphone" in res.output
    assert "grpo" in runner.invoke(app, ["distill", "--help"]).output
