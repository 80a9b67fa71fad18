"""The execution backend: where the episodes of a batch are played.

Every command that plays many episodes (``eval``, ``evolve``'s rollouts and evaluations,
``distill``'s online RL, ``run --tasks``) hands a list of :class:`Job` to a :class:`Backend`
and reads results back as they finish. :class:`LocalBackend` plays them in this machine's
threads or processes (what these commands always did); :class:`~.ray_backend.RayBackend` plays
them on Ray actors across a cluster. :func:`open_backend` picks one from ``--ray`` or
``[cluster] ray_address``.

A job is a picklable callable of a :class:`Workplace`, so one job body serves both backends:
locally ``runs_dir`` is None (the job writes its traces where its configuration says); on a
cluster it names a scratch directory on the worker's node, and the backend brings whatever was
written there home to the job's ``home`` and rewrites the result's ``run_dir`` fields to match
(:func:`~.jobs.relocate`).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol, TypeVar

from agent_runtime.errors import ConfigError
from agent_runtime.execution.jobs import SCHEDULE_TIMEOUT_S, Job, Workplace, shareable

R = TypeVar("R")
Executor = Literal["thread", "process"]
#: How long a stopped batch waits for the local episodes in flight to end (seconds).
STOP_GRACE_S = 1.0


class Backend(Protocol):
    """Plays jobs and yields each with its result as it finishes (completion order)."""

    workers: int

    def run(self, jobs: Sequence[Job[R]]) -> Iterator[tuple[Job[R], R]]: ...

    def close(self) -> None: ...


_PROCESS_CACHE: dict[str, Any] = {}


def _play(fn: Callable[[Workplace], R]) -> R:
    """A job in a local worker: its cache is the worker process's."""
    return fn(Workplace(cache=_PROCESS_CACHE))


def share_cores(threads: int) -> None:
    """Cap this worker process's math threads at its share of the machine's cores.

    Each process would otherwise start as many BLAS/OpenMP threads as there are cores: two
    workers on 2 cores then run 4 busy threads, and a small in-process model decodes many
    times slower (measured ~8x) than one worker alone. Set before torch is imported, the
    environment variables size its thread pools; an already imported torch is told directly.
    """
    import sys

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


class LocalBackend:
    """``workers`` jobs at once in this machine's threads or processes (one at a time: inline).

    Threads suit policies that wait (model servers, real phones); processes suit CPU-bound
    ones (the oracle) and need picklable jobs. Jobs on one real device never overlap: each
    such device has a lock (:func:`shareable`).
    """

    def __init__(self, workers: int = 1, executor: Executor = "thread") -> None:
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        if executor not in ("thread", "process"):
            raise ConfigError(f"unknown executor {executor!r}", hint="use thread or process")
        self.workers = workers
        self.executor = executor
        self._locks: dict[str, threading.Lock] = {}

    def run(self, jobs: Sequence[Job[R]]) -> Iterator[tuple[Job[R], R]]:
        if self.workers == 1 or len(jobs) <= 1:
            for job in jobs:
                yield job, self._guarded(job)
            return
        pool: cf.Executor
        if self.executor == "process":
            # forkserver: workers start from a clean interpreter, not a fork of a threaded parent.
            pool = cf.ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("forkserver"),
                initializer=share_cores,
                initargs=(max(1, (os.cpu_count() or 1) // self.workers),),
            )
            futures = {pool.submit(_play, job.fn): job for job in jobs}
        else:
            pool = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="episode")
            futures = {pool.submit(self._guarded, job): job for job in jobs}
        try:
            for future in cf.as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            # Stopped (Ctrl-C cancels every run in flight: they record it within milliseconds) or
            # failed: give the episodes in flight a moment, not the minutes that work nothing can
            # cut short (a model still loading) would take.
            for f in futures:
                f.cancel()
            cf.wait(futures, timeout=STOP_GRACE_S)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def _guarded(self, job: Job[R]) -> R:
        if shareable(job.device):
            return _play(job.fn)
        with self._locks.setdefault(job.device, threading.Lock()):
            return _play(job.fn)

    def close(self) -> None:
        """Nothing to release: pools end with each batch."""


def open_backend(
    ray: str | None,
    workers: int = 1,
    executor: Executor = "thread",
    *,
    schedule_timeout_s: float = SCHEDULE_TIMEOUT_S,
) -> Backend:
    """The backend for ``--ray`` / ``[cluster] ray_address``: None plays locally; ``local``
    starts a Ray cluster on this machine, ``auto`` joins the one this machine belongs to,
    anything else is a cluster address (``HOST:PORT`` or ``ray://HOST:PORT``).
    ``schedule_timeout_s``: how long a Ray job waits for a worker that can hold its device."""
    if ray is None:
        return LocalBackend(workers, executor)
    from agent_runtime.execution.ray_backend import RayBackend

    return RayBackend(ray, workers, schedule_timeout_s=schedule_timeout_s)


def in_order(backend: Backend, jobs: Sequence[Job[R]]) -> list[R]:
    """Every job's result in the jobs' order (the backend yields them as they finish)."""
    done = {job.key: result for job, result in backend.run(jobs)}
    return [done[job.key] for job in jobs]
