"""Where a run was stopped and taken up again (the timeline's marks).

A run records its sessions in run.json (:class:`~agent_runtime.traces.RunSession`): each
process that played it, the step it started at, and how it stopped — completed, failed,
interrupted (Ctrl-C, SIGTERM, ``cancel()``), waiting for a person, stopped by an error, or
killed (it never recorded an end). The timeline shows those (:func:`run_marks`).

Runs written before sessions were recorded are read for what a stop and a resume leave behind:

* run.json's status: ``interrupted``, ``waiting`` or ``running`` with no one playing it (a
  killed process) — the run stopped after its last committed step and can go on from there;
* a step that starts from another screen than the one the step before it ended on, with no
  takeover to explain it: the device was looked at afresh — what a resume does before the
  next step (the new screenshot is saved as ``screens/NNNN-rK.png``);
* a ``<file>.torn`` beside a trace file: a process was killed in the middle of a line, and the
  resume cut the fragment off.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from agent_runtime.traces import LoadedRun, RunSession

#: What a stopped run's status says on the timeline (runs without recorded sessions).
_STOPPED = {
    "interrupted": "interrupted (Ctrl-C or cancel)",
    "waiting": "stopped to wait for a person's reply",
    "running": "not finished: still running, or its process was killed",
}
#: What a recorded session's end says on the timeline (a run's own end says nothing here).
_ENDED = {
    "interrupted": "interrupted (Ctrl-C, SIGTERM or cancel)",
    "waiting": "stopped to wait for a person's reply",
    "error": "stopped by an error",
    "killed": "killed: its process ended without recording how",
}
_RESUMABLE = ("running", "interrupted", "waiting", "error")


@dataclass(frozen=True)
class Mark:
    """One stop or resume on the timeline: after step ``step`` (-1: before the first step;
    None: the trace does not say where)."""

    kind: str  # "stopped" | "resumed" | "killed" | "running"
    step: int | None
    text: str


def run_marks(run: LoadedRun) -> list[Mark]:
    """The stops and resumes of ``run``, in step order (those of unknown place last): its
    recorded sessions, else what its trace shows."""
    marks = _recorded(run) if run.run.sessions else [*_resumes(run), *_torn(run.dir), *_status(run)]
    return sorted(marks, key=lambda m: (m.step is None, m.step or 0))


def _recorded(run: LoadedRun) -> list[Mark]:
    sessions = run.run.sessions
    last_step = run.steps[-1].step if run.steps else -1
    resume = f"; continue with: agent-runtime run --resume {run.run.run_id}"
    marks = []
    for i, session in enumerate(sessions):
        if i or session.from_step:  # a first one past step 0 resumed a run recorded without sessions
            marks.append(
                Mark(
                    "resumed",
                    session.from_step - 1,
                    f"resumed at step {session.from_step} ({_clock(session.started_at)}, "
                    f"process {session.pid})",
                )
            )
        later = sessions[i + 1] if i + 1 < len(sessions) else None
        after = later.from_step - 1 if later is not None else last_step
        end = session.ended or ("killed" if later is not None or not _alive(session) else None)
        if end is None:
            marks.append(Mark("running", after, f"still being played by process {session.pid}"))
            continue
        if end not in _ENDED:
            continue
        when = f" at {_clock(session.ended_at)}" if session.ended_at else ""
        tail = resume if later is None and run.run.status in _RESUMABLE else ""
        kind = "killed" if end == "killed" else "stopped"
        marks.append(Mark(kind, after, f"{_ENDED[end]}{when}{tail}"))
    return marks


def _alive(session: RunSession) -> bool:
    """Whether the process of an open session still runs (on this machine)."""
    try:
        os.kill(session.pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, another user's
        return True
    return True


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def _status(run: LoadedRun) -> list[Mark]:
    stopped = _STOPPED.get(run.run.status)
    if not stopped:
        return []
    last = run.steps[-1].step if run.steps else -1
    return [Mark("stopped", last, f"{stopped}; continue with: agent-runtime run --resume {run.run.run_id}")]


def _resumes(run: LoadedRun) -> list[Mark]:
    handed_back = {r.after_screen for r in run.interventions if r.after_screen}
    marks = []
    for before, step in zip(run.steps, run.steps[1:], strict=False):
        start = step.before_screen
        if start and before.after_screen and start != before.after_screen and start not in handed_back:
            marks.append(
                Mark(
                    "resumed",
                    before.step,
                    f"resumed before step {step.step}: the screen was observed afresh ({start})",
                )
            )
    return marks


def _torn(run_dir: Path) -> list[Mark]:
    torn = sorted(p.name for p in run_dir.glob("*.torn"))
    if not torn:
        return []
    kept = ", ".join(torn)
    return [
        Mark("killed", None, f"a process was killed mid-write, then the run resumed (torn line in {kept})")
    ]
