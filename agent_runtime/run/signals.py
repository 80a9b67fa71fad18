"""How a run in flight is stopped: Ctrl-C, its cancel event, and the process exiting under it.

Ctrl-C (SIGINT) in the main thread sets the cancel event of every run in flight, then does what
the replaced handler does; the run records ``interrupted`` and raises :class:`RunInterrupted`.
A process that exits while runs still play in other threads records each ``interrupted`` at
exit (:func:`in_flight`), never leaving one ``running`` after the process has ended.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from agent_runtime.errors import AgentRuntimeError

E = TypeVar("E")
R = TypeVar("R")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run: its run.json says ``interrupted`` (totals included) and its
    checkpoint is kept, so ``Runtime.resume(run_id)`` / ``agent-runtime run --resume RUN_ID``
    continues it. A ``KeyboardInterrupt``: code that handles those handles this one."""

    def __init__(self, run_id: str, run_dir: Path, steps: int) -> None:
        super().__init__(f"run {run_id} interrupted after {steps} steps; saved in {run_dir}")
        self.run_id, self.run_dir, self.steps = run_id, run_dir, steps


def cancellable(
    run: Generator[E, None, R], cancel: threading.Event, registered: AbstractContextManager[Any]
) -> Generator[E, None, R]:
    """``run`` under its cancel event: the current one for every step of its work (model calls
    watch it), set by Ctrl-C while the run is in flight. ``registered`` is held meanwhile (the
    runtime's record of its runs in flight, which ``Runtime.cancel`` and ``pause`` reach)."""
    from agent_runtime.models.cancel import cancel_scope

    with registered, _sigint_watched(cancel):
        try:
            while True:
                with cancel_scope(cancel):
                    try:
                        event = next(run)
                    except StopIteration as stop:
                        return stop.value  # type: ignore[no-any-return]
                yield event
        finally:
            with cancel_scope(cancel):
                run.close()


_in_flight_lock = threading.Lock()
#: The runs this process plays now (by id), each with what records it ``interrupted``.
_in_flight: dict[str, Callable[[], None]] = {}


@contextlib.contextmanager
def in_flight(run_id: str, stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, ``stop`` records run ``run_id`` interrupted if the process exits."""
    with _in_flight_lock:
        _in_flight[run_id] = stop
    try:
        yield
    finally:
        with _in_flight_lock:
            _in_flight.pop(run_id, None)


@atexit.register
def _interrupt_in_flight() -> None:
    """The process exits (Ctrl-C or SIGTERM ends it at once, see :mod:`agent_runtime.cli.signals`)
    while runs still play in other threads — an evaluation's worker thread loading a model, which
    no cancel event cuts short: record each ``interrupted`` (resumable), as it would itself had it
    reached a point where it stops, never left ``running`` by a process that has ended."""
    with _in_flight_lock:
        stops = list(_in_flight.values())
    for stop in stops:
        # A runs folder that refuses the write leaves that run "running": nothing more to do at exit.
        with contextlib.suppress(AgentRuntimeError):
            stop()


_sigint_lock = threading.Lock()
#: The cancel events of the runs in flight that Ctrl-C stops; the handler replaced, while ours is in.
_sigint_runs: set[threading.Event] = set()
_sigint_previous: list[Any] = []


def _on_sigint(signum: int, frame: Any) -> None:
    """SIGINT while runs are in flight: cancel their model calls (in whatever thread they run),
    then do what the replaced handler does (raise KeyboardInterrupt in the main thread)."""
    for event in list(_sigint_runs):
        event.set()
    previous = _sigint_previous[0] if _sigint_previous else None
    if callable(previous):
        previous(signum, frame)
    else:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _sigint_watched(cancel: threading.Event) -> Iterator[None]:
    """Have Ctrl-C set ``cancel`` during the block: only from the main thread (where signal
    handlers live), and only when SIGINT has a Python handler (the default one raises
    KeyboardInterrupt); a handler the application installed is still called after. Once no run
    is in flight the replaced handler is put back."""
    import signal

    with _sigint_lock:
        _sigint_runs.add(cancel)
        if threading.current_thread() is threading.main_thread() and not _sigint_previous:
            current = signal.getsignal(signal.SIGINT)
            if callable(current):
                _sigint_previous.append(current)
                signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        with _sigint_lock:
            _sigint_runs.discard(cancel)
            if (
                not _sigint_runs
                and _sigint_previous
                and threading.current_thread() is threading.main_thread()
            ):
                if signal.getsignal(signal.SIGINT) is _on_sigint:
                    signal.signal(signal.SIGINT, _sigint_previous[0])
                _sigint_previous.clear()
