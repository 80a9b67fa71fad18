"""The expert (oracle) policy: plays a task through the public device interface only.

A template's :meth:`~agent_runtime.simphone.tasks.base.Task.solve` is a generator that
yields screen-pixel :mod:`~agent_runtime.actions` and reads :attr:`OracleUI.screen` — the latest
:class:`~agent_runtime.observation.Observation` — between them. It finds nodes in
``observation.elements`` by text / content-desc / resource-id and clicks their centres, exactly as
an agent reading the UI tree could; it never touches app state. :class:`OraclePolicy` turns such a
generator into the ``observation -> Action`` policy the episode loop drives.

This is a harness tool (solvability proofs, expert demonstrations), never the product's agent.
Helpers that need several steps (``tap`` with scrolling, ``type_into``) are generators
themselves: use them with ``yield from``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Protocol

from agent_runtime.actions import Action, Answer, Click, OpenApp, Swipe, Terminate, Type
from agent_runtime.errors import TaskError
from agent_runtime.observation import Observation, UIElement

#: Swipes tried in one direction before ``scroll_to`` turns around.
MAX_SCROLLS = 12
#: Packages of the status/navigation bars and the soft keyboard: not part of an app's screen.
SYSTEM_PACKAGES = frozenset({"com.android.systemui", "com.google.android.inputmethod.latin"})


class OracleError(TaskError):
    """The expert did not find what the app should show: a broken app screen or template."""


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _matches(
    el: UIElement,
    *,
    text: str | None = None,
    desc: str | None = None,
    contains: str | None = None,
    rid: str | None = None,
    cls: str | None = None,
    where: Callable[[UIElement], bool] | None = None,
) -> bool:
    if text is not None and _norm(text) not in {_norm(el.text), _norm(el.content_desc)}:
        return False
    if desc is not None and _norm(desc) != _norm(el.content_desc):
        return False
    if contains is not None and _norm(contains) not in _norm(f"{el.text} {el.content_desc}"):
        return False
    if rid is not None and rid not in {el.resource_id, el.resource_id.rpartition(":id/")[2]}:
        return False
    if cls is not None and el.class_name.rsplit(".", 1)[-1] != cls:
        return False
    return where is None or where(el)


class OracleUI:
    """Queries over the current screen plus small action generators."""

    def __init__(self, screen: Observation, task_name: str = "") -> None:
        self.screen = screen
        self.task_name = task_name

    # -- queries --------------------------------------------------------------------------
    def visible(self, el: UIElement) -> bool:
        """On screen with a non-empty area (off-screen rows of a list are in the tree too)."""
        b, size = el.bounds, self.screen.size
        return b.area > 0 and b.x1 >= 0 and b.y1 >= 0 and b.x2 <= size.width and b.y2 <= size.height

    def find_all(
        self,
        text: str | None = None,
        *,
        desc: str | None = None,
        contains: str | None = None,
        rid: str | None = None,
        cls: str | None = None,
        where: Callable[[UIElement], bool] | None = None,
    ) -> list[UIElement]:
        """Elements matching every given criterion, in document order.

        ``text`` matches text *or* content-desc exactly (whitespace- and case-insensitive);
        ``desc`` only content-desc; ``contains`` is a substring of either; ``rid`` matches the
        resource-id or its part after ``:id/``; ``cls`` the short class name (``Button``);
        ``where`` any predicate. Only visible nodes count, and never the status bar, navigation
        bar or keyboard.
        """
        return [
            el
            for el in self.screen.elements
            if self.visible(el)
            and el.package not in SYSTEM_PACKAGES
            and _matches(el, text=text, desc=desc, contains=contains, rid=rid, cls=cls, where=where)
        ]

    def find(self, text: str | None = None, **query: object) -> UIElement | None:
        """The first match of :meth:`find_all`, or None."""
        found = self.find_all(text, **query)  # type: ignore[arg-type]
        return found[0] if found else None

    def require(self, text: str | None = None, **query: object) -> UIElement:
        """Like :meth:`find` but raise :class:`OracleError` listing what *is* on screen."""
        el = self.find(text, **query)
        if el is None:
            raise self.error(f"no element {self._describe(text, query)}")
        return el

    def labels(self) -> list[str]:
        """Visible texts and descriptions, for error messages and answers."""
        return [
            el.label
            for el in self.screen.elements
            if el.label and self.visible(el) and el.package not in SYSTEM_PACKAGES
        ]

    def children(self, parent: UIElement) -> list[UIElement]:
        """Every descendant of ``parent`` (document order)."""
        inside: set[int] = {parent.index}
        out = []
        for el in self.screen.elements[parent.index + 1 :]:
            if el.parent not in inside:
                break
            inside.add(el.index)
            out.append(el)
        return out

    def row_of(self, el: UIElement, *, rid: str | None = None) -> UIElement:
        """The nearest ancestor of ``el`` with resource-id ``rid``, or else the nearest clickable
        one (a list row); ``el`` itself when there is none."""
        node = self.screen.elements[el.parent] if el.parent is not None else None
        while node is not None:
            if _matches(node, rid=rid) if rid is not None else node.has("clickable"):
                return node
            node = self.screen.elements[node.parent] if node.parent is not None else None
        return el

    def in_row(self, label: str, *, row_rid: str | None = None, **query: object) -> UIElement:
        """An element (e.g. a button) inside the row that shows ``label`` (see :meth:`row_of`)."""
        row = self.row_of(self.require(label), rid=row_rid)
        for el in [*self.children(row), row]:
            if _matches(el, **query):  # type: ignore[arg-type]
                return el
        raise self.error(f"no element {self._describe(None, query)} in the row of {label!r}")

    def error(self, message: str) -> OracleError:
        shown = "; ".join(self.labels()[:25])
        return OracleError(
            f"oracle: {message} on screen {self.screen.app}/{self.screen.activity}",
            task=self.task_name or None,
            hint=f"visible: {shown}",
        )

    @staticmethod
    def _describe(text: str | None, query: dict[str, object]) -> str:
        parts = [repr(text)] if text is not None else []
        parts += [f"{k}={v!r}" for k, v in query.items() if v is not None and not callable(v)]
        return ", ".join(parts) or "(any)"

    # -- single actions ---------------------------------------------------------------------
    @staticmethod
    def click(el: UIElement) -> Click:
        return Click(coordinate=el.bounds.center)

    @staticmethod
    def open_app(label: str) -> OpenApp:
        return OpenApp(text=label)

    @staticmethod
    def answer(text: str) -> Answer:
        return Answer(text=text)

    # -- multi-step helpers (use with ``yield from``) -------------------------------------------
    def tap(self, text: str | None = None, **query: object) -> Iterator[Action]:
        """Scroll until an element matching the query is visible, then click its centre."""
        el = yield from self.scroll_to(text, **query)
        yield self.click(el)

    def dialog_button(self, label: str) -> Iterator[Action]:
        """Press a button of the open dialog (``button1``, ``button2``… ids), not one behind it."""
        yield from self.tap(label, where=lambda el: el.resource_id.rpartition("/")[2].startswith("button"))

    def scroll_to(self, text: str | None = None, **query: object) -> Generator[Action, None, UIElement]:
        """Swipe the main scrollable area until the element shows; return it.

        Scrolls down first, then back up; raises :class:`OracleError` when the screen stops
        changing in both directions without the element appearing.
        """
        for direction in (1, -1):
            last = None
            for _ in range(MAX_SCROLLS + 1):
                el = self.find(text, **query)
                if el is not None:
                    return el
                signature = tuple(self.labels())
                if signature == last:
                    break
                last = signature
                yield self.swipe(direction)
        raise self.error(f"scrolled the whole list and found no element {self._describe(text, query)}")

    def swipe(self, direction: int) -> Swipe:
        """A vertical swipe over the largest scrollable node: ``1`` reveals content below."""
        size = self.screen.size
        area = max(
            (el for el in self.screen.elements if el.has("scrollable") and self.visible(el)),
            key=lambda el: el.bounds.area,
            default=None,
        )
        x1, y1, x2, y2 = (
            (area.bounds.x1, area.bounds.y1, area.bounds.x2, area.bounds.y2)
            if area
            else (0, 0, size.width, size.height)
        )
        x = (x1 + x2) // 2
        low, high = y1 + (y2 - y1) * 3 // 4, y1 + (y2 - y1) // 4
        start, end = (low, high) if direction > 0 else (high, low)
        return Swipe(coordinate=(x, start), coordinate2=(x, end), duration_ms=300)

    def type_into(
        self, field: str | None, text: str, *, clear: bool = True, enter: bool = False, **query: object
    ) -> Iterator[Action]:
        """Click the field (found by its text/hint/desc or ``query``) and type ``text`` into it."""
        yield from self.tap(field, **query)
        yield Type(text=text, clear=clear, enter=enter)


class Solvable(Protocol):
    """What :class:`OraclePolicy` plays: a task's name and its expert script
    (:meth:`~agent_runtime.simphone.tasks.base.Task.solve`). A protocol, since the task base
    imports this module for :class:`OracleUI`; this module does not import it back."""

    @property
    def name(self) -> str: ...

    def solve(self, ui: OracleUI) -> Iterator[Action]: ...


class OraclePolicy:
    """``observation -> Action`` for one task instance, driven by the task's ``solve`` generator.

    When the generator is exhausted the policy answers :class:`Terminate` (success).
    """

    def __init__(self, task: Solvable) -> None:
        self.task = task
        self.ui: OracleUI | None = None
        self._script: Iterator[Action] | None = None

    def __call__(self, observation: Observation) -> Action:
        if self._script is None or self.ui is None:
            self.ui = OracleUI(observation, task_name=self.task.name)
            self._script = self.task.solve(self.ui)
        else:
            self.ui.screen = observation
        try:
            return next(self._script)
        except StopIteration:
            return Terminate(status="success")
