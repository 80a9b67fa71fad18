"""The jobs every execution backend plays: what a job is, where it runs, and its traces' way home.

Both :class:`~.backend.LocalBackend` and :class:`~.ray_backend.RayBackend` play these; they live
apart from both so that neither backend module imports the other to reach them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from agent_runtime.errors import ClusterError

R = TypeVar("R")
#: How long a job waits for a worker that can hold its device (a phone whose node is lost,
#: or a resource no node offers) before it is recorded lost (seconds; ``[cluster]``).
SCHEDULE_TIMEOUT_S = 120.0
#: Device specs of which any number play at once: every job builds its own SimPhone.
SHAREABLE_DEVICES = ("simphone",)


@dataclass
class Workplace:
    """Where a job runs, handed to it by the backend.

    ``runs_dir``: where the job must write its run directories (None: where its own
    configuration says — the local backend). ``cache`` lives as long as the worker (a thread
    pool's process, or a Ray actor): models and processors loaded into it are loaded once per
    worker, never per episode. ``node`` names the machine (``local`` or a Ray node id).
    """

    runs_dir: Path | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    node: str = "local"


@dataclass(frozen=True)
class Job(Generic[R]):
    """One episode to play.

    ``key`` is unique within a batch and stable across retries (the episode's identity: a
    retried episode is recorded once, under it). ``fn`` plays it (picklable for processes and
    Ray: a module-level function, or a :func:`functools.partial` of one). ``device`` is the
    spec of the device it needs (``simphone``: any worker builds its own; ``adb:SERIAL``: the
    one worker that owns that phone). ``home`` is where its traces belong on this machine.
    """

    key: str
    fn: Callable[[Workplace], R]
    device: str = "simphone"
    home: Path | None = None
    #: The result recorded when the cluster cannot play the job (its device's node is lost, or it
    #: died more than ``max_retries`` times): the batch then goes on. None: that stops the batch.
    lost: Callable[[ClusterError], R] | None = None


def shareable(device: str) -> bool:
    """Whether jobs on ``device`` may run at once: SimPhones yes (one fresh phone per job), a
    real phone or a desktop no (one task at a time on one screen).

    >>> shareable("simphone:3"), shareable("adb:emulator-5554")
    (True, False)
    """
    return device.split(":", 1)[0] in SHAREABLE_DEVICES


def relocate(result: R, old: Path, new: Path) -> R:
    """``result`` with every ``run_dir`` field under ``old`` moved under ``new`` — in nested
    models too (a rollout's episode record) — for traces a worker wrote elsewhere.

    >>> from agent_runtime.evaluation.report import EpisodeResult
    >>> r = EpisodeResult(task="t", app="a", seed=0, split="test", goal="g", success=True, score=1.0,
    ...                   steps=1, max_steps=5, status="completed", run_dir="/scratch/k/run-1")
    >>> relocate(r, Path("/scratch/k"), Path("runs")).run_dir
    'runs/run-1'
    """
    if not isinstance(result, BaseModel):
        return result
    update: dict[str, Any] = {}
    for name in type(result).model_fields:
        value = getattr(result, name)
        if name == "run_dir" and isinstance(value, str | Path):
            path = Path(value)
            if path.is_relative_to(old):
                moved = new / path.relative_to(old)
                update[name] = moved if isinstance(value, Path) else str(moved)
        elif isinstance(value, BaseModel):
            inner = relocate(value, old, new)
            if inner is not value:
                update[name] = inner
    return result.model_copy(update=update) if update else result
