"""A child process for tests/test_resume_kill.py: ``agent-runtime`` with a SIGKILL hook.

``RESUME_KILL_HOOK`` picks the moment the process kills itself (nothing is cleaned up, exactly
like ``kill -9``):

* ``execute:N`` — inside the N-th device action (1-based), right after SimPhone ran it, before
  the graph could checkpoint it;
* ``step:N`` — while writing step N to steps.jsonl: half of its line is written and flushed.

Run as ``python -c "from tests.kill_hooks import main; main()" run ...``.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(hook: str) -> None:
    kind, _, n = hook.partition(":")
    target = int(n)
    if kind == "execute":
        from agent_runtime.simphone.phone import SimPhone

        original = SimPhone.execute
        count = {"n": 0}

        def execute(self: SimPhone, action: Any) -> Any:
            result = original(self, action)
            count["n"] += 1
            if count["n"] == target:
                _die()
            return result

        SimPhone.execute = execute  # type: ignore[method-assign]
    elif kind == "step":
        from agent_runtime.traces import StepRecord, TraceWriter

        append = TraceWriter.append_step

        def append_step(self: TraceWriter, record: StepRecord) -> None:
            if record.step == target:
                line = (self._dump(record) + "\n").encode()
                with open(self.dir / "steps.jsonl", "ab") as torn:  # half a record, as if killed mid-write
                    torn.write(line[: len(line) // 2])
                _die()
            append(self, record)

        TraceWriter.append_step = append_step  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown hook {hook!r}")


def main() -> None:
    hook = os.environ.get("RESUME_KILL_HOOK")
    if hook:
        install(hook)
    from agent_runtime.cli import main as cli

    sys.argv = ["agent-runtime", *sys.argv[1:]]
    cli()
