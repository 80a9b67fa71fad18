"""The learning table's GPU path (benchmarks/gpu/table.py): the held-out templates decided in
advance, the rows and their paired tests, and the deadline that keeps partial rows."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

from agent_runtime.evaluation.report import EpisodeResult
from agent_runtime.simphone.tasks import make_task, registry, select
from agent_runtime.simphone.tasks.batches import ORIGINAL, TEMPLATE_BATCHES
from agent_runtime.simphone.tasks.registry import (
    TEMPLATE_HELDOUT,
    held_out_part,
    held_out_templates,
    split_of,
)

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_table", ROOT / "benchmarks" / "gpu" / "table.py")
assert spec is not None and spec.loader is not None
table = importlib.util.module_from_spec(spec)
sys.modules["gpu_table"] = table
spec.loader.exec_module(table)


def test_the_plan_holds_out_the_registry_rule_per_batch_in_every_app(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table's plan holds out the registry's templates (the rule per batch, one copy of it):
    one or two of each of the first nine apps, one to three of each later app (Email has 13
    templates in its batch's name order, so every 5th takes three)."""
    monkeypatch.setattr(sys, "argv", ["table.py", "plan"])
    table.main()
    held = json.loads(capsys.readouterr().out)["held_out"]
    assert (
        held == sorted(TEMPLATE_HELDOUT) == sorted(n for b in TEMPLATE_BATCHES for n in held_out_templates(b))
    )
    assert not hasattr(table, "held_out_templates")  # no second copy of the rule
    apps = {name: registry()[name].app_names[0] for name in select(None)}
    per_app = {app: sum(1 for n in held if apps[n] == app) for app in set(apps.values())}
    assert len(per_app) == 17 and all(1 <= k <= 3 for k in per_app.values()), per_app
    first_nine = {apps[n] for n in ORIGINAL}
    assert len(first_nine) == 9 and all(per_app[app] <= 2 for app in first_nine), per_app


def test_the_final_plan_takes_distinct_final_instances_and_names_the_short_templates() -> None:
    plan, short = table.final_plan(["ClockToggleAlarm", "BrowserSearch", "NotesPin"], 2)
    assert short == {"BrowserSearch": 0, "NotesPin": 1}
    assert [name for name, _ in plan] == ["ClockToggleAlarm", "ClockToggleAlarm", "NotesPin"]
    tasks = [make_task(name, seed) for name, seed in plan]
    assert all(held_out_part(t) == "final" and split_of(t) == "test" for t in tasks)
    assert tasks[0].params_key() != tasks[1].params_key()


def test_the_deadline_stops_a_stage_and_keeps_its_finished_episodes(tmp_path: Path) -> None:
    proc = table.start([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "x.log", threads=1)
    started = time.monotonic()
    assert table.wait_all([proc], time.monotonic() + 1) is False
    assert proc.poll() is not None and time.monotonic() - started < 10

    def result(task: str, seed: int, success: bool) -> str:
        return EpisodeResult(
            task=task,
            app="Clock",
            seed=seed,
            split="test",
            goal="g",
            success=success,
            score=float(success),
            steps=2,
            max_steps=15,
            status="success" if success else "failure",
        ).model_dump_json()

    where = tmp_path / "eval"
    where.mkdir()
    (where / "shard_0.jsonl").write_text(result("A", 1, True) + "\n" + '"done"\n', encoding="utf-8")
    (where / "shard_1.jsonl").write_text(result("B", 1, False) + "\n", encoding="utf-8")  # stopped
    results, complete = table.collect(where)
    assert len(results) == 2 and not complete
    rows = [table.row("x", results, complete, held_out={"B"})]
    assert rows[0]["instance_held_out"]["n"] == 1 and rows[0]["template_held_out"]["n"] == 1
    assert "partial" in table.markdown({"rows": rows})


def test_each_row_is_tested_against_the_row_before_it() -> None:
    def result(task: str, seed: int, success: bool) -> EpisodeResult:
        return EpisodeResult(
            task=task,
            app="Clock",
            seed=seed,
            split="test",
            goal="g",
            success=success,
            score=float(success),
            steps=2,
            max_steps=15,
            status="success" if success else "failure",
        )

    before = [result("A", s, False) for s in range(3)] + [result("B", 0, False), result("C", 0, True)]
    after = [result("A", s, True) for s in range(3)] + [result("B", 0, True), result("C", 0, True)]
    rows = [table.row(label, rs, True, held_out={"C"}) for label, rs in (("one", before), ("two", after))]
    outcomes = [{f"{r.task}/{r.seed}": r.success for r in rs} for rs in (before, after)]
    table.compare(rows, outcomes)
    assert "vs_previous" not in rows[0]
    vs = rows[1]["vs_previous"]
    # 4 instances gained: McNemar sees 4 pairs (p = 2/16), the clustered test 2 templates (p = 2/4).
    assert vs["previous"] == "one" and vs["mcnemar"]["gains"] == 4 and vs["mcnemar"]["p_two_sided"] == 0.125
    assert (vs["clustered"]["better"], vs["clustered"]["p_two_sided"]) == (2, 0.5)
    assert "+4/−0, p = 0.125 · 2/0, p = 0.5" in table.markdown({"rows": rows})


@pytest.mark.parametrize("count", [1, 3, 100])
def test_shards_cover_every_template_once(count: int) -> None:
    names = select(None)
    parts = table.shards(names, count)
    assert sorted(n for p in parts for n in p) == sorted(names) and all(parts)
