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
    before = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1}
    after = {"a": 1, "b": 1, "c": 1, "d": 1, "e": 0, "extra": 1}
    # 3 up, 1 down: p = 2 * P(X <= 1 | n = 4, 1/2) = 2 * 5/16
    assert rl_signal.paired(before, after) == {
        "pairs": 5,
        "fail_to_success": 3,
        "success_to_fail": 1,
        "mcnemar_p": 0.625,
    }


def test_a_failed_phase_is_recorded_and_pairs_follow_the_start() -> None:
    report: dict[str, Any] = {"methods": {}}
    trained = {"after": {"outcomes": {"t/1": 1, "t/2": 0}}}
    rl_signal.record(report, "dgrpo", lambda: trained)
    assert "paired" not in report["methods"]["dgrpo"]  # no start measured yet

    def broken() -> dict[str, Any]:
        raise RuntimeError("server gone")

    assert rl_signal.record(report, "trpo", broken) == {"error": "RuntimeError: server gone"}
    rl_signal.record(report, "before", lambda: {"outcomes": {"t/1": 0, "t/2": 0}})
    assert report["methods"]["dgrpo"]["paired"]["fail_to_success"] == 1
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
