"""Cancelling the model calls of a run (Ctrl-C, ``Runtime.cancel()``).

A run sets a :class:`threading.Event` as the current cancel event (:func:`cancel_scope`); context
variables reach the graph's worker threads, which copy the submitting thread's context. Calls
made under it end within a fraction of a second once it is set — the HTTP backend abandons its
request (:func:`until_cancelled`), in-process generation stops at the next token — with
:class:`RunCancelled`; a call started after it was set raises at once. A cancelled call returns
nothing, so nothing of it reaches the traces.

A whole process can be told to stop (:func:`stop_process`: what a CLI command does on Ctrl-C or
SIGTERM). Every run's cancel event inside a scope is set at once, a run entering a scope later is
cancelled on entry, and model calls made outside any run (``agent-runtime serve``'s requests,
hint sampling) watch the process's own event: :func:`current_cancel` is never None.

Light on purpose (no langchain, no torch): ``agent-runtime serve``'s engine imports it too.

>>> import threading
>>> event = threading.Event()
>>> with cancel_scope(event):
...     raise_if_cancelled()
...     event.set()
...     raise_if_cancelled()
Traceback (most recent call last):
...
agent_runtime.models.cancel.RunCancelled: the model call was cancelled: the run was interrupted
>>> current_cancel() is process_event()  # outside a run: the process's own event
True
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Iterator
from contextvars import ContextVar
from typing import TypeVar

from agent_runtime.errors import ModelError

_T = TypeVar("_T")
_CANCEL: ContextVar[threading.Event | None] = ContextVar("agent_runtime_cancel", default=None)
#: How often an HTTP request in flight looks at the cancel event (seconds).
CANCEL_POLL_S = 0.05
#: Set once the process is told to stop (:func:`stop_process`); the cancel event of calls made
#: outside any run.
_PROCESS_STOP = threading.Event()
#: The cancel events inside a scope now (how many scopes each), which :func:`stop_process` sets.
#: Re-entrant: :func:`stop_process` runs in signal handlers, which may interrupt the holder.
_scoped: dict[threading.Event, int] = {}
_scoped_lock = threading.RLock()


class RunCancelled(ModelError):
    """The run this model call belongs to was cancelled (Ctrl-C, ``Runtime.cancel()``): the
    call was abandoned and has no reply. A :class:`ModelError`, so every layer that lets a dead
    model endpoint through lets this through too."""

    def __init__(self, what: str = "the model call") -> None:
        super().__init__(f"{what} was cancelled: the run was interrupted")


def current_cancel() -> threading.Event:
    """The cancel event of the run this code works for; outside a run, the process's own
    (:func:`process_event`), so that stopping the process stops those calls too."""
    event = _CANCEL.get()
    return event if event is not None else _PROCESS_STOP


def process_event() -> threading.Event:
    """The event :func:`stop_process` sets: set once this process is stopping."""
    return _PROCESS_STOP


def stop_process() -> None:
    """Cancel every model call of this process, now and from now on: the cancel event of each
    run in flight is set (the run ends ``interrupted``, resumable), a run that enters its scope
    later is cancelled on entry, and calls outside any run see :func:`process_event` set.
    Idempotent and safe to call from a signal handler."""
    _PROCESS_STOP.set()
    with _scoped_lock:
        events = list(_scoped)
    for event in events:
        event.set()


@contextlib.contextmanager
def cancel_scope(event: threading.Event | None) -> Iterator[None]:
    """Make ``event`` the current cancel event in this context (and in the worker threads that
    copy it) for the duration of the ``with`` block; set at once if the process is stopping."""
    if event is not None:
        with _scoped_lock:
            _scoped[event] = _scoped.get(event, 0) + 1
        if _PROCESS_STOP.is_set():  # after registering: stop_process() sees it, or this sees it
            event.set()
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)
        if event is not None:
            with _scoped_lock:
                left = _scoped.pop(event) - 1
                if left:
                    _scoped[event] = left


def raise_if_cancelled(event: threading.Event | None = None, what: str = "the model call") -> None:
    """:class:`RunCancelled` when ``event`` (default: the current one) is set."""
    event = event if event is not None else current_cancel()
    if event is not None and event.is_set():
        raise RunCancelled(what)


async def until_cancelled(
    aw: Awaitable[_T], event: threading.Event | None, what: str = "the model call"
) -> _T:
    """Await ``aw``; if ``event`` is set first, cancel it (closing its connection) and raise
    :class:`RunCancelled`, within :data:`CANCEL_POLL_S` of the event."""
    if event is None:
        return await aw
    if event.is_set():
        if asyncio.iscoroutine(aw):
            aw.close()  # never started: nothing to clean up
        raise RunCancelled(what)
    task = asyncio.ensure_future(aw)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=CANCEL_POLL_S)
            if done:
                return task.result()
            if event.is_set():
                task.cancel()
                await asyncio.wait({task})  # let it close what it opened
                raise RunCancelled(what)
    finally:
        if not task.done():
            task.cancel()
