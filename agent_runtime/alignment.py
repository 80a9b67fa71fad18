"""Action alignment (ReachAgent §4.1): element-index actions → screen-pixel actions.

A text-only model reads the indexed UI tree (``[12] Button; clickable; OK; [40,900][400,1000]``)
and names an element instead of computing pixels: ``{"action": "click", "index": 12}``. Working
out a centre from bounds is exactly where a small model fails, so the runtime does it: a touch
acts on the element's centre, a swipe runs along the element's central axis (from 3/4 to 1/4 of
its extent, the way the SimPhone expert scrolls), a ``type`` with an index taps the field first.

Only elements the role was shown (the ``[i]`` lines of :attr:`Observation.indexed_tree`) can be
named. A touch needs an element that reacts — actionable itself, or inside a clickable ancestor
(tapping a list row's label taps the row); a swipe acts on the nearest scrollable element at or
above the one named. Anything else raises :class:`ActionParseError` whose message lists what *can*
be named, and the role caller feeds it back to the model as a re-ask.
"""

from __future__ import annotations

import re

from agent_runtime.actions import Action, Click, LongPress, Scroll, Swipe, Type
from agent_runtime.errors import ActionParseError
from agent_runtime.observation import Observation, UIElement

_INDEXED_LINE = re.compile(r"^\s*\[(\d+)\]", re.MULTILINE)
_TOUCH_FLAGS = frozenset({"clickable", "long-clickable", "checkable"})
#: Swipe span along the element's axis, as fractions of its extent (start, end for "up"/"left").
_SWIPE_FAR, _SWIPE_NEAR = 3 / 4, 1 / 4
#: How many candidate indices an error message lists.
_LIST_MAX = 12


def shown_indices(observation: Observation) -> list[int]:
    """Element indices of the indexed tree a role sees, in document order."""
    return [int(m) for m in _INDEXED_LINE.findall(observation.indexed_tree)]


def _ancestors(elements: list[UIElement], el: UIElement) -> list[UIElement]:
    out = []
    node = el
    while node.parent is not None:
        node = elements[node.parent]
        out.append(node)
    return out


def _touchable(elements: list[UIElement], el: UIElement) -> bool:
    if el.actionable:
        return True
    cx, cy = el.bounds.center
    return any(a.flags & _TOUCH_FLAGS and a.bounds.contains(cx, cy) for a in _ancestors(elements, el))


def _scroll_target(elements: list[UIElement], el: UIElement) -> UIElement | None:
    if el.has("scrollable"):
        return el
    return next((a for a in _ancestors(elements, el) if a.has("scrollable")), None)


def _listing(indices: list[int]) -> str:
    shown = ", ".join(str(i) for i in indices[:_LIST_MAX])
    return shown + (", …" if len(indices) > _LIST_MAX else "") if indices else "none"


def element_for(action: Action, observation: Observation) -> UIElement:
    """The element an index action names, checked against what the role was shown.

    Raises :class:`ActionParseError` (field ``index``) for an index that is not in the tree, or
    names an element the action cannot act on.
    """
    index = getattr(action, "index", None)
    if index is None:
        raise ActionParseError(f"the {action.action!r} action has no element index", field="index")
    if not observation.ui_xml:
        raise ActionParseError(
            "this screen has no UI tree, so element indices cannot be used",
            field="index",
            hint='use a coordinate action, e.g. {"action": "click", "coordinate": [x, y]}',
        )
    elements = observation.elements
    shown = shown_indices(observation)
    if index not in shown:
        raise ActionParseError(
            f"element index {index} is not in the UI tree of this screen",
            field="index",
            hint=f"use an index shown in [brackets] in the UI tree ({len(shown)} elements: "
            f"{_listing(shown)})",
        )
    el = elements[index]
    if action.action == "swipe" or action.action == "scroll":
        if _scroll_target(elements, el) is None:
            scrollable = [i for i in shown if elements[i].has("scrollable")]
            raise ActionParseError(
                f"element {index} ({_name(el)}) is not scrollable and is not inside a scrollable element",
                field="index",
                hint=f"swipe on a scrollable element: {_listing(scrollable)}",
            )
    elif not _touchable(elements, el):
        touchable = [i for i in shown if _touchable(elements, elements[i])]
        raise ActionParseError(
            f"element {index} ({_name(el)}) cannot be acted on: it is not clickable, editable or "
            "inside a clickable element",
            field="index",
            hint=f"pick an actionable element: {_listing(touchable)}",
        )
    return el


def _name(el: UIElement) -> str:
    cls = el.class_name.rsplit(".", 1)[-1] or "element"
    return f"{cls} {el.label!r}" if el.label else cls


def swipe_points(el: UIElement, direction: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """Start and end of a swipe along ``el``'s central axis; ``direction`` is the finger's.

    >>> from agent_runtime.observation import Bounds
    >>> swipe_points(UIElement(index=0, bounds=Bounds(x1=0, y1=400, x2=1000, y2=2000)), "up")
    ((500, 1600), (500, 800))
    """
    b = el.bounds
    cx, cy = b.center
    w, h = b.x2 - b.x1, b.y2 - b.y1
    far_y, near_y = b.y1 + round(h * _SWIPE_FAR), b.y1 + round(h * _SWIPE_NEAR)
    far_x, near_x = b.x1 + round(w * _SWIPE_FAR), b.x1 + round(w * _SWIPE_NEAR)
    match direction:
        case "up":
            return (cx, far_y), (cx, near_y)
        case "down":
            return (cx, near_y), (cx, far_y)
        case "left":
            return (far_x, cy), (near_x, cy)
        case "right":
            return (near_x, cy), (far_x, cy)
    raise ActionParseError(f"unknown swipe direction {direction!r}", field="direction")


def resolve_index(action: Action, observation: Observation) -> Action:
    """The screen-pixel action an index action means on ``observation``.

    Click/long-press act on the element's centre; a swipe runs along the central axis of the
    scrollable element (the one named or its nearest scrollable ancestor); a scroll acts at its
    centre. A ``type`` with an index returns the plain ``type`` (see :func:`screen_actions` for
    the focusing tap). Actions without an index are returned unchanged.
    """
    if not action.by_index:
        return action
    el = element_for(action, observation)
    match action:
        case Click() | LongPress():
            return action.model_copy(update={"coordinate": el.bounds.center, "index": None})
        case Swipe(direction=direction):
            target = _scroll_target(observation.elements, el) or el
            start, end = swipe_points(target, direction or "up")
            return action.model_copy(
                update={"coordinate": start, "coordinate2": end, "index": None, "direction": None}
            )
        case Scroll():
            target = _scroll_target(observation.elements, el) or el
            return action.model_copy(update={"coordinate": target.bounds.center, "index": None})
        case Type():
            return action.model_copy(update={"index": None})
    raise ActionParseError(f"the {action.action!r} action cannot take an element index", field="index")


def screen_actions(action: Action, observation: Observation) -> list[Action]:
    """What the device executes, in order: one action, or for ``type`` by index the tap that
    focuses the field followed by the typing."""
    screen = resolve_index(action, observation)
    if isinstance(action, Type) and action.index is not None:
        el = element_for(action, observation)
        return [Click(coordinate=el.bounds.center), screen]
    return [screen]


def check_index(action: Action, observation: Observation | None) -> None:
    """Raise :class:`ActionParseError` when an index action cannot be resolved on this screen
    (the Worker's parser calls this so a bad index becomes a re-ask, not a failed step)."""
    if not action.by_index:
        return
    if observation is None:
        raise ActionParseError(
            "element indices need the UI tree, and this role is shown screenshots only",
            field="index",
            hint='use coordinates, e.g. {"action": "click", "coordinate": [x, y]}',
        )
    screen_actions(action, observation)


__all__ = ["check_index", "element_for", "resolve_index", "screen_actions", "shown_indices", "swipe_points"]
