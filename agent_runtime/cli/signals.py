"""Ctrl-C and SIGTERM stop every command the same way, within a second.

A long command (``run``, ``eval``, ``evolve``, ``distill``, ``serve``) may be stopped from a
terminal (Ctrl-C: SIGINT) or by a supervisor (``timeout``, ``docker stop``, systemd: SIGTERM).
Both get one answer, installed once by :func:`install` when the CLI starts:

* every model call of the process is cancelled (:func:`~agent_runtime.models.cancel.stop_process`):
  runs in flight — in the main thread or in an evaluation's worker threads — end ``interrupted``
  with their checkpoint kept (``run --resume`` continues them), runs not started yet are cancelled
  on entry, and ``serve``'s generations stop at the next token;
* the main thread gets a ``KeyboardInterrupt``, which each command turns into its ``interrupted``
  message and exit code 130;
* once the command has said so, the process exits without Python's teardown (:func:`run`):
  with torch and a model loaded, collecting every module's objects took seconds;
* a second signal (one during the first one's clean-up) exits at once with 130: files are only
  ever replaced whole, so nothing ``--resume`` needs is lost.

SIGTERM is delivered to whatever handles SIGINT at that moment (a run's own handler, or this
module's), so a killed run is recorded exactly as an interrupted one, never left ``running``.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

#: The exit code of an interrupted command (128 + SIGINT, as shells report Ctrl-C).
EXIT_INTERRUPTED = 130
_received = threading.Event()


def received() -> bool:
    """Whether this process was told to stop (Ctrl-C or SIGTERM)."""
    return _received.is_set()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """First signal: cancel everything and interrupt the main thread; second: exit now."""
    from agent_runtime.models.cancel import stop_process

    if _received.is_set():
        os.write(2, b"\ninterrupted again: exiting now\n")
        os._exit(EXIT_INTERRUPTED)
    _received.set()
    stop_process()
    raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM is Ctrl-C: hand it to the SIGINT handler in place now (a run may have put its own
    in front of :func:`_on_sigint`, and chains to it)."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored or left to the OS: still stop as Ctrl-C would
        _on_sigint(signal.SIGINT, frame)


def install() -> None:
    """Make Ctrl-C and SIGTERM stop this process as the module docstring says (main thread only;
    a SIGINT the parent process ignores, e.g. a background job of a shell, stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, _on_sigterm)


def run(command: Callable[[], object]) -> NoReturn:
    """Run the CLI ``command`` (which ends in ``SystemExit``, as typer's app does) with the
    handlers :func:`install` sets. When a signal stopped it, exit with its code straight after
    the exit handlers (log and telemetry flushes) — skipping the interpreter's teardown and the
    joins of worker threads left behind — so the exit follows the ``interrupted`` line at once."""
    install()
    try:
        command()
    except SystemExit as done:
        if received():
            _exit_now(done.code if isinstance(done.code, int) else EXIT_INTERRUPTED)
        raise
    except KeyboardInterrupt:
        if received():
            _exit_now(EXIT_INTERRUPTED)
        raise
    sys.exit(0)


def _exit_now(code: int) -> NoReturn:
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more can be said
            pass
    os._exit(code)
