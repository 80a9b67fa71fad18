"""The task shape (android_world's): a goal template, random parameters, setup, a success check.

A :class:`Task` is one *instance*: a template class plus the parameters drawn for one seed. The
harness builds a fresh :class:`~agent_runtime.simphone.SimPhone` per episode, calls
:meth:`Task.setup` (which writes app state through the apps' state dataclasses), lets a policy
play, then calls :meth:`Task.is_successful` — computed from app state, never from pixels.
Question tasks (``answer_task = True``) are judged on the answer text instead, through
:func:`answers_match`.

Every template also carries its expert :meth:`Task.solve`: a generator of actions that plays the
goal through the public device interface only (reading the UI tree, clicking centres of nodes),
so each template is provably solvable and can produce demonstrations. See
:mod:`agent_runtime.simphone.tasks.oracle`.

**Side effects.** A run that meets the goal but also deletes an unrelated contact has not done
the task. Each template declares what it may change, its :attr:`Task.footprint` (globs over
:meth:`SimPhone.state` paths, see :func:`~agent_runtime.simphone.state.covers`); the default is
the data of the apps the template names for an operation, and nothing for a question or a
page to reach. :meth:`Task.judge` fails a run whose app data changed outside it, naming the
path. What only looking changes (an app's ``viewing_changes``) and the OS state (clock, focus,
screens) are never side effects.
"""

from __future__ import annotations

import json
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agent_runtime.actions import Action
from agent_runtime.errors import TaskError

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone
    from agent_runtime.simphone.tasks.oracle import OracleUI

#: Steps an agent gets per unit of complexity (AndroidWorld's budget rule).
STEPS_PER_COMPLEXITY = 10


class Task(ABC):
    """One task instance. Subclasses set the class attributes and implement the four methods.

    ``params`` are what :meth:`generate_random_params` drew; ``seed`` also seeds the phone and any
    distractor content ``setup`` adds, so ``(name, seed)`` reproduces the whole episode.
    """

    #: The goal with ``{param}`` placeholders, e.g. ``"Turn {state} Wi-Fi"``.
    template: ClassVar[str]
    #: App labels the task touches (first one is the task's app in per-app tables).
    app_names: ClassVar[tuple[str, ...]]
    #: Difficulty; the step budget is ``10 × complexity``.
    complexity: ClassVar[float] = 1.0
    #: True when the user asks a question and the agent must answer it.
    answer_task: ClassVar[bool] = False
    #: ``page_reaching`` | ``page_operation`` | ``question`` — the ReachAgent task families.
    kind: ClassVar[str] = "page_operation"
    #: State paths the task may change (``apps.notes.notes[*]``, ``apps.settings.wifi*``);
    #: None: :meth:`may_change`'s default. See the module docstring.
    footprint: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, params: dict[str, Any], seed: int = 0) -> None:
        self.params = dict(params)
        self.seed = seed

    # -- identity -----------------------------------------------------------------------------
    @classmethod
    def task_name(cls) -> str:
        return cls.__name__

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def app(self) -> str:
        return self.app_names[0]

    @property
    def goal(self) -> str:
        """The instruction given to the agent: the template filled with the parameters."""
        try:
            return self.template.format(**self.params)
        except KeyError as exc:
            raise TaskError(f"{self.name}: template needs parameter {exc}", task=self.name) from None

    @property
    def max_steps(self) -> int:
        return max(1, round(STEPS_PER_COMPLEXITY * self.complexity))

    def params_key(self) -> str:
        """Canonical JSON of the parameters; the train/test split hashes it."""
        return json.dumps(self.params, sort_keys=True, default=str)

    def rng(self, salt: str = "setup") -> random.Random:
        """A generator for setup-time randomness (distractors), independent of the params draw."""
        return random.Random(f"{self.name}/{self.seed}/{salt}")

    # -- the task contract --------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        """Draw the template parameters (JSON-safe values only)."""

    @abstractmethod
    def setup(self, phone: SimPhone) -> None:
        """Put app state in place so that the goal is meaningful and not already achieved."""

    @abstractmethod
    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        """1.0 when the goal is achieved (from app state or the answer), else 0.0 (or partial)."""

    @abstractmethod
    def solve(self, ui: OracleUI) -> Iterator[Action]:
        """The expert: yield actions; ``ui.screen`` holds the observation after each one."""

    def expected_answer(self) -> str | None:
        """For question tasks, the answer :meth:`is_successful` accepts (for reports and tests)."""
        return None

    # -- side effects ---------------------------------------------------------------------------
    def may_change(self) -> tuple[str, ...]:
        """The footprint: :attr:`footprint`, else every named app's data for an operation and
        nothing for a question or a page to reach (looking changes no data)."""
        from agent_runtime.simphone.state import app_key

        if self.footprint is not None:
            return self.footprint
        if self.answer_task or self.kind in ("question", "page_reaching"):
            return ()
        return tuple(f"apps.{app_key(label)}" for label in self.app_names)

    def side_effects(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
        """App data paths that changed between two :meth:`SimPhone.state` dicts outside the
        footprint and outside what viewing changes."""
        from agent_runtime.simphone.apps import APP_CLASSES
        from agent_runtime.simphone.state import app_key, covers, diff

        allowed = list(self.may_change())
        for cls in APP_CLASSES:
            allowed += [f"apps.{app_key(cls.label)}.{p}" for p in cls.viewing_changes]
        changed = diff(before.get("apps", {}), after.get("apps", {}), "apps")
        return [p for p in changed if not any(covers(pattern, p) for pattern in allowed)]

    def judge(self, phone: SimPhone, answer: str | None, before: Mapping[str, Any]) -> Judgement:
        """The goal check (:meth:`is_successful`) and the side-effect check together.

        ``before`` is ``phone.state()`` right after :meth:`setup`. A run with side effects
        scores 0 whatever its goal score; :attr:`Judgement.reason` names the changed paths.
        """
        goal = float(self.is_successful(phone, answer))
        side = self.side_effects(before, phone.state())
        return Judgement(goal_score=goal, side_effects=tuple(side))

    def __repr__(self) -> str:
        return f"{self.name}(seed={self.seed}, params={self.params})"


@dataclass(frozen=True)
class Judgement:
    """A run judged: the goal's score and the app data it changed outside the footprint."""

    goal_score: float
    side_effects: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """The goal's score, or 0 when anything outside the footprint changed."""
        return 0.0 if self.side_effects else self.goal_score

    @property
    def success(self) -> bool:
        return self.score >= 1.0

    @property
    def reason(self) -> str:
        """Why it fails beyond the goal ('' when nothing outside the footprint changed).

        >>> Judgement(1.0, ("apps.contacts.contacts[id=3]",)).reason
        'it also changed apps.contacts.contacts[id=3], outside what the task may change'
        """
        if not self.side_effects:
            return ""
        shown = ", ".join(self.side_effects[:5])
        more = f" and {len(self.side_effects) - 5} more" if len(self.side_effects) > 5 else ""
        return f"it also changed {shown}{more}, outside what the task may change"


class QuestionTask(Task):
    """A task judged on the answer text against :meth:`expected_answer` (set ``match``)."""

    answer_task: ClassVar[bool] = True
    kind: ClassVar[str] = "question"
    #: How answers are compared: ``text``, ``number``, ``phone`` or ``time`` (see :func:`answers_match`).
    match: ClassVar[str] = "text"

    @abstractmethod
    def expected_answer(self) -> str:
        """The correct answer, computed from the parameters and the state ``setup`` wrote."""

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        if answer is None:
            return 0.0
        return 1.0 if answers_match(self.expected_answer(), answer, kind=self.match) else 0.0


_WORD = re.compile(r"[^\w.%+-]+", re.UNICODE)
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+")
_FILLER = re.compile(r"^(?:the\s+)?(?:answer\s+is\s*:?\s*)?", re.IGNORECASE)


def normalise_answer(text: str) -> str:
    """Case-folded words with punctuation and a leading "the answer is" dropped.

    >>> normalise_answer("  The answer is: Alice   SMITH. ")
    'alice smith'
    """
    text = _FILLER.sub("", text.strip())
    words = _WORD.sub(" ", text.casefold()).split()
    return " ".join(w.strip(".") for w in words if w.strip("."))


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


_TIME = re.compile(
    r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s*m\b\.?|\b(\d{1,2})[:.](\d{2})\b", re.IGNORECASE
)


def parse_times(text: str) -> list[tuple[int, int]]:
    """Clock times in ``text`` as (hour 0–23, minute): ``7:30 PM``, ``7 pm``, ``19:30``.

    >>> parse_times("at 7:05 p.m. or 19:30, not 12 am")
    [(19, 5), (19, 30), (0, 0)]
    """
    out = []
    for m in _TIME.finditer(text):
        if m[3]:
            hour, minute = int(m[1]) % 12 + (12 if m[3].lower() == "p" else 0), int(m[2] or 0)
        else:
            hour, minute = int(m[4]), int(m[5])
        if hour < 24 and minute < 60:
            out.append((hour, minute))
    return out


def answers_match(expected: str, given: str, *, kind: str = "text") -> bool:
    """Compare an answer with the expected one.

    ``text``: equal after :func:`normalise_answer`. ``number``: the answer contains exactly one
    number and it equals the expected one to the cent. ``phone``: the same digits. ``time``:
    the answer names exactly one clock time, the expected one (``7:30 PM`` = ``19:30``).

    >>> answers_match("Alice Smith", "alice smith.")
    True
    >>> answers_match("42.50", "$42.5", kind="number")
    True
    >>> answers_match("42.50", "42.5 or 43", kind="number")
    False
    >>> answers_match("+1 555-0100", "15550100", kind="phone")
    True
    >>> answers_match("7:30 PM", "It is set for 19:30", kind="time")
    True
    """
    if kind == "number":
        want, got = _numbers(expected), _numbers(given)
        return len(want) == 1 and len(got) == 1 and abs(want[0] - got[0]) < 0.005
    if kind == "phone":
        digits = "".join(c for c in given if c.isdigit())
        return bool(digits) and digits == "".join(c for c in expected if c.isdigit())
    if kind == "time":
        want_t, got_t = parse_times(expected), parse_times(given)
        return len(want_t) == 1 and len(set(got_t)) == 1 and want_t[0] == got_t[0]
    if kind != "text":
        raise TaskError(f"unknown answer kind {kind!r}", hint="use text, number, phone or time")
    return normalise_answer(expected) == normalise_answer(given)
