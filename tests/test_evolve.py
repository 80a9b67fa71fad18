"""``agent-runtime evolve``: promotion by a paired test, the recipes' stages, reasoning-free demos,
and the whole loop end to end with the tiny model (rollouts → hints → SFT → eval → promote, resume).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_runtime.config import GraphConfig, ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.errors import ConfigError, TrainingError
from agent_runtime.evaluation.report import EpisodeResult, EvalReport
from agent_runtime.trainers.evolve import Evolution, EvolveOptions, decide
from agent_runtime.trainers.evolve.reasoning import action_only


def _report(successes: dict[str, bool]) -> EvalReport:
    results = []
    for key, ok in successes.items():
        task, seed = key.split("/")
        results.append(
            EpisodeResult(
                task=task,
                app="Clock",
                seed=int(seed),
                split="test",
                goal="g",
                success=ok,
                score=float(ok),
                steps=2,
                max_steps=5,
                status="completed",
            )
        )
    return EvalReport.build(
        results, complexity={}, suite="simphone", split="test", policy="agent", episodes=1, seed=0,
        workers=1, duration_s=1.0,
    )  # fmt: skip


def test_promotion_needs_a_significant_template_clustered_gain() -> None:
    """The gate's unit is a template (issue 33): six templates that each gain an instance give a
    one-sided p of 1/64; the same six gains inside one template are one observation (p = 1/2)."""
    six = [f"T{t}/0" for t in range(6)] + [f"T{t}/1" for t in range(6)]
    best = _report(dict.fromkeys(six, False))
    each = _report({k: k.endswith("/0") for k in six})
    promoted, paired, _ = decide(best, each, alpha=0.02)
    assert promoted and (paired.better, paired.worse, paired.p_greater) == (6, 0, 1 / 64)
    assert not decide(best, each, alpha=0.01)[0]  # same gain, stricter level
    keys = [f"T/{i}" for i in range(6)]
    one = decide(_report(dict.fromkeys(keys, False)), _report(dict.fromkeys(keys, True)), alpha=0.2)
    assert not one[0] and one[1].p_greater == 0.5 and one[2].startswith("gain not significant")
    # ... and a tie never promotes, whatever alpha
    mixed = _report({k: i in (0, 1) for i, k in enumerate(six)})
    best_mixed = _report({k: i in (2, 3) for i, k in enumerate(six)})
    promoted, paired, reason = decide(best_mixed, mixed, alpha=1.0)
    assert not promoted and paired.net == 0 and reason.startswith("no net gain")


def test_promotion_refuses_different_instances() -> None:
    with pytest.raises(TrainingError, match="different instances"):
        decide(_report({"T/1": False}), _report({"T/2": True}), alpha=1.0)


def test_recipes_list_their_stages() -> None:
    base = {"out": Path("x")}
    assert EvolveOptions(**base).stages(1) == ["rollouts", "corrections", "sft", "eval", "promote"]
    hinted = EvolveOptions(**base, corrections=False)  # SimPhone without corrections: hints again
    assert hinted.stages(1) == ["rollouts", "hints", "sft", "eval", "promote"]
    full = EvolveOptions(**base, critic_model="critic", rl="dgrpo")
    assert full.stages(2) == ["rollouts", "critics", "corrections", "sft", "rl", "eval", "promote"]
    mobilerl = EvolveOptions(**base, recipe="mobilerl")
    assert mobilerl.rl == "dgrpo"  # the recipe's chain ends in DGRPO
    assert mobilerl.stages(1) == ["demos", "sft", "irr", "rl", "eval", "promote"]
    assert mobilerl.stages(2) == ["rl", "eval", "promote"]


def test_action_only_drops_the_thought_and_still_parses() -> None:
    from agent_runtime.roles.worker import parse_worker

    reply = '### Thought ###\nTarget: Alarms [4].\n### Action ###\n{"action": "click", "index": 4}\n' \
        "### Description ###\nOpen the alarms tab"  # fmt: skip
    stripped = action_only(reply)
    assert stripped is not None and "Target" not in stripped
    parsed = parse_worker(stripped)
    assert (
        parsed.raw_action == {"action": "click", "index": 4} and parsed.description == "Open the alarms tab"
    )
    assert action_only("### Thought ###\nno action here") is None


def _tiny_runtime(tiny_lm_dir: Path, runs: Path) -> RuntimeConfig:
    tiny = ModelConfig(
        model=f"transformers:{tiny_lm_dir}",
        observation="ui_tree",
        prompts="compact",
        temperature=0.0,
        max_tokens=6,
        retries=0,
    )
    off = RoleConfig(enabled=False)
    return RuntimeConfig(
        models={"tiny": tiny},
        roles={
            "manager": RoleConfig(model="tiny"),
            "worker": RoleConfig(model="tiny"),
            "reflector": off,
            "notetaker": off,
            "rag": off,
        },
        graph=GraphConfig(max_steps=2, reask=0),
        runs={"dir": runs},
    )


def test_evolve_refuses_roles_that_do_not_share_the_model(tmp_path: Path, tiny_lm_dir: Path) -> None:
    runtime = _tiny_runtime(tiny_lm_dir, tmp_path / "runs")
    runtime.roles["worker"] = RoleConfig(model="other")
    with pytest.raises(ConfigError, match="does not run on the evolved model"):
        Evolution(EvolveOptions(out=tmp_path / "ev"), runtime)
    server = runtime.model_copy(update={"models": {"tiny": ModelConfig(base_url="http://x/v1", model="m")}})
    with pytest.raises(ConfigError, match="is served at http://x/v1"):
        Evolution(EvolveOptions(out=tmp_path / "ev", role="manager"), server)


@pytest.mark.train
def test_evolve_end_to_end_with_the_tiny_model_and_resume(tmp_path: Path, tiny_lm_dir: Path) -> None:
    """One iteration of the whole loop on SimPhone, then ``--resume`` to a second: the untrained
    tiny model fails its rollout, so the failed instance gets oracle demonstrations and
    hint-guided sampling (falling back to the oracle's replies), SFT continues from the model on
    them, the candidate is evaluated on the start's held-out instances and, with no paired gain,
    not promoted; its data is carried into iteration 2."""
    from typer.testing import CliRunner

    from agent_runtime.cli import app
    from agent_runtime.trainers.evolve import EvolveState

    runtime = _tiny_runtime(tiny_lm_dir, tmp_path / "runs")
    out = tmp_path / "evolve"
    opts = {
        "out": out,
        "tasks": "ClockReachTab",
        "train_episodes": 1,
        "eval_episodes": 2,
        "workers": 1,
        "corrections": False,  # the hints path on SimPhone (corrections: tests/test_corrections.py)
        "hint_samples": 1,
        "sft_max_steps": 2,
        "sft_batch_size": 2,
        "heldout_tasks": "ClockRepeatAlarm",
    }
    lines: list[str] = []
    state = Evolution(EvolveOptions(**opts), runtime, echo=lines.append).run()
    it1 = out / "iter_0001"
    stages = ["rollouts", "hints", "sft", "eval", "promote"]
    assert sorted(p.stem for p in (it1 / "stages").glob("*.json")) == sorted(stages)
    rollouts = EvalReport.model_validate_json((it1 / "rollouts.json").read_text())
    assert rollouts.split == "train" and rollouts.successes == 0
    hints = json.loads((it1 / "stages" / "hints.json").read_text())
    assert hints["failed_instances"] == 1 and hints["demos"] == 1
    assert hints["hints"]["calls"] > 0 and hints["hints"]["fell_back"] + hints["hints"]["verified"] > 0
    sft = json.loads((it1 / "stages" / "sft.json").read_text())
    assert sft["output"] == str(it1 / "sft") and sft["train_rows"] > 0
    assert (it1 / "sft" / "adapter_model.safetensors").exists()
    start = EvalReport.model_validate_json((out / "iter_0000" / "eval.json").read_text())
    candidate = EvalReport.model_validate_json((it1 / "eval.json").read_text())
    assert [(r.task, r.seed) for r in start.results] == [(r.task, r.seed) for r in candidate.results]
    assert len({r.seed for r in start.results}) == 2 and start.split == "selection"
    decision = state.decisions[0]
    assert not decision.promoted and decision.paired is not None and decision.paired.pairs == 2
    assert state.best is not None and state.best.iteration == 0  # the start stays the model to beat
    assert len(state.carried) == sft["runs"] > 0  # not promoted: the data is carried over
    manifest = json.loads((it1 / "manifest.json").read_text())
    assert manifest["candidate"] == str(it1 / "sft") and manifest["decision"]["promoted"] is False
    report = json.loads((out / "report.json").read_text())
    assert [r["iteration"] for r in report["rows"]] == [0, 1]
    # the final test: the start (kept, as nothing was promoted) scored once on instances disjoint
    # from the selection ones, and on a template no stage trained on, with the clustered test
    final = report["final"]
    assert final["start"]["instance_heldout"]["n"] == 2 and final["kept"]["iteration"] == 0
    assert final["template_heldout"]["templates"] == 1 and final["instance_heldout"]["p_greater"] == 1.0
    final_dir = out / "final" / "iter_0000"
    scored = EvalReport.model_validate_json((final_dir / "instance-heldout.json").read_text())
    assert not {(r.task, r.seed) for r in scored.results} & {(r.task, r.seed) for r in start.results}
    unseen = EvalReport.model_validate_json((final_dir / "template-heldout.json").read_text())
    assert list(unseen.per_task) == ["ClockRepeatAlarm"]
    assert report["gate"]["planned_iterations"] == 1 and report["rows"][1]["alpha"] == 0.05
    assert any("kept the previous model" in line for line in lines)

    # A fresh run refuses to mix with this one; --resume with more iterations continues.
    with pytest.raises(ConfigError, match="already holds an evolve run"):
        Evolution(EvolveOptions(**opts), runtime)
    marker = (it1 / "stages" / "sft.json").stat().st_mtime_ns
    config = tmp_path / "tiny.toml"
    config.write_text(
        f"""
[models.tiny]
model = "transformers:{tiny_lm_dir}"
observation = "ui_tree"
prompts = "compact"
temperature = 0.0
max_tokens = 6
retries = 0
[roles.manager]
model = "tiny"
[roles.worker]
model = "tiny"
[roles.reflector]
enabled = false
[roles.notetaker]
enabled = false
[roles.rag]
enabled = false
[graph]
max_steps = 2
reask = 0
""",
        encoding="utf-8",
    )
    args = [
        "evolve",
        "--config",
        str(config),
        "--out",
        str(out),
        "--tasks",
        "ClockReachTab",
        "--iterations",
        "2",
    ]
    args += ["--train-episodes", "1", "--eval-episodes", "2", "--workers", "1", "--hint-samples", "1"]
    args += ["--no-corrections"]
    args += ["--sft-max-steps", "2", "--sft-batch-size", "2", "--heldout-tasks", "ClockRepeatAlarm"]
    args += ["--resume", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["rows"][-1]["iteration"] == 2
    assert (it1 / "stages" / "sft.json").stat().st_mtime_ns == marker  # iteration 1 was not redone
    again = EvolveState.model_validate_json((out / "evolve.json").read_text())
    assert [d.iteration for d in again.decisions] == [1, 2]
    sft2 = json.loads((out / "iter_0002" / "stages" / "sft.json").read_text())
    assert sft2["carried_runs"] == sft["runs"]  # iteration 1's data trained on again


def test_reasoning_free_demonstrations_keep_actions_and_train(tmp_path: Path) -> None:
    """MobileRL's first stage: real oracle demonstrations, the Worker's thought removed, every
    other record untouched, and the SFT sample builder reads the result."""
    from agent_runtime.config import ModelConfig
    from agent_runtime.roles.worker import parse_worker
    from agent_runtime.traces import load_run
    from agent_runtime.trainers.data.samples import collect_samples
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
    from agent_runtime.trainers.evolve.reasoning import strip_reasoning

    demos = write_demos(
        DemoOptions(
            instances=[("ClockReachTab", 0), ("SettingsReachPage", 1)],
            prompts="compact",
            roles=("manager", "worker"),
            model=ModelConfig(model="m"),
        ),
        tmp_path / "raw",
    )
    assert [load_run(r).run.eval["task"] for r in demos.runs] == ["ClockReachTab", "SettingsReachPage"]
    runs = [Path(r) for r in demos.runs]
    rewritten = strip_reasoning(runs, tmp_path / "free", roles=("worker",))
    for src in runs:
        before, after = load_run(src), load_run(tmp_path / "free" / src.name)
        assert len(before.calls) == len(after.calls) and before.steps == after.steps
        for old, new in zip(before.calls, after.calls, strict=True):
            if old.role == "worker" and not old.extra.get("not_a_target"):
                assert "### Thought ###" in old.completion and "### Thought ###" not in new.completion
                assert parse_worker(new.completion).raw_action == parse_worker(old.completion).raw_action
            else:
                assert new.completion == old.completion
    assert rewritten == sum(
        1 for r in runs for c in load_run(r).calls if c.role == "worker" and not c.extra.get("not_a_target")
    )
    found = collect_samples(tmp_path / "free", ["worker"])
    assert found.samples and all("Thought" not in s.completion for s in found.samples)


def test_task_list_lines_are_checked(tmp_path: Path) -> None:
    from agent_runtime.trainers.evolve.tasklist import load_task_list

    path = tmp_path / "tasks.jsonl"
    path.write_text('{"goal": "a", "split": "train"}\n{"goal": "b", "split": "dev"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tasks.jsonl:2: not a task"):
        load_task_list(path)
    path.write_text('{"goal": "a", "split": "train"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="has no test task"):
        load_task_list(path)
    with pytest.raises(ValueError, match="needs --critic-model"):
        EvolveOptions(out=tmp_path, task_list=path)


@pytest.mark.train
def test_evolve_on_a_task_list_judged_by_the_trajectory_critic(tmp_path: Path, tiny_lm_dir: Path) -> None:
    """Any device with a task list: episodes run on the device (SimPhone here, addressed as a plain
    device with free-text goals) and the critic over HTTP decides success. This scripted critic
    says Correct only when the goal carries hints: every rollout fails, the failed train task
    with hints is replayed with them and judged correct, and its prompts lose the hints before
    hint-guided sampling reads them."""
    from tests.doubles import ScriptedOpenAIServer
    from tests.test_critic import classify, verdict_reply

    def verdict(call: object) -> str:
        return verdict_reply("Correct" if "Hints:" in call.prompt else "Incorrect")  # type: ignore[attr-defined]

    script = {"critic_caption": "### Caption ###\nA phone screen.", "critic_text": verdict,
              "critic_multimodal": verdict}  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        {
            "id": "alarms",
            "goal": "Open the Clock app.",
            "split": "train",
            "hints": ["Tap Clock on the home screen"],
        },
        {"id": "plain", "goal": "Open the Notes app.", "split": "train"},
        {"id": "held", "goal": "Open the Settings app.", "split": "test"},
    ]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with ScriptedOpenAIServer(script, classify=classify) as server:
        runtime = _tiny_runtime(tiny_lm_dir, tmp_path / "runs")
        runtime.models["critic"] = ModelConfig(base_url=server.base_url, model="scripted-http", retries=0)
        opts = EvolveOptions(
            out=tmp_path / "ev", task_list=tasks, device="simphone", critic_model="critic", workers=1,
            hint_samples=1, sft_max_steps=1,
        )  # fmt: skip
        state = Evolution(opts, runtime).run()
    it1 = tmp_path / "ev" / "iter_0001"
    rollouts = EvalReport.model_validate_json((it1 / "rollouts.json").read_text())
    assert sorted(r.task for r in rollouts.results) == ["alarms", "plain"] and rollouts.successes == 0
    assert rollouts.suite == "task-list" and all(r.check == "trajectory critic" for r in rollouts.results)
    held = EvalReport.model_validate_json((tmp_path / "ev" / "iter_0000" / "eval.json").read_text())
    assert [r.task for r in held.results] == ["held"]
    hints = json.loads((it1 / "stages" / "hints.json").read_text())
    assert hints["failed_instances"] == 2 and hints["demos"] == 1
    assert hints["skipped"] == {"plain": "no hints in the task list"}
    from agent_runtime.traces import iter_runs, load_run

    (replayed,) = list(iter_runs(it1 / "hinted-runs"))
    assert (
        load_run(replayed).run.eval["task_success"] is True and load_run(replayed).run.eval["hinted"] is True
    )
    assert "Hints:" in json.dumps([c.messages for c in load_run(replayed).calls])
    (demo,) = list(iter_runs(it1 / "demos"))
    assert "Hints:" not in json.dumps([c.messages for c in load_run(demo).calls])
    # the tiny model wrote nothing parseable, so there is nothing to train on and nothing to promote
    assert state.decisions[0].promoted is False and state.best is not None and state.best.iteration == 0


def test_evolve_cli_errors_are_one_paragraph(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_runtime.cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["evolve", "--out", str(tmp_path / "o"), "--recipe", "bogus"])
    assert (
        bad.exit_code != 0 and "invalid evolve option recipe" in bad.output and "Traceback" not in bad.output
    )
    listed = runner.invoke(app, ["evolve", "--out", str(tmp_path / "o"), "--task-list", str(tmp_path / "t")])
    assert listed.exit_code != 0 and "--task-list needs --critic-model" in listed.output
