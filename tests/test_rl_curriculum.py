"""Failure Curriculum Filtering: cooldown, removal (paper vs reference), sampling, persistence."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pytest

from agent_runtime.errors import TrainingError
from agent_runtime.trainers.online.curriculum import FailureCurriculum
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.dgrpo_trainer import DGRPOMethod

FAIL = [0.0, 0.0, 0.0]
WIN = [0.0, 1.0, 0.0]


def test_paper_rule_cooldown_after_two_then_removed_at_three() -> None:
    """E1 fail → f=1, weight 1; E2 fail → f=2, cooldown, weight e^−2 = 0.1353; E3 fail → f=3 ≥ 3: removed."""
    fcf = FailureCurriculum()
    fcf.end_epoch({"t": FAIL})
    assert (fcf.history("t").failures, fcf.weight("t")) == (1, 1.0)
    fcf.end_epoch({"t": FAIL})
    assert fcf.history("t").cooldown_left == 3
    assert fcf.weight("t") == pytest.approx(math.exp(-2))
    fcf.end_epoch({"t": FAIL})
    assert fcf.history("t").removed and fcf.weight("t") == 0.0
    assert fcf.active(["t", "u"]) == ["u"]
    fcf.end_epoch({"t": WIN})  # a removed task stays removed
    assert fcf.history("t").removed


def test_reference_rule_removes_only_after_more_than_three() -> None:
    """Reference (f > 3): E3 fail → f=3, still cooling down with weight e^−3 = 0.0498; E4 → f=4: removed."""
    fcf = FailureCurriculum(removal="reference")
    for _ in range(3):
        fcf.end_epoch({"t": FAIL})
    h = fcf.history("t")
    assert not h.removed and h.failures == 3 and h.cooldown_left == 2
    assert fcf.weight("t") == pytest.approx(math.exp(-3))
    fcf.end_epoch({"t": FAIL})
    assert fcf.history("t").removed


def test_cooldown_lasts_three_epochs_then_weight_returns_to_one() -> None:
    """Cooldown starts at E2 (left 3) and runs through E3, E4, E5 while the task is not sampled
    (left 2, 1, 0); f stays 2, so the next failure (E6) removes it under the paper rule."""
    fcf = FailureCurriculum()
    fcf.end_epoch({"t": FAIL})
    fcf.end_epoch({"t": FAIL})
    lefts = []
    for _ in range(3):
        fcf.end_epoch({"other": WIN})
        lefts.append(fcf.history("t").cooldown_left)
    assert lefts == [2, 1, 0]
    assert fcf.weight("t") == 1.0 and fcf.history("t").failures == 2
    fcf.end_epoch({"t": FAIL})
    assert fcf.history("t").removed


def test_any_reward_resets_and_negative_rewards_count_as_failure() -> None:
    """TRPO-style rewards −0.5 (malformed failure) are failures too; one success resets f and the cooldown."""
    fcf = FailureCurriculum()
    fcf.end_epoch({"t": [-0.5, 0.0]})
    fcf.end_epoch({"t": [-0.5, -0.5]})
    assert fcf.history("t").cooldown_left == 3
    fcf.end_epoch({"t": WIN})
    h = fcf.history("t")
    assert (h.failures, h.cooldown_left, fcf.weight("t")) == (0, 0, 1.0)
    fcf.end_epoch({"t": []})  # no rollouts: says nothing
    assert fcf.history("t").failures == 0
    assert fcf.state.epoch == 4


def test_sampling_follows_weights_and_skips_removed_tasks() -> None:
    """Task b cools down at f = 2: P(pick b | k = 1) = e^−2/(1 + e^−2) = 0.1192; c is removed."""
    fcf = FailureCurriculum()
    for _ in range(2):
        fcf.end_epoch({"b": FAIL, "c": FAIL})
    fcf.end_epoch({"c": FAIL})
    assert fcf.history("c").removed
    rng = random.Random(7)
    picks = [fcf.sample(["a", "b", "c"], 1, rng)[0] for _ in range(4000)]
    assert "c" not in picks
    assert picks.count("b") / len(picks) == pytest.approx(math.exp(-2) / (1 + math.exp(-2)), abs=0.02)
    assert fcf.sample(["a", "c", "a"], 5, rng) == ["a"]  # distinct, at most the active ones
    fcf.end_epoch({"a": FAIL})
    fcf.end_epoch({"a": FAIL, "b": FAIL})
    with pytest.raises(TrainingError, match="removed"):
        fcf.sample(["b", "c"], 1, rng)


def test_cooldown_acts_when_every_task_is_played(tmp_path: Path) -> None:
    """The default configuration plays every active task (k = None). A task of weight 1 is then
    played with probability 1, so b, cooling at f = 2, is played with probability e^−2 = 0.1353:
    over 1000 seeded iterations (the loop's rng, ``random.Random(f"{seed}/{it}")``) about 135
    times, within 3σ = 3·√(0.1353·0.8647/1000) = 0.032 — not 1000 times. a is always played."""
    method = DGRPOMethod(DGRPOConfig(base="m", output_dir=tmp_path))
    for _ in range(2):
        method.curriculum.end_epoch({"b": FAIL})
    assert method.curriculum.weight("b") == pytest.approx(math.exp(-2))
    picks = [method.select_tasks(["a", "b"], None, random.Random(f"0/{it}")) for it in range(1, 1001)]
    assert all(p[0] == "a" for p in picks)
    assert sum("b" in p for p in picks) / 1000 == pytest.approx(math.exp(-2), abs=0.032)
    assert method.build_batch({}, 1)[1]["cooling_tasks"] == 1  # metrics.jsonl: b cooled when drawn
    # k at least the pool is the same regime; a smaller k draws by weight (the test above)
    rng = random.Random(3)
    plays = sum("b" in method.curriculum.sample(["a", "b"], 9, rng) for _ in range(1000))
    assert plays / 1000 == pytest.approx(math.exp(-2), abs=0.032)


def test_all_tasks_cooling_still_plays_one() -> None:
    """a cools at f = 2 (w = e^−2 = 0.1353), b at f = 3 under reference removal (w = e^−3 = 0.0498).
    Both coins fail with probability 0.8647·0.9502 = 0.8216; then one task is drawn ∝ weight,
    b with e^−3/(e^−2 + e^−3) = 0.2689, so no iteration is empty. P(only b) = P(a tails, b heads)
    + 0.8216·0.2689 = 0.8647·0.0498 + 0.2209 = 0.2640; P(both) = 0.1353·0.0498 = 0.0067."""
    fcf = FailureCurriculum(removal="reference")
    fcf.end_epoch({"b": FAIL})
    for _ in range(2):
        fcf.end_epoch({"a": FAIL, "b": FAIL})
    assert (fcf.history("a").failures, fcf.history("b").failures) == (2, 3)
    rng = random.Random(11)
    picks = [fcf.sample(["a", "b"], None, rng) for _ in range(4000)]
    assert all(picks)
    assert picks.count(["b"]) / 4000 == pytest.approx(0.2640, abs=0.025)
    assert picks.count(["a", "b"]) / 4000 == pytest.approx(0.0067, abs=0.005)


def test_history_persists_across_runs(tmp_path: Path) -> None:
    path = tmp_path / "fcf" / "history.json"
    fresh = FailureCurriculum.load(path)
    assert fresh.state.epoch == 0
    fresh.end_epoch({"t": FAIL, "u": WIN})
    fresh.end_epoch({"t": FAIL})
    fresh.save(path)
    assert json.loads(path.read_text())["tasks"]["t"]["failures"] == 2
    assert [p.name for p in path.parent.iterdir()] == ["history.json"]  # no temporary file left
    resumed = FailureCurriculum.load(path, removal="reference")
    assert resumed.state == fresh.state and resumed.removal == "reference"
    resumed.end_epoch({"t": FAIL})
    assert not resumed.history("t").removed  # f = 3 is not > 3


def test_failed_save_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "history.json"
    fcf = FailureCurriculum()
    fcf.end_epoch({"t": FAIL})
    fcf.save(path)
    before = path.read_text()
    fcf.end_epoch({"t": FAIL})

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        fcf.save(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["history.json"]


def test_bad_history_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_text("{not json")
    with pytest.raises(TrainingError, match="FCF failure history") as info:
        FailureCurriculum.load(path)
    assert info.value.hint and "delete" in info.value.hint
    path.write_text(json.dumps({"version": 99, "epoch": 0, "tasks": {}}))
    with pytest.raises(TrainingError, match="version 99"):
        FailureCurriculum.load(path)
    with pytest.raises(ValueError):
        FailureCurriculum(removal="sometimes")  # type: ignore[arg-type]


def _removed_history(path: Path, task: str) -> None:
    fcf = FailureCurriculum()
    for _ in range(3):
        fcf.end_epoch({task: FAIL})
    fcf.save(path)


@pytest.mark.train
def test_overwrite_clears_the_default_history_but_keeps_one_outside_out(
    tiny_vlm_dir: Path, tmp_path: Path
) -> None:
    """A fresh ``--overwrite`` run deletes OUT/fcf_history.json with the old iterations, so the
    earlier run's removals are gone; an ``fcf_history`` outside OUT is the user's history
    across runs and is read as it is. Only the trainer is built (no model load, no rollout)."""
    from agent_runtime.trainers.online.loop import OnlineTrainer, RLOptions, task_pool
    from tests.rl_helpers import TASKS

    opts = RLOptions(tasks=TASKS, split="all")
    task = next(iter(task_pool(opts, seed=DGRPOConfig(base="m", output_dir=tmp_path).seed)))
    out = tmp_path / "out"
    (out / "iter_0001").mkdir(parents=True)
    _removed_history(out / "fcf_history.json", task)
    cfg = DGRPOConfig(base=str(tiny_vlm_dir), output_dir=out)
    assert DGRPOMethod(cfg).run_files() == ("fcf_history.json",)
    trainer = OnlineTrainer("dgrpo", cfg, opts, overwrite=True)
    assert not (out / "fcf_history.json").exists() and not (out / "iter_0001").exists()
    assert trainer.method.curriculum.state.epoch == 0
    assert len(trainer._active_tasks()) == len(trainer.pool)

    kept = tmp_path / "shared" / "fcf.json"
    _removed_history(kept, task)
    (out / "iter_0001").mkdir()
    cfg = DGRPOConfig(base=str(tiny_vlm_dir), output_dir=out, fcf_history=kept)
    assert DGRPOMethod(cfg).run_files() == ()
    trainer = OnlineTrainer("dgrpo", cfg, opts, overwrite=True)
    assert kept.exists() and trainer.method.curriculum.state.epoch == 3
    assert task not in trainer._active_tasks()
