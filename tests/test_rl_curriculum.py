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
    assert sorted(fcf.sample(["a", "b", "c", "a"], 5, rng)) == ["a", "b"]  # distinct, at most the active ones
    fcf.end_epoch({"a": FAIL})
    fcf.end_epoch({"a": FAIL, "b": FAIL})
    with pytest.raises(TrainingError, match="removed"):
        fcf.sample(["b", "c"], 1, rng)


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
