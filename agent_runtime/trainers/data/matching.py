"""When does a model's action count as the expert's? One module, two papers' answers.

:func:`actions_match` — IRR's a_k = a* (MobileRL §4.2), on agent-runtime's action JSON in screen
pixels. The actions match when their types agree and

* touches (click, long press, …) land inside the expert's *target element* — the element the
  expert touched; without a known element, within ``tolerance`` pixels of the expert's point;
* ``type`` / ``answer`` texts are equal after case-folding and collapsing whitespace;
  ``open_app`` names likewise;
* ``system_button`` buttons, ``terminate`` statuses and ``key`` keys are equal;
* swipes and drags go along the same axis in the same direction.

:func:`foresight_match` — Hi-Agent's r_env and r_ℓ (Hi-Agent §4.2, eq. 4), on
:class:`ForesightAction` (a type and normalised points, AitW's record): the types agree and every
point of the oracle's is within ε (L2). It is stricter and knows no elements or texts: Hi-Agent's
GRPO rewards (:mod:`agent_runtime.trainers.hi_agent.grpo_rewards`) use it as the paper does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from agent_runtime.errors import ParseError
from agent_runtime.jsonish import extract_json_object

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
    """Whether ``candidate`` does what ``expert`` did, by IRR's rules (module docstring).

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


class ForesightAction(BaseModel):
    """An action as r_env compares it: a type and normalised points."""

    model_config = ConfigDict(frozen=True)

    action_type: str
    touch_point: tuple[float, float] | None = None
    lift_point: tuple[float, float] | None = None
    typed_text: str = ""

    @field_validator("action_type")
    @classmethod
    def _canonical_type(cls, value: str) -> str:
        return value.strip().lower().replace("-", "_").replace(" ", "_")

    @classmethod
    def coerce(cls, value: Any, image_size: Sequence[float] | None = None) -> ForesightAction:
        """From a ForesightAction, a Hi-Agent ``solution`` dict, agent-runtime action JSON, or a reply text.

        Points above 1 are pixels: they are divided by ``image_size`` (width, height), which must
        then be given. Raises :class:`~agent_runtime.errors.ParseError` for anything else.
        """
        if isinstance(value, ForesightAction):
            action = value
        else:
            obj = extract_json_object(value) if isinstance(value, str) else value
            if not isinstance(obj, Mapping):
                raise ParseError(f"not an action: {value!r}")
            action = cls._from_mapping(obj)
        return action._normalised(image_size)

    @classmethod
    def _from_mapping(cls, obj: Mapping[str, Any]) -> ForesightAction:
        if "action_type" in obj:
            try:
                return cls.model_validate({k: obj[k] for k in cls.model_fields if obj.get(k) is not None})
            except ValueError as exc:
                raise ParseError(f"bad Hi-Agent action {dict(obj)!r}: {exc}") from None
        from agent_runtime.actions import parse_action

        action = parse_action(dict(obj))
        points = list(action.points().values())
        return cls(
            action_type=action.action,
            touch_point=points[0] if points else None,
            lift_point=points[1] if len(points) > 1 else None,
            typed_text=str(getattr(action, "text", "") or ""),
        )

    def _normalised(self, image_size: Sequence[float] | None) -> ForesightAction:
        points = [p for p in (self.touch_point, self.lift_point) if p is not None]
        if not any(c > 1.0 for p in points for c in p):
            return self
        if not image_size or len(image_size) != 2 or min(image_size) <= 0:
            raise ParseError(
                f"action {self.action_type} has pixel coordinates but no image_size to normalise them",
                hint="add an image_size [width, height] column, or store normalised coordinates",
            )
        w, h = float(image_size[0]), float(image_size[1])

        def scale(p: tuple[float, float] | None) -> tuple[float, float] | None:
            return None if p is None else (p[0] / w, p[1] / h)

        return self.model_copy(
            update={"touch_point": scale(self.touch_point), "lift_point": scale(self.lift_point)}
        )


def _end_point(action: ForesightAction) -> tuple[float, float] | None:
    """Where a swipe ends; None for taps, whose AitW records repeat the touch point as lift point."""
    lift = action.lift_point
    return None if lift is None or lift == action.touch_point else lift


def foresight_match(predicted: ForesightAction, oracle: ForesightAction, *, epsilon: float = 0.002) -> bool:
    """Hi-Agent's r_env / r_ℓ test (§4.2): same type, each of the oracle's points within ``epsilon`` (L2).

    The touch point is compared, and the lift point too when the oracle's differs from its touch
    point (a swipe's end); actions without points (typing, system buttons) match on their type
    alone, as in the paper.

    >>> tap = ForesightAction(action_type="click", touch_point=(0.5, 0.5), lift_point=(0.5, 0.5))
    >>> foresight_match(ForesightAction(action_type="CLICK", touch_point=(0.5009, 0.5012)), tap)
    True
    >>> foresight_match(ForesightAction(action_type="click", touch_point=(0.5016, 0.5016)), tap)
    False
    """
    if predicted.action_type != oracle.action_type:
        return False
    pairs = ((predicted.touch_point, oracle.touch_point), (_end_point(predicted), _end_point(oracle)))
    for mine, target in pairs:
        if target is None:
            continue
        if mine is None or math.dist(mine, target) >= epsilon:
            return False
    return True
