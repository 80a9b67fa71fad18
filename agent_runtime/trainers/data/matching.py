"""When does a model's action count as the expert's? (IRR's a_k = a*, MobileRL §4.2)

Both actions are compared in screen pixels (JSON form). They match when their types agree and

* touches (click, long press, …) land inside the expert's *target element* — the element the
  expert touched; without a known element, within ``tolerance`` pixels of the expert's point;
* ``type`` / ``answer`` texts are equal after case-folding and collapsing whitespace;
  ``open_app`` names likewise;
* ``system_button`` buttons, ``terminate`` statuses and ``key`` keys are equal;
* swipes and drags go along the same axis in the same direction.
"""

from __future__ import annotations

from typing import Any

TOUCH = ("click", "long_press", "double_click", "right_click", "middle_click", "mouse_move")


def _norm(text: Any) -> str:
    return " ".join(str(text or "").casefold().split())


def _direction(action: dict[str, Any]) -> tuple[str, int] | None:
    a, b = action.get("coordinate"), action.get("coordinate2")
    if a is None or b is None:
        return None
    dx, dy = float(b[0]) - float(a[0]), float(b[1]) - float(a[1])
    if abs(dy) >= abs(dx):
        return "y", (dy > 0) - (dy < 0)
    return "x", (dx > 0) - (dx < 0)


def actions_match(
    candidate: dict[str, Any],
    expert: dict[str, Any],
    *,
    target_bounds: tuple[int, int, int, int] | None = None,
    tolerance: float = 40.0,
) -> bool:
    """Whether ``candidate`` does what ``expert`` did (module docstring).

    >>> expert = {"action": "click", "coordinate": [150, 50]}
    >>> actions_match({"action": "click", "coordinate": [105, 52]}, expert, target_bounds=(100, 0, 200, 100))
    True
    >>> actions_match({"action": "type", "text": "Hello  World"}, {"action": "type", "text": "hello world"})
    True
    >>> actions_match({"action": "click", "coordinate": [90, 50]}, expert, target_bounds=(100, 0, 200, 100))
    False
    """
    kind = candidate.get("action")
    if kind != expert.get("action"):
        return False
    if kind in TOUCH:
        x, y = (float(v) for v in candidate["coordinate"])
        if target_bounds is not None:
            x1, y1, x2, y2 = target_bounds
            return x1 <= x < x2 and y1 <= y < y2
        ex, ey = (float(v) for v in expert["coordinate"])
        return abs(x - ex) <= tolerance and abs(y - ey) <= tolerance
    if kind in ("type", "answer", "open_app"):
        return _norm(candidate.get("text")) == _norm(expert.get("text"))
    if kind == "system_button":
        return candidate.get("button") == expert.get("button")
    if kind == "terminate":
        return candidate.get("status") == expert.get("status")
    if kind == "key":
        return [_norm(k) for k in candidate.get("keys", [])] == [_norm(k) for k in expert.get("keys", [])]
    if kind in ("swipe", "drag"):
        return _direction(candidate) == _direction(expert)
    if kind == "scroll":
        return (candidate.get("pixels", 0) > 0) == (expert.get("pixels", 0) > 0)
    return True  # wait: the type is the action
