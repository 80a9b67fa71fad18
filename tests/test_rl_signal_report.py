"""The learning-signal benchmark's bookkeeping (``benchmarks/rl_signal.py``): the paired test,
per-phase error capture and reuse of an earlier start measurement. The runs themselves take
hours and are a benchmark, not a test."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.evaluation.paired import holm, paired_test
from agent_runtime.simphone.tasks import select
from agent_runtime.simphone.tasks.registry import task_instances

TASKS = "re:^(ClockToggleAlarm|SettingsToggle)$"


def load_benchmark() -> Any:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "rl_signal.py"
    spec = importlib.util.spec_from_file_location("rl_signal", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rl_signal = load_benchmark()


def test_paired_counts_discordant_pairs_and_mcnemar_exact_p() -> None:
    before = {"a": False, "b": False, "c": False, "d": True, "e": True}
    after = {"a": True, "b": True, "c": True, "d": True, "e": False, "extra": True}
    # 3 up, 1 down, n = 4: one-sided P(X >= 3) = 5/16; two-sided 2 * 5/16
    r = paired_test(before, after)
    assert (r.pairs, r.gains, r.losses) == (5, 3, 1)
    assert (r.before_successes, r.after_successes) == (2, 4)
    assert r.p_greater == 0.3125 and r.p_two_sided == 0.625
    assert r.missing == ["extra"]
    assert paired_test({"a": True}, {"a": True}).p_greater == 1.0  # no discordant pair: no evidence


def test_holm_adjusts_in_step_down_order() -> None:
    # sorted 0.01, 0.03, 0.04 -> x3, x2, x1 = 0.03, 0.06, 0.04 -> monotone 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def test_a_failed_phase_is_recorded_and_pairs_follow_the_start() -> None:
    report: dict[str, Any] = {"methods": {}}
    trained = {"after": {"outcomes": {"t/1": 1, "t/2": 0}}}
    rl_signal.record(report, "dgrpo", lambda: trained)
    assert "paired" not in report["methods"]["dgrpo"]  # no start measured yet

    def broken() -> dict[str, Any]:
        raise RuntimeError("server gone")

    assert rl_signal.record(report, "trpo", broken) == {"error": "RuntimeError: server gone"}
    rl_signal.record(report, "before", lambda: {"outcomes": {"t/1": 0, "t/2": 0}})
    assert report["methods"]["dgrpo"]["paired"]["gains"] == 1
    assert report["methods"]["dgrpo"]["paired"]["p_greater_holm"] == 0.5  # the failed method is not counted
    assert report["methods"]["trpo"] == {"error": "RuntimeError: server gone"}


def _args(before: Path, **changes: Any) -> argparse.Namespace:
    base = {
        "before": before,
        "base": "gguf:m",
        "role": "worker",
        "tasks": TASKS,
        "eval_episodes": 2,
        "seed": 0,
        "temperature": 1.0,
        "max_turns": 6,
        "max_new_tokens": 160,
    }
    return argparse.Namespace(**{**base, **changes})


def test_before_reuses_only_the_same_measurement(tmp_path: Path) -> None:
    instances = task_instances(select(TASKS), split="test", episodes=2, seed=0)
    start = {"successes": 1, "outcomes": {f"{t.name}/{t.seed}": i == 0 for i, t in enumerate(instances)}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**vars(_args(path)), "before": start}, default=str), encoding="utf-8")
    assert rl_signal.earlier_start(_args(path)) == start
    with pytest.raises(SystemExit, match="other temperature"):
        rl_signal.earlier_start(_args(path, temperature=0.7))
    older = tmp_path / "older.json"  # written before the settings were recorded: instances decide
    older.write_text(json.dumps({"before": start}), encoding="utf-8")
    with pytest.raises(SystemExit, match="other test instances"):
        rl_signal.earlier_start(_args(older, eval_episodes=3))
    with pytest.raises(SystemExit, match="cannot read"):
        rl_signal.earlier_start(_args(tmp_path / "missing.json"))
