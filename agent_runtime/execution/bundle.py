"""Traces that travel: a worker's run directories packed as bytes, unpacked whole at home.

A Ray worker writes an episode's run directories into a scratch directory on its own node
(nodes need not share a disk), packs them (:func:`pack`) and returns the bytes with the
result. The driver unpacks them into the job's home (:func:`unpack`): into a hidden staging
directory first, then each run directory is renamed into place, replacing one of the same name
— so the runs directory never shows half a trace, and an episode retried after its worker died
is recorded once (the dead attempt's partial trace never left its node).
"""

from __future__ import annotations

import io
import shutil
import tarfile
import uuid
from pathlib import Path

from agent_runtime.errors import TraceWriteError


def pack(root: Path) -> bytes:
    """Every file under ``root`` as an uncompressed tar (screenshots are compressed already);
    empty bytes when nothing was written (a policy without traces, such as the oracle)."""
    entries = sorted(root.iterdir()) if root.is_dir() else []
    if not entries:
        return b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for entry in entries:
            tar.add(entry, arcname=entry.name)
    return buffer.getvalue()


def unpack(data: bytes, home: Path) -> list[Path]:
    """Unpack :func:`pack`'s bytes into ``home``; returns the run directories now there.

    Raises :class:`~agent_runtime.errors.TraceWriteError` when ``home`` cannot be written.
    """
    staging = home / f".incoming-{uuid.uuid4().hex[:12]}"
    try:
        staging.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(staging, filter="data")  # no absolute paths, links out or devices
        placed = []
        for entry in sorted(staging.iterdir()):
            target = home / entry.name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            entry.rename(target)
            placed.append(target)
        return placed
    except OSError as exc:
        raise TraceWriteError(
            f"cannot write the traces a worker returned into {home}: {exc}",
            hint="free space or fix the permissions of the runs directory",
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
