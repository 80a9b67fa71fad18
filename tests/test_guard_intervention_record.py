"""A person's decision is on record once (``RunContext.write_intervention``): a re-ask after a
failed fsync retries the fsync and does not write the line a second time; a node re-run after a
resume writes nothing."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from agent_runtime.config import RuntimeConfig
from agent_runtime.errors import TraceWriteError
from agent_runtime.graphs.context import RunContext
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import InterventionRecord, TraceWriter, storage_error


class FsyncFailsOnce(TraceWriter):
    """Test double: a real trace writer whose first fsync fails as a dying disk's does (EIO)."""

    syncs = 0

    def sync(self) -> None:
        self.syncs += 1
        if self.syncs == 1:
            raise storage_error(OSError(errno.EIO, "Input/output error"), self.dir / "interventions.jsonl")
        super().sync()


def record(request_id: str, decision: str = "approve") -> InterventionRecord:
    return InterventionRecord(
        step=0, kind="confirm", request_id=request_id, decision=decision, asked_at=1.0, answered_at=2.0
    )


def lines(run_dir: Path) -> list[str]:
    return (run_dir / "interventions.jsonl").read_text().splitlines()


def test_a_reask_after_a_failed_fsync_writes_the_line_once(tmp_path: Path) -> None:
    phone = SimPhone(seed=0)
    writer = FsyncFailsOnce(tmp_path)
    ctx = RunContext(run_id="r", device=phone, writer=writer, config=RuntimeConfig(), callers={})
    try:
        with pytest.raises(TraceWriteError):
            ctx.write_intervention(record("r/1"))
        assert len(lines(tmp_path)) == 1
        ctx.write_intervention(record("r/1"))  # the person asked again: the fsync is retried
        assert writer.syncs == 2 and len(lines(tmp_path)) == 1
        ctx.write_intervention(record("r/1"))  # a node re-run: nothing more, not even an fsync
        assert writer.syncs == 2 and len(lines(tmp_path)) == 1
        ctx.write_intervention(record("r/2", "reject"))
        assert [line.count('"r/2"') for line in lines(tmp_path)] == [0, 1]
    finally:
        writer.close()
        ctx.close()
        phone.close()


def test_a_resumed_run_does_not_write_what_the_last_session_wrote(tmp_path: Path) -> None:
    phone = SimPhone(seed=0)
    writer = TraceWriter(tmp_path)
    ctx = RunContext(
        run_id="r",
        device=phone,
        writer=writer,
        config=RuntimeConfig(),
        callers={},
        interventions_written={"r/1"},
    )
    try:
        ctx.write_intervention(record("r/1"))
        assert lines(tmp_path) == []
    finally:
        writer.close()
        ctx.close()
        phone.close()
