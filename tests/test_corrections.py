"""On-policy corrections (DAgger) on SimPhone: a scripted policy leaves the expert's path, and the
oracle labels the states it actually visited — planned from each state, confirmed on a replica —
as Manager and Worker targets the SFT filters keep; and evolve runs the stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_runtime.actions import parse_action
from agent_runtime.config import GraphConfig, ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.tasks import make_task
from agent_runtime.traces import annotate_run, iter_runs, load_run
from agent_runtime.trainers.data.samples import NOT_A_TARGET, collect_samples
from agent_runtime.trainers.demos.plans import expert_plan, replica
from agent_runtime.trainers.evolve.corrections import CORRECTION_KEY, correct_runs, step_actions
from tests.doubles import ScriptedChatModel, manager_reply, worker_reply

MODEL = ModelConfig(model="scripted", observation="ui_tree", prompts="compact")
#: The scripted Worker: opens Clock (the expert's first step), then taps the Timer tab and the
#: Clock tab (off the expert's path, which goes to "Add alarm" on the Alarm tab).
SCRIPT = [
    {"action": "open_app", "text": "Clock"},
    {"action": "click", "index": 14},
    {"action": "click", "index": 13},
]


def _play(tmp_path: Path, task_name: str = "ClockAddAlarm", seed: int = 1) -> Path:
    task = make_task(task_name, seed)
    model = ScriptedChatModel(
        script={
            "manager": manager_reply(["Open the Clock app", "Add the alarm"]),
            "worker": [worker_reply(a) for a in SCRIPT],
        }
    )
    off = RoleConfig(enabled=False)
    config = RuntimeConfig(
        models={"default": MODEL},
        roles={"reflector": off, "notetaker": off, "rag": off},
        graph=GraphConfig(max_steps=len(SCRIPT)),
        safety={"enabled": False},  # the scripted taps must run as written
    )
    phone = SimPhone(seed=task.seed)
    task.setup(phone)
    result = Runtime(config, models={"manager": model, "worker": model}, runs_dir=tmp_path / "runs").run(
        task.goal, device=phone, max_steps=len(SCRIPT)
    )
    score = task.is_successful(phone, result.answer)
    annotate_run(
        result.run_dir,
        eval={"task": task_name, "seed": seed, "split": "train", "task_success": score >= 1, "score": score},
    )
    return result.run_dir


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _play(tmp_path_factory.mktemp("scripted"))


def test_the_oracle_labels_the_states_an_off_path_policy_visits(scripted_run: Path, tmp_path: Path) -> None:
    task = make_task("ClockAddAlarm", 1)
    expert = expert_plan(task, "ui_tree", MODEL)
    stats = correct_runs([scripted_run], tmp_path / "out")
    assert (stats.runs, stats.labelled_runs, stats.unlabelled) == (1, 1, {})
    # 3 Worker states; the Manager's first plan and an update after each step.
    assert stats.labels == {"worker": 3, "manager": 4} and stats.off_path == 3

    (copy,) = list(iter_runs(tmp_path / "out"))
    run = load_run(copy)
    workers = {c.step: c for c in run.calls if c.role == "worker"}
    actions = {step: parse_action(call.parsed["action"]).to_json() for step, call in workers.items()}
    planned = [parse_action(s.raw).to_json() for s in expert.steps]
    marks = {step: call.extra[CORRECTION_KEY] for step, call in workers.items()}
    # On the expert's path the label is the expert's own next action ...
    assert (actions[0], actions[1]) == (planned[0], planned[1])
    assert marks[0]["plan"] == marks[1]["plan"] == "expert" and marks[1]["on_path"]
    # ... off it (the Timer tab) the oracle plans from the screen the policy reached: tap the
    # Alarm tab, which is not what the expert did at its own step 2.
    assert not marks[2]["on_path"] and marks[2]["plan"] == "rejoin"
    assert actions[2] != planned[2] and "Alarm" in workers[2].completion
    assert marks[2]["model_reply"] == worker_reply(SCRIPT[2])  # the policy's own reply, kept for the record
    # The label is right at that very state: from the visited state, it and then the expert's
    # remaining steps finish the task on a replica.
    from agent_runtime.alignment import screen_actions
    from agent_runtime.evaluation.episode import tree_observation

    phone = replica(task, [])
    try:
        for written in [*SCRIPT[:2], actions[2]]:  # the policy's two steps, then the label
            for action in screen_actions(parse_action(written), tree_observation(phone)):
                phone.execute(action)
        for action in step_actions(expert, 1):
            phone.execute(action)
        assert task.is_successful(phone) == 1.0
    finally:
        phone.close()

    managers = {c.step: c.parsed for c in run.calls if c.role == "manager"}
    assert managers[-1]["plan"] == expert.subgoals  # the first plan, from the start screen
    assert managers[0]["plan"] == expert.subgoals[1:]  # Clock open: on to "Add alarm"
    assert managers[1]["plan"][0] == 'Tap "Alarm"' and managers[1]["plan"][1:] == expert.subgoals[1:]
    assert all(c.model == "simphone-oracle" for c in run.calls if CORRECTION_KEY in c.extra)

    # The SFT rows: exactly the labelled calls, kept by the success filter, the policy's failure on record.
    assert run.run.eval["source"] == "oracle corrections" and run.run.eval["rollout_success"] is False
    samples = collect_samples(tmp_path / "out", ["manager", "worker"]).samples
    assert len(samples) == 7 and all(s.success for s in samples)
    assert sorted(s.completion for s in samples) == sorted(
        c.completion for c in run.calls if CORRECTION_KEY in c.extra
    )
    from agent_runtime.trainers.data.filters import apply_filters
    from agent_runtime.trainers.data.filters.pipeline import FilterSettings, default_pipeline

    worker_rows = [s for s in samples if s.role == "worker"]
    kept, _ = apply_filters(worker_rows, default_pipeline("worker", FilterSettings(skip=["reweight"]), {}))
    assert len(kept) == 3
    # Re-weighting counts the policy's failure, not the relabelled rows' success: a task the policy
    # failed is up-weighted.
    from agent_runtime.trainers.data.filters.reweight import success_rates

    assert all(s.policy_outcome == "failure" for s in samples)
    assert set(success_rates(samples).values()) == {0.0}


def test_successful_runs_are_not_relabelled_and_a_diverging_replay_stops_the_labels(
    scripted_run: Path, tmp_path: Path
) -> None:
    import shutil

    won = tmp_path / "won"
    shutil.copytree(scripted_run, won)
    annotate_run(won, eval={**(load_run(won).run.eval or {}), "task_success": True})
    assert correct_runs([won], tmp_path / "none").labelled_runs == 0

    # A recorded screen the replica does not reach: nothing from there on is labelled.
    torn = tmp_path / "torn"
    shutil.copytree(scripted_run, torn)
    screens = sorted((torn / "screens").iterdir())
    screens[2].write_bytes(screens[0].read_bytes())
    stats = correct_runs([torn], tmp_path / "out")
    run = load_run(next(iter_runs(tmp_path / "out")))
    labelled = {(c.role, c.step) for c in run.calls if CORRECTION_KEY in c.extra}
    assert labelled == {("manager", -1), ("worker", 0), ("manager", 0), ("worker", 1)}
    left = [c for c in run.calls if CORRECTION_KEY not in c.extra]
    assert left and all(c.extra[NOT_A_TARGET].startswith("no oracle correction") for c in left)
    assert sum(stats.unlabelled.values()) == len(left)


@pytest.mark.train
def test_evolve_runs_the_corrections_stage_on_simphone(tmp_path: Path, tiny_lm_dir: Path) -> None:
    """The SimPhone recipe by default: rollouts → corrections → sft; the untrained tiny model
    fails its rollout, the oracle labels the states it visited, and SFT trains on them."""
    from agent_runtime.trainers.evolve import Evolution, EvolveOptions
    from tests.test_evolve import _tiny_runtime

    runtime = _tiny_runtime(tiny_lm_dir, tmp_path / "runs")
    opts = EvolveOptions(
        out=tmp_path / "ev", tasks="ClockReachTab", train_episodes=1, eval_episodes=1, workers=1,
        sft_max_steps=1, sft_batch_size=2, replay_ratio=0,  # replay: tests/test_evolve.py
    )  # fmt: skip
    assert "corrections" in opts.stages(1) and "hints" not in opts.stages(1)
    Evolution(opts, runtime).run()
    it1 = tmp_path / "ev" / "iter_0001"
    summary = json.loads((it1 / "stages" / "corrections.json").read_text())
    assert summary["labelled_runs"] == 1 and summary["labels"]["worker"] >= 1
    (copy,) = list(iter_runs(it1 / "corrections"))
    assert load_run(copy).run.eval["source"] == "oracle corrections"
    sft = json.loads((it1 / "stages" / "sft.json").read_text())
    linked = [p.resolve() for p in (it1 / "data").iterdir()]
    assert copy.resolve() in linked and sft["train_rows"] > 0
