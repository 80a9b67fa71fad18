"""``benchmarks/evolve_cost.py``: the per-stage cost of one evolve iteration, from what it left in OUT."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_runtime.traces import CallRecord, Usage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import evolve_cost  # noqa: E402


def _marker(where: Path, stage: str, **summary: object) -> None:
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{stage}.json").write_text(json.dumps({"stage": stage, **summary}), encoding="utf-8")


def test_stage_seconds_and_the_iteration_total(tmp_path: Path) -> None:
    out = tmp_path / "evolve"
    _marker(out / "iter_0000" / "stages", "eval", seconds=300.0)
    for stage, seconds in (("rollouts", 310.5), ("corrections", 4.5), ("sft", 420.0), ("eval", 525.0)):
        _marker(out / "iter_0001" / "stages", stage, seconds=seconds)
    _marker(out / "iter_0001" / "stages", "promote", seconds=0.0)
    _marker(out / "final" / "iter_0000" / "stages", "instance-heldout", seconds=60.0)
    _marker(out / "final" / "iter_0000" / "stages", "template-heldout", seconds=30.0)
    report = evolve_cost.cost_report(out)
    assert report["stages"] == {
        "corrections": 4.5,
        "eval": 525.0,
        "promote": 0.0,
        "rollouts": 310.5,
        "sft": 420.0,
    }
    # 310.5 + 4.5 + 420 + 525 + 0 = 1260 s = 21 min: over the 20-minute target
    assert report["iteration_s"] == 1260.0 and report["iteration_min"] == 21.0
    assert report["within_target"] is False
    assert report["start_eval_s"] == 300.0 and report["final_s"] == 90.0
    assert report["labelling"]["corrections"]["seconds"] == 4.5


def test_call_stats_by_hand() -> None:
    def call(role: str, prompt: int, completion: int, ms: float) -> CallRecord:
        usage = Usage(prompt_tokens=prompt, completion_tokens=completion)
        return CallRecord(run_id="r", step=0, role=role, usage=usage, latency_ms=ms)

    stats = evolve_cost.call_stats(
        [call("worker", 500, 40, 2000), call("worker", 700, 60, 4000), call("manager", 400, 20, 3000)]
    )
    # prompt (500 + 700 + 400) / 3 = 533.3; completion (40 + 60 + 20) / 3 = 40; (2 + 4 + 3) / 3 = 3 s
    assert stats["calls"] == 3 and stats["prompt_tokens_mean"] == 533.3 and stats["prompt_tokens_max"] == 700
    assert stats["completion_tokens_mean"] == 40.0 and stats["call_s_mean"] == 3.0
    assert stats["by_role"]["worker"]["prompt_tokens_mean"] == 600.0
    assert stats["by_role"]["manager"] == {
        "calls": 1, "prompt_tokens_mean": 400.0, "prompt_tokens_max": 400, "completion_tokens_mean": 20.0,
        "completion_tokens_max": 20, "call_s_mean": 3.0,
    }  # fmt: skip
    assert evolve_cost.call_stats([])["calls"] == 0


def test_sft_throughput_counts_only_the_rows_it_trained_on(tmp_path: Path) -> None:
    it = tmp_path / "iter_0001"
    validation = {
        "rows": 16,
        "best_step": 20,
        "points": [{"step": 0, "loss": 0.2}, {"step": 20, "loss": 0.1}],
    }
    replay = {"rows": {"manager": 40, "worker": 40}, "pool": 900}
    _marker(it / "stages", "sft", seconds=400.0, train_rows=160, replay=replay, validation=validation)
    (it / "sft").mkdir()
    (it / "sft" / "manifest.json").write_text(json.dumps({"training": {"steps": 18, "runtime_s": 288.0}}))
    sft = evolve_cost.sft_stats(it)
    assert sft is not None
    # (160 - 16 held aside) / 288 s = 0.5 rows/s
    assert sft["rows_per_s"] == 0.5 and sft["replay_rows"] == 80 and sft["kept_step"] == 20
    assert sft["steps"] == 18 and sft["validation_rows"] == 16
    assert evolve_cost.sft_stats(tmp_path / "iter_0002") is None


@pytest.mark.train
@pytest.mark.slow
def test_the_benchmark_runs_one_small_iteration_and_prints_one_json_object(
    tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tiny.toml"
    config.write_text(
        f'[models.tiny]\nmodel = "transformers:{tiny_lm_dir}"\nobservation = "ui_tree"\nprompts = "compact"\n'
        "temperature = 0.0\nmax_tokens = 6\nretries = 0\n"
        '[roles.manager]\nmodel = "tiny"\n[roles.worker]\nmodel = "tiny"\n'
        + "".join(f"[roles.{r}]\nenabled = false\n" for r in ("reflector", "notetaker", "rag"))
        + "[graph]\nmax_steps = 2\nreask = 0\n",
        encoding="utf-8",
    )
    args = f"--config {config} --tasks ClockReachTab --train-episodes 1 --eval-episodes 2 --workers 1 --json"
    sets = [
        "--set",
        "heldout_tasks=ClockRepeatAlarm",
        "--set",
        "sft_max_steps=2",
        "--set",
        "sft_batch_size=2",
    ]
    assert evolve_cost.main([*args.split(), *sets]) == 0
    report = json.loads(capsys.readouterr().out)  # nothing but the object on stdout
    assert {"rollouts", "sft", "eval", "promote"} <= set(report["stages"])
    assert report["iteration_s"] == pytest.approx(sum(report["stages"].values()), abs=0.1)
    assert report["rollouts"]["episodes"] == 1 and report["eval"]["episodes"] == 2
    assert report["rollouts"]["prompt_tokens_mean"] > 0 and report["sft"]["steps"] == 2


def test_the_documented_size_has_five_templates_evolve_trains_on() -> None:
    """The learning table's templates (the documented size) must all be trainable: a
    template-held-out one is dropped by evolve, and the gate needs five to ever promote."""
    from agent_runtime.simphone.tasks import select
    from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT

    chosen = select(evolve_cost.DEFAULT_TASKS)
    assert len(chosen) == 5
    assert not set(chosen) & set(TEMPLATE_HELDOUT)
