"""Checking a run: which SimPhone task instance a run plays, and whether it was achieved.

A run is checkable when it plays a SimPhone task instance on a phone set up for it: the task
text is an instance's goal (:func:`~agent_runtime.simphone.tasks.registry.match_goal`, or
``agent-runtime run --task-id TEMPLATE/SEED``) and the device is an in-process SimPhone the
runtime builds itself (``simphone`` or ``simphone:SEED``). The phone is then built as that
instance's phone (the instance's seed, :meth:`Task.setup` applied) and at the end of the run the
task's ``is_successful`` judges it from app state (or the answer) — the same check the eval
harness uses. Anything else (a real phone, a desktop, a Device object handed in, a text no
instance has) cannot be checked: the run's success is then only the agent's claim, and
:class:`~agent_runtime.traces.Verification` says why it was not checked.

**Which instance.** On ``simphone`` (no seed) the lowest seed whose goal is the text is used
and the phone is built with that seed; on ``simphone:SEED`` only that seed's instances count
(the phone stays the one asked for), so ``run "TEXT" --device simphone:7`` is checked only when
instance ``…/7`` has that goal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_runtime.traces import Verification

if TYPE_CHECKING:
    from agent_runtime.device import Device
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import Task


@dataclass(frozen=True)
class TaskCheck:
    """A SimPhone task instance a run plays and is checked against at its end."""

    task: Task

    @property
    def by(self) -> str:
        """The checker's name in run.json: ``simphone:TEMPLATE/SEED``."""
        return f"simphone:{self.task.name}/{self.task.seed}"

    @property
    def label(self) -> str:
        """``TEMPLATE/SEED``."""
        return f"{self.task.name}/{self.task.seed}"

    def phone(self, **options: Any) -> SimPhone:
        """A fresh phone for the instance: its seed, the device options, the task's setup."""
        from agent_runtime.simphone import SimPhone

        phone = SimPhone.from_spec(str(self.task.seed), **options)
        try:
            self.task.setup(phone)
        except BaseException:
            phone.close()
            raise
        return phone

    def pending(self) -> Verification:
        """What run.json says while the run is in progress (a resume finds the instance here)."""
        return Verification(checked=False, by=self.by, detail="checked when the run ends")

    def verify(self, phone: Device, answer: str | None) -> Verification:
        """Judge the instance on ``phone`` (see :func:`check_task`)."""
        return check_task(self.task, phone, answer)  # type: ignore[arg-type]


def check_task(task: Task, phone: SimPhone, answer: str | None) -> Verification:
    """The task's ``is_successful`` on ``phone``, with a sentence that says what it found."""
    by = f"simphone:{task.name}/{task.seed}"
    try:
        score = float(task.is_successful(phone, answer))
    except Exception as exc:  # a checker bug must not lose the run: say it could not check
        return Verification(checked=False, by=by, detail=f"the check raised {type(exc).__name__}: {exc}")
    success = score >= 1.0
    expected = task.expected_answer()
    if task.answer_task:
        if answer is None:
            detail = f"no answer was given; expected {expected!r}"
        elif success:
            detail = f"the answer {answer!r} matches the expected {expected!r}"
        else:
            detail = f"the answer {answer!r} does not match the expected {expected!r}"
    elif success:
        detail = f"the phone's state meets the goal {task.goal!r}"
    else:
        part = f" (partly: score {score:g})" if score > 0 else ""
        detail = f"the phone's state does not meet the goal {task.goal!r}{part}"
    return Verification(checked=True, success=success, by=by, detail=detail, score=score)


def plan_check(text: str, seed: int | None) -> tuple[TaskCheck | None, str]:
    """The instance a run of ``text`` on an in-process SimPhone plays (``seed`` None: the
    default phone, any seed), or None and why it cannot be checked."""
    from agent_runtime.simphone.tasks.registry import match_goal, nearest_goal

    task = match_goal(text, seed=seed)
    if task is not None:
        return TaskCheck(task), ""
    if seed is not None:
        other = match_goal(text)
        if other is not None:
            return None, (
                f"SimPhone task {other.name}/{other.seed} has this text, but this phone is simphone:{seed}; "
                f"run it with --task-id {other.name}/{other.seed} (or --device simphone) to have it checked"
            )
    near = nearest_goal(text)
    hint = (
        f"; the nearest reads {near.goal!r} (run --task-id {near.name}/{near.seed} to have that checked)"
        if near is not None
        else "; list them: agent-runtime simphone tasks"
    )
    return None, f"no SimPhone task has this text{hint}"


def resumed_check(verification: Verification | None) -> TaskCheck | None:
    """The instance a resumed run plays: the one its run.json names (``simphone:TEMPLATE/SEED``)."""
    from agent_runtime.simphone.tasks import make_task

    by = verification.by if verification is not None else None
    if not by or not by.startswith("simphone:"):
        return None
    name, _, seed = by.removeprefix("simphone:").partition("/")
    if not seed.isdigit():
        return None
    return TaskCheck(make_task(name, int(seed)))
