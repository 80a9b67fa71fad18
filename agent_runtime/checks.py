"""Checking a run: what SimPhone checks a run against, and whether it was achieved.

A run is checkable when it plays on an in-process SimPhone the runtime builds itself
(``simphone`` or ``simphone:SEED``). Its phone is always the one the run asks for — seed 0, or
SEED — never another seed's phone. What judges the run at its end depends on the task text,
tried in this order (:func:`plan_check`):

1. :class:`TaskCheck` — the text is the goal of *this* phone's instance of a template (or the
   run was started with ``--task-id TEMPLATE/SEED``, which picks the phone): the phone is set up
   for the instance (:meth:`Task.setup`) and judged as in eval (:meth:`Task.judge`): the task's
   ``is_successful``, and nothing changed outside the template's footprint (a goal met while an
   unrelated contact was deleted is not verified, and the reason names the changed path).
2. :class:`GoalCheck` — a template can express the text in other words ("Set an alarm for
   6:45", "Text Nina Dubois: running late"): :mod:`~agent_runtime.simphone.tasks.freetext`
   reads it into the template's parameters, the phone is set up for it when the words give all
   the setup needs, and that template's check judges the run's phone.
3. :class:`StateChangeCheck` — no template expresses it ("Add a note saying buy milk"): the
   run is judged by what it changed in the apps' data
   (:mod:`~agent_runtime.simphone.tasks.statecheck`), and the run says so before it starts,
   naming the closest templates.

Anything else (a real phone, a desktop, a Device object handed in) cannot be checked: a success
is then only the agent's claim, and :class:`~agent_runtime.traces.Verification` says why.
:func:`outcome` and :func:`summary_line` turn a finished run and its check into the words the
CLI and ``print(result)`` both use; :func:`recorded_outcome` and :func:`recorded_summary` say
the same of a run read back from its run.json (``traces``, MCP's ``get_run``, the viewer), and
:func:`tone` how each word is colored.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Literal

from agent_runtime.traces import RunRecord, Verification, verification_of

if TYPE_CHECKING:
    from agent_runtime.device import Device
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import Task
    from agent_runtime.simphone.tasks.freetext import ParsedGoal
    from agent_runtime.simphone.tasks.statecheck import Snapshot

#: How a finished run stands, for scripts: the check's word first, then the claim's.
Outcome = Literal[
    "verified",
    "failed_check",
    "unverified",
    "achieved",
    "not_achieved",
    "failed",
    "error",
    "interrupted",
    "waiting",
    "running",
]
#: How an outcome reads at a glance, which every surface colors alike: ``ok`` the check found
#: the goal achieved, ``warn`` a claim nothing checked, ``open`` a run that can go on (resume
#: it), ``bad`` anything else.
Tone = Literal["ok", "warn", "open", "bad"]
#: Each tone's color in a terminal (rich), for ``run``'s last line and ``traces``.
TONE_COLOR: dict[Tone, str] = {"ok": "green", "warn": "yellow", "open": "cyan", "bad": "red"}


class RunCheck(ABC):
    """What judges a run at its end, on the phone built for the run (see the module doc)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    @property
    @abstractmethod
    def by(self) -> str:
        """The checker's name in run.json (a resumed run finds its check by it)."""

    @property
    @abstractmethod
    def notice(self) -> str:
        """What the run says about its check before its first step."""

    @abstractmethod
    def prepare(self, phone: SimPhone) -> None:
        """Get ``phone`` (fresh, the run's seed) ready to be judged: called before the run, and
        before a resumed run's steps are replayed."""

    @abstractmethod
    def verify(self, phone: Device, answer: str | None) -> Verification:
        """Judge the run on ``phone`` at its end."""

    def phone(self, **options: Any) -> SimPhone:
        """A fresh phone for the run: its seed, the device options, :meth:`prepare` applied."""
        from agent_runtime.simphone import SimPhone

        options.pop("seed", None)
        phone = SimPhone.from_spec(str(self.seed), **options)
        try:
            self.prepare(phone)
        except BaseException:
            phone.close()
            raise
        return phone

    def pending(self) -> Verification:
        """What run.json says while the run is in progress (a resume finds the check here)."""
        return Verification(checked=False, by=self.by, detail="checked when the run ends")


class TaskCheck(RunCheck):
    """A SimPhone task instance the run plays: the phone is set up for it, and judged on the goal
    and on side effects (what changed outside the template's footprint since the setup)."""

    def __init__(self, task: Task) -> None:
        super().__init__(task.seed)
        self.task = task
        self._before: dict[str, Any] | None = None

    @property
    def by(self) -> str:
        """``simphone:TEMPLATE/SEED``."""
        return f"simphone:{self.label}"

    @property
    def label(self) -> str:
        """``TEMPLATE/SEED``."""
        return f"{self.task.name}/{self.task.seed}"

    @property
    def notice(self) -> str:
        return (
            f"this is SimPhone task {self.label} ({self.task.goal!r}): the phone is set up for it and "
            "the result is checked when the run ends"
        )

    def prepare(self, phone: SimPhone) -> None:
        """Set the phone up and keep its state: side effects are changes since this moment (a
        resumed run prepares a fresh phone the same way before its snapshot is restored)."""
        self.task.setup(phone)
        self._before = phone.state()

    def verify(self, phone: Device, answer: str | None) -> Verification:
        """Judge the instance on ``phone`` (see :func:`check_task`), then its side effects."""
        from agent_runtime.simphone import SimPhone
        from agent_runtime.simphone.tasks.base import Judgement

        found = check_task(self.task, phone, answer)  # type: ignore[arg-type]
        if not found.checked or self._before is None or not isinstance(phone, SimPhone):
            return found
        side = tuple(self.task.side_effects(self._before, phone.state()))
        if not side:
            return found
        judged = Judgement(found.score or 0.0, side)
        return found.model_copy(
            update={"success": False, "score": judged.score, "detail": f"{found.detail}; but {judged.reason}"}
        )


class GoalCheck(RunCheck):
    """A free-text goal read as a template's parameters, judged on the run's own phone.

    Every reading of the goal (a time without AM/PM has two) is an instance; the run is
    verified when the phone meets any of them. The phone is set up for every reading when the
    goal's words give all the setup needs (:attr:`ParsedGoal.set_up`); otherwise it is judged
    as it was, and a goal it already met says so."""

    def __init__(self, text: str, parsed: ParsedGoal) -> None:
        super().__init__(parsed.tasks[0].seed)
        self.text = text
        self.parsed = parsed
        self._met_before: bool | None = None

    @property
    def by(self) -> str:
        """``simphone:goal:TEMPLATE``: the template, read from the run's own text."""
        return f"simphone:goal:{self.parsed.template}"

    @property
    def notice(self) -> str:
        params = json.dumps(self.parsed.params, ensure_ascii=False)
        readings = " or ".join(repr(t.goal) for t in self.parsed.tasks)
        either = " (either reading counts)" if len(self.parsed.tasks) > 1 else ""
        setup = f"this phone (simphone:{self.seed}) is set up for it and " if self.parsed.set_up else ""
        return (
            f"SimPhone reads this goal as its {self.parsed.template} task {params}, i.e. {readings}{either}: "
            f"{setup}the result is checked on simphone:{self.seed} when the run ends"
        )

    def prepare(self, phone: SimPhone) -> None:
        if self.parsed.set_up:
            for task in self.parsed.tasks:
                task.setup(phone)
        else:
            self._met_before = any(t.is_successful(phone) >= 1.0 for t in self.parsed.tasks)

    def verify(self, phone: Device, answer: str | None) -> Verification:
        results = [check_task(t, phone, answer) for t in self.parsed.tasks]  # type: ignore[arg-type]
        best = next((r for r in results if r.success), results[0])
        if not best.checked:
            return best.model_copy(update={"by": self.by})
        detail = best.detail
        if len(results) > 1 and not best.success:
            goals = " or ".join(repr(t.goal) for t in self.parsed.tasks)
            detail = f"the phone's state meets neither reading of the goal: {goals}"
        if best.success and self._met_before:
            detail += " (it already did before the run)"
        return best.model_copy(update={"by": self.by, "detail": detail})


class StateChangeCheck(RunCheck):
    """A goal no template expresses, judged by what the run changed in the apps' data."""

    def __init__(self, text: str, seed: int, closest: list[Task]) -> None:
        super().__init__(seed)
        self.text = text
        self.closest = closest
        self._before: Snapshot | None = None

    @property
    def by(self) -> str:
        from agent_runtime.simphone.tasks.statecheck import BY

        return BY

    @property
    def notice(self) -> str:
        near = ", ".join(t.task_name() for t in self.closest)
        return (
            f"no SimPhone template expresses this goal (closest: {near}; `agent-runtime simphone tasks`): "
            f"it is judged by what the run changes on simphone:{self.seed}"
        )

    def prepare(self, phone: SimPhone) -> None:
        from agent_runtime.simphone.tasks.statecheck import snapshot

        self._before = snapshot(phone)

    def verify(self, phone: Device, answer: str | None) -> Verification:
        from agent_runtime.simphone import SimPhone
        from agent_runtime.simphone.tasks.statecheck import front_app, judge, snapshot

        if self._before is None or not isinstance(phone, SimPhone):
            return Verification(by=self.by, detail="the phone's state at the start of the run is unknown")
        return judge(self.text, self._before, snapshot(phone), front_app(phone))


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


def plan_check(text: str, seed: int | None) -> RunCheck:
    """What judges a run of ``text`` on the in-process SimPhone ``simphone:SEED`` (``seed``
    None: the default phone, seed 0); see the module doc for the order."""
    from agent_runtime.simphone.tasks.freetext import closest_templates, parse_goal
    from agent_runtime.simphone.tasks.registry import match_goal

    phone_seed = 0 if seed is None else seed
    task = match_goal(text, seed=phone_seed)
    if task is not None:
        return TaskCheck(task)
    parsed = parse_goal(text, phone_seed)
    if parsed is not None:
        return GoalCheck(text, parsed)
    return StateChangeCheck(text, phone_seed, closest_templates(text))


def resumed_check(verification: Verification | None, text: str, seed: int) -> RunCheck | None:
    """A resumed run's check: the one its run.json names, rebuilt for its phone ``seed``."""
    from agent_runtime.simphone.tasks import make_task
    from agent_runtime.simphone.tasks.statecheck import BY

    by = verification.by if verification is not None else None
    if not by or not by.startswith("simphone:"):
        return None
    if by.startswith("simphone:goal:") or by == BY:
        check = plan_check(text, seed)
        return check if check.by == by else None
    name, _, instance = by.removeprefix("simphone:").partition("/")
    if not instance.isdigit():
        return None
    return TaskCheck(make_task(name, int(instance)))


def checker_name(by: str | None) -> str:
    """How a checker is named to a person.

    >>> checker_name("simphone:ClockStartTimer/3"), checker_name("simphone:goal:ClockAddAlarm")
    ('SimPhone (ClockStartTimer/3)', "SimPhone (ClockAddAlarm, read from the goal's words)")
    >>> checker_name("simphone:state-change")
    "SimPhone (the phone's state change)"
    """
    if by == "simphone:state-change":
        return "SimPhone (the phone's state change)"
    if by and by.startswith("simphone:goal:"):
        return f"SimPhone ({by.removeprefix('simphone:goal:')}, read from the goal's words)"
    if by and by.startswith("simphone:"):
        return f"SimPhone ({by.removeprefix('simphone:')})"
    return by or "the check"


def outcome(status: str, success: bool, verification: Verification | None) -> Outcome:
    """One word for a finished run, the check outranking the claim.

    >>> outcome("completed", True, Verification(checked=True, success=False))
    'failed_check'
    >>> outcome("completed", True, Verification()), outcome("completed", True, None)
    ('unverified', 'unverified')
    >>> outcome("max_steps", False, Verification(checked=True, success=True))
    'achieved'
    """
    if status in ("error", "interrupted", "waiting", "running"):
        return status  # type: ignore[return-value]
    checked = verification is not None and verification.checked
    if checked and verification is not None:
        if success:
            return "verified" if verification.success else "failed_check"
        return "achieved" if verification.success else "not_achieved"
    return "unverified" if success else "failed"


def recorded_outcome(run: RunRecord) -> Outcome:
    """A recorded run's :func:`outcome`, from its run.json (its check, or eval's judgement, see
    :func:`~agent_runtime.traces.verification_of`): the word ``traces list``/``show``, MCP's
    ``get_run`` and the viewer say, as ``run`` said it.

    >>> from agent_runtime.traces import RunRecord
    >>> recorded_outcome(RunRecord(run_id="r", task="t", status="completed", success=True))
    'unverified'
    """
    return outcome(run.status, bool(run.success), verification_of(run))


def recorded_summary(run: RunRecord) -> str:
    """The line ``run`` ended ``run`` with (:func:`summary_line`), from its run.json."""
    reason = str((run.model_extra or {}).get("reason") or "")
    return summary_line(
        run.status, bool(run.success), run.steps, reason=reason, answer=run.answer,
        verification=verification_of(run),
    )  # fmt: skip


def tone(kind: Outcome) -> Tone:
    """How ``kind`` reads at a glance (see :data:`Tone`).

    >>> tone("verified"), tone("unverified"), tone("interrupted"), tone("failed_check")
    ('ok', 'warn', 'open', 'bad')
    """
    if kind in ("verified", "achieved"):
        return "ok"
    if kind == "unverified":
        return "warn"
    return "open" if kind in ("interrupted", "waiting", "running") else "bad"


def summary_line(
    status: str,
    success: bool,
    steps: int,
    *,
    reason: str = "",
    answer: str | None = None,
    verification: Verification | None = None,
) -> str:
    """The one line a finished run ends with, in the CLI and in ``print(result)`` alike.

    A claim nothing confirmed never reads as done: a refuted claim starts with "failed", an
    unchecked one with "unverified".

    >>> summary_line("completed", True, 1, reason="it terminated")
    'unverified after 1 step (it terminated): the agent says it is done; nothing checked it'
    >>> refuted = Verification(checked=True, success=False, by="simphone:X/1")
    >>> summary_line("completed", True, 2, verification=refuted)
    'failed after 2 steps: the agent says it is done — failed the check: SimPhone (X/1)'
    """
    counted = f"{steps} step{'s' * (steps != 1)}"
    why = f" ({reason})" if reason else ""
    said = f" — answer: {answer}" if answer else ""
    if status == "error":
        return f"error after {counted}: {reason}" if reason else f"error after {counted}"
    checker = checker_name(verification.by if verification else None)
    kind = outcome(status, success, verification)
    if kind == "verified":
        return f"{status} after {counted}{why} — verified by {checker}{said}"
    if kind == "failed_check":
        return f"failed after {counted}{why}: the agent says it is done — failed the check: {checker}{said}"
    if kind == "unverified":
        return f"unverified after {counted}{why}: the agent says it is done; nothing checked it{said}"
    if kind == "achieved":
        return f"{status} after {counted}{why} — yet {checker} finds the goal achieved{said}"
    if kind == "not_achieved":
        return f"{status} after {counted}{why} — checked by {checker}{said}"
    return f"{status} after {counted}{why}{said}"
