"""Where a run was stopped and taken up again, as far as its trace tells (the timeline's marks).

A run's files record no list of sessions, but three things a stop and a resume leave behind:

* run.json's status: ``interrupted`` (Ctrl-C, ``cancel()``), ``waiting`` (for a person's
  reply) or ``running`` with no one playing it (a killed process) — the run stopped after its
  last committed step and can go on from there;
* a step that starts from another screen than the one the step before it ended on, with no
  takeover to explain it: the device was looked at afresh — what a resume does before the
  next step (the new screenshot is saved as ``screens/NNNN-rK.png``);
* a ``<file>.torn`` beside a trace file: a process was killed in the middle of a line, and the
  resume cut the fragment off.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_runtime.traces import LoadedRun

#: What a stopped run's status says on the timeline.
_STOPPED = {
    "interrupted": "interrupted (Ctrl-C or cancel)",
    "waiting": "stopped to wait for a person's reply",
    "running": "not finished: still running, or its process was killed",
}


@dataclass(frozen=True)
class Mark:
    """One stop or resume on the timeline: after step ``step`` (-1: before the first step;
    None: the trace does not say where)."""

    kind: str  # "stopped" | "resumed" | "killed"
    step: int | None
    text: str


def run_marks(run: LoadedRun) -> list[Mark]:
    """The stops and resumes ``run``'s trace shows, in step order (those of unknown place last)."""
    marks = [*_resumes(run), *_torn(run.dir)]
    stopped = _STOPPED.get(run.run.status)
    if stopped:
        last = run.steps[-1].step if run.steps else -1
        resume = f"; continue with: agent-runtime run --resume {run.run.run_id}"
        marks.append(Mark("stopped", last, stopped + resume))
    return sorted(marks, key=lambda m: (m.step is None, m.step or 0))


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
