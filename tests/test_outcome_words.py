"""Every surface words a run's outcome as ``run`` does (issue 32): ``traces show`` printed
"claimed, not verified" where the run's own last line said "unverified".

For each kind of recorded run, ``traces show`` prints ``run``'s last line (the same
:func:`~agent_runtime.checks.summary_line`), and ``traces list --json``, MCP's
``get_run`` and the viewer's pages say the same outcome word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.checks import outcome, summary_line
from agent_runtime.cli import app
from agent_runtime.mcp_server import run_details
from agent_runtime.traces import RunRecord, Verification
from agent_runtime.viewer import write_index, write_run_page

runner = CliRunner()
CHECKED = {"checked": True, "by": "simphone:ClockAddAlarm/2", "detail": "alarm 6:45 on"}
#: run id -> (status, claimed success, check, reason), one per outcome word a finished run can have.
RUNS = {
    "r-unverified": ("completed", True, Verification(detail="the device is adb"), "the Worker terminated"),
    "r-verified": ("completed", True, Verification(success=True, **CHECKED), "the plan is done"),
    "r-refuted": ("completed", True, Verification(success=False, **CHECKED), "the plan is done"),
    "r-failed": ("failed", False, None, "the Worker gave up"),
    "r-interrupted": ("interrupted", False, None, "interrupted"),
}


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    for n, (run_id, (status, success, check, reason)) in enumerate(RUNS.items()):
        record = RunRecord(
            run_id=run_id, task="Set an alarm for 6:45", status=status, success=success, steps=2,
            created_at=1_700_000_000 + n, verification=check, reason=reason,
        )  # fmt: skip
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "run.json").write_text(record.model_dump_json(), encoding="utf-8")
    return tmp_path


def expected(run_id: str) -> tuple[str, str]:
    """(the outcome word, the last line) ``run`` printed for this run."""
    status, success, check, reason = RUNS[run_id]
    line = summary_line(status, success, 2, reason=reason, verification=check)
    return outcome(status, success, check), line


@pytest.mark.parametrize("run_id", list(RUNS))
def test_traces_show_prints_the_runs_own_last_line(runs_dir: Path, run_id: str) -> None:
    args = ["traces", "show", run_id, "--runs-dir", str(runs_dir)]
    shown = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    _, line = expected(run_id)
    assert f"outcome: {line}" in shown.stdout, shown.stdout
    assert "claimed" not in shown.stdout


def test_an_unverified_claim_never_reads_as_completed_or_claimed(runs_dir: Path) -> None:
    shown = runner.invoke(app, ["traces", "show", "r-unverified", "--runs-dir", str(runs_dir)])
    outcome_line = next(ln for ln in shown.stdout.splitlines() if ln.startswith("outcome:"))
    assert outcome_line.startswith("outcome: unverified after 2 steps"), outcome_line
    listed = runner.invoke(app, ["traces", "list", "--runs-dir", str(runs_dir)], env={"COLUMNS": "200"})
    row = next(ln for ln in listed.stdout.splitlines() if "r-unverified" in ln)
    assert "unverified" in row and "claimed" not in listed.stdout


def test_list_mcp_and_viewer_say_the_same_word_as_run(runs_dir: Path) -> None:
    listed = runner.invoke(app, ["traces", "list", "--runs-dir", str(runs_dir), "--json"])
    rows = {r["run_id"]: r for r in map(json.loads, listed.stdout.splitlines())}
    index, _ = write_index(runs_dir)
    index_html = index.read_text(encoding="utf-8")
    assert "claimed" not in index_html
    for run_id in RUNS:
        word, line = expected(run_id)
        assert rows[run_id]["outcome"] == word, run_id
        details = run_details(runs_dir, run_id)
        assert (details.outcome, details.summary) == (word, line)
        assert f">{word}</td>" in index_html, word
        page = write_run_page(runs_dir / run_id).read_text(encoding="utf-8")
        assert line.replace("'", "&#39;") in page and "claimed" not in page, run_id
