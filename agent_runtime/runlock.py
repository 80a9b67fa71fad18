"""One writer per run: the lock a run directory is played under.

Two processes playing one run (two ``run --resume`` at once, or a resume of a run still in
flight) would each replay its remaining steps: steps.jsonl would hold every step twice and a
phone would see every action twice. So a run is played only while its process holds an
exclusive ``flock`` on ``RUN_DIR/run.lock``, from before its trace is read to after its last
write. The operating system releases the lock when the process ends, however it ends (a
``kill -9`` included), so a killed run can be resumed at once and there is no stale lock to
clean up. A second player is refused with :class:`~agent_runtime.errors.RunLockedError`, which
names the holder — the pid, host and time it wrote into the lock file once it held the lock.

The lock file stays in the run directory (unlinking it would let a third process lock a new
file while the second still holds the old one). ``flock`` locks belong to an open file, so two
runtimes in one process exclude each other too.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from agent_runtime.errors import RunLockedError
from agent_runtime.traces import storage_error

LOCK_NAME = "run.lock"


class RunLock:
    """The exclusive lock on one run directory; :meth:`acquire` it, :meth:`release` it."""

    def __init__(self, run_dir: Path, fd: int) -> None:
        self.run_dir, self._fd = run_dir, fd

    @classmethod
    def acquire(cls, run_dir: Path | str, *, create: bool = False) -> RunLock:
        """Lock ``run_dir`` (``create``: make it first, for a new run) or raise
        :class:`RunLockedError` naming the process that holds it; an unwritable directory is a
        :class:`~agent_runtime.errors.TraceWriteError`."""
        run_dir = Path(run_dir)
        path = run_dir / LOCK_NAME
        try:
            if create:
                run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise storage_error(exc, run_dir if create else path, "create" if create else "write") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise _locked(run_dir, holder) from None
        except BaseException:
            os.close(fd)
            raise
        try:  # who holds it, for the next one refused (best effort: the lock is what counts)
            os.ftruncate(fd, 0)
            info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:
            pass
        return cls(run_dir, fd)

    def release(self) -> None:
        """Unlock (idempotent). The holder's line is left: a reader tells a held lock by trying it."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> dict[str, object]:
    """What the holder wrote in the lock file (empty when it had not yet, or it is unreadable)."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _locked(run_dir: Path, holder: dict[str, object]) -> RunLockedError:
    pid, host, since = holder.get("pid"), holder.get("host"), holder.get("since")
    pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
    host = host if isinstance(host, str) else None
    since = float(since) if isinstance(since, int | float) and not isinstance(since, bool) else None
    who = f"process {pid} on {host}" if pid is not None else "another process"
    when = f" since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}" if since else ""
    return RunLockedError(
        f"run {run_dir.name} is being played by {who}{when}; a run is played by one process at a time",
        hint="wait for that run to end (or stop it), then resume it again",
        pid=pid,
        host=host,
        since=since,
    )
