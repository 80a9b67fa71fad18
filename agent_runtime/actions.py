"""The one action schema: every action a role can emit and a device can execute.

Actions are a pydantic discriminated union on the ``action`` field, in the Mobile-Agent-v3 /
GUI-Owl JSON form (``{"action": "click", "coordinate": [x, y]}``). Coordinates in an action
parsed from a model are in the *model's* coordinate space; :func:`to_screen` maps them to screen
pixels (see :mod:`agent_runtime.coords`). Devices only ever receive screen-pixel actions.

Parsing accepts both the Mobile-Agent-v3 object and GUI-Owl ``mobile_use``/``computer_use`` tool
calls (``{"name": "mobile_use", "arguments": {...}}``), plus a few common aliases, and raises
:class:`~agent_runtime.errors.ActionParseError` naming the bad field. GUI-Owl's whole action space
(Mobile-Agent-v3 paper, Tables 9 and 10, and the ``computer_use`` tool) parses: mobile ``long_press``
with ``time`` in seconds, ``open``, ``interact``; desktop ``left_click_drag`` from the pointer,
``triple_click`` and ``hscroll``.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from agent_runtime.coords import CoordMapper
from agent_runtime.errors import ActionParseError, ParseError
from agent_runtime.jsonish import extract_json_object

#: The largest coordinate of any space (pixels of a screen far beyond 8K). Coordinates are
#: positions on a screen, so a negative, bigger or non-finite one is a malformed reply to re-ask
#: about — never something to clamp onto the screen edge and tap.
MAX_COORDINATE = 100_000
#: Integers beyond this are not numbers a model means (and would overflow a float).
_MAX_MAGNITUDE = 10**12


def _number(value: Any) -> float:
    """A finite real number from a number or numeric string.

    Booleans, ``NaN``/``Infinity`` (``json`` reads them, and ``1e400`` overflows to infinity),
    their string forms (``"nan"``) and absurd magnitudes raise ``ValueError`` here, at the
    boundary, instead of crashing the coordinate mapping or the device later.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is a boolean, not a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not a number") from None
    if isinstance(value, int):
        if abs(value) > _MAX_MAGNITUDE:
            raise ValueError(f"{str(value)[:40]} is out of range")
        value = float(value)
    if not isinstance(value, float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number (NaN, Infinity or an overflow such as 1e400)")
    if abs(value) > _MAX_MAGNITUDE:
        raise ValueError(f"{value:g} is out of range")
    return value


def _point(value: Any) -> Any:
    """Accept ``[x, y]``, ``(x, y)``, ``"[x, y]"``, ``"x, y"``, ``{"x":…, "y":…}`` and a
    bounding box ``[x1, y1, x2, y2]`` (its centre); each value is checked by :func:`_number`."""
    if isinstance(value, str):
        text = value.strip().strip("()[]")
        parts = [p for p in text.replace(",", " ").split() if p]
        value = parts
    if isinstance(value, dict) and {"x", "y"} <= value.keys():
        value = [value["x"], value["y"]]
    if not isinstance(value, list | tuple):
        raise ValueError(f"a point is [x, y], got {type(value).__name__}")
    if len(value) == 4:
        # A bounding box: act on its centre.
        x1, y1, x2, y2 = (_number(v) for v in value)
        value = [(x1 + x2) / 2, (y1 + y2) / 2]
    return value


def _text(value: str) -> str:
    """Text a device can type and a trace can store: no NUL, no lone surrogate (``"\\ud800"``)."""
    if "\x00" in value:
        raise ValueError("the text contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the text contains a lone surrogate, which is not a character") from None
    return value


def _said(value: str) -> str:
    """An answer (or a question for the user) must say something: an empty one is a malformed reply."""
    if not value.strip():
        raise ValueError("the text is empty")
    return value


def _flag(value: Any) -> Any:
    """GUI-Owl sends ``clear``/``enter`` as 0/1; accept booleans, ints and "true"/"1" strings."""
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes"}
    return value


Coordinate = Annotated[float, BeforeValidator(_number), Field(ge=0, le=MAX_COORDINATE)]
Point = Annotated[tuple[Coordinate, Coordinate], BeforeValidator(_point)]
Flag = Annotated[bool, BeforeValidator(_flag)]
#: Text typed on a device, answered, or naming an app or key.
Text = Annotated[str, AfterValidator(_text)]
#: An element index of the indexed UI tree (``[12] Button; clickable; OK; …``) — ReachAgent's
#: action alignment: text-only models name the element, the runtime acts on its centre.
ElementIndex = Annotated[int, BeforeValidator(_number), Field(ge=0, le=1_000_000)]
#: The longest press, swipe or drag a model may ask for.
MAX_MILLIS = 10_000
Millis = Annotated[int, BeforeValidator(_number), Field(ge=1, le=MAX_MILLIS)]
#: Wheel notches of one scroll (either axis).
Notches = Annotated[int, BeforeValidator(_number), Field(ge=-50, le=50)]
Direction = Literal["up", "down", "left", "right"]
#: Fields that exist only for index actions; left out of the JSON form when unset.
_INDEX_FIELDS = ("index", "direction")


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The Mobile-Agent-v3 JSON form (what a model is asked to write).

        Index actions drop their unset coordinates; coordinate actions drop the unset index
        fields, so the JSON of every pre-existing action is unchanged.
        """
        data = self.model_dump(mode="json", exclude_defaults=False)
        for name in _INDEX_FIELDS:
            if data.get(name, 0) is None:
                del data[name]
        if data.get("index") is not None:
            for name in ("coordinate", "coordinate2"):
                if name in data and data[name] is None:
                    del data[name]
        return data

    def __repr_args__(self) -> Any:
        # Keep reprs of coordinate actions as they were: hide unset index fields.
        return [(k, v) for k, v in super().__repr_args__() if not (k in _INDEX_FIELDS and v is None)]

    @property
    def by_index(self) -> bool:
        """True for an element-index action (resolved by :mod:`agent_runtime.alignment`)."""
        return getattr(self, "index", None) is not None

    def points(self) -> dict[str, tuple[float, float]]:
        """Coordinate fields of this action, by field name."""
        return {
            name: getattr(self, name)
            for name in ("coordinate", "coordinate2")
            if getattr(self, name, None) is not None
        }


def _field_error(field: str, message: str) -> PydanticCustomError:
    """A validation error that names ``field`` (model-level checks have no location of their own)."""
    return PydanticCustomError("action_field", message, {"field": field})


def _one_target(action: _Action, *, required: bool = True) -> None:
    """Exactly one of ``coordinate`` / ``index`` (index actions name a UI-tree element)."""
    has_point = getattr(action, "coordinate", None) is not None
    has_index = getattr(action, "index", None) is not None
    if has_point and has_index:
        raise _field_error("index", "give either 'coordinate' or 'index', not both")
    if required and not (has_point or has_index):
        raise _field_error("coordinate", "Field required: give 'coordinate' [x, y] or an element 'index'")


class _PointOrIndex(_Action):
    """A touch on ``coordinate``, or on the centre of UI-tree element ``index`` (subclasses
    declare both fields after ``action``, so the JSON form keeps ``action`` first)."""

    @model_validator(mode="after")
    def _check_target(self) -> Any:
        _one_target(self)
        return self


class Click(_PointOrIndex):
    action: Literal["click"] = "click"
    coordinate: Point | None = None
    index: ElementIndex | None = None


class LongPress(_PointOrIndex):
    """Press ``coordinate`` (or element ``index``) for ``duration_ms``.

    GUI-Owl gives the length as ``time`` in seconds; it is read into ``duration_ms`` (so the JSON
    form keeps one shape) and bounded like it: 0.001 to 10 seconds.
    """

    action: Literal["long_press"] = "long_press"
    coordinate: Point | None = None
    index: ElementIndex | None = None
    duration_ms: Millis = 800

    @model_validator(mode="before")
    @classmethod
    def _seconds_to_millis(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "time" not in data:
            return data
        data = dict(data)
        seconds = data.pop("time")
        if "duration_ms" in data:
            raise _field_error("time", "give 'time' (seconds) or 'duration_ms', not both")
        try:
            millis = round(_number(seconds) * 1000)
        except ValueError as exc:
            raise _field_error("time", str(exc)) from None
        if not 1 <= millis <= MAX_MILLIS:
            raise _field_error("time", f"a long press lasts 0.001 to {MAX_MILLIS // 1000} seconds")
        data["duration_ms"] = millis
        return data


class Swipe(_Action):
    """From ``coordinate`` to ``coordinate2``; or, by index, along element ``index``'s central
    axis in ``direction`` (the finger's direction: ``up`` scrolls the content down)."""

    action: Literal["swipe"] = "swipe"
    coordinate: Point | None = None
    coordinate2: Point | None = None
    index: ElementIndex | None = None
    direction: Direction | None = None
    duration_ms: Millis = 500

    @model_validator(mode="after")
    def _check_target(self) -> Any:
        _one_target(self)
        if self.index is not None:
            if self.coordinate2 is not None:
                raise _field_error("coordinate2", "an index swipe takes 'direction', not 'coordinate2'")
            if self.direction is None:
                raise _field_error(
                    "direction", "Field required: an index swipe needs 'direction' (up|down|left|right)"
                )
        else:
            if self.coordinate2 is None:
                raise _field_error(
                    "coordinate2", "Field required: a swipe needs 'coordinate2' (or 'index' + 'direction')"
                )
            if self.direction is not None:
                raise _field_error(
                    "direction", "'direction' goes with 'index'; a coordinate swipe takes 'coordinate2'"
                )
        return self


class Type(_Action):
    """Type ``text`` into the focused field; ``clear`` empties it first, ``enter`` submits after.

    With ``index`` the runtime first taps that UI-tree element (focusing it), then types.
    """

    action: Literal["type"] = "type"
    text: Annotated[Text, Field(max_length=10_000)]
    clear: Flag = False
    enter: Flag = False
    index: ElementIndex | None = None


class Key(_Action):
    """Press keys together (``["ctrl", "c"]``) or one named key (mobile ``key {text}``)."""

    action: Literal["key"] = "key"
    keys: list[Annotated[Text, Field(min_length=1, max_length=64)]] = Field(min_length=1, max_length=10)


class SystemButton(_Action):
    action: Literal["system_button"] = "system_button"
    button: Literal["Back", "Home", "Menu", "Enter"]


class OpenApp(_Action):
    """Open an app by its *name* (label) — the device resolves it to a package."""

    action: Literal["open_app"] = "open_app"
    text: Annotated[Text, Field(min_length=1, max_length=200)]


class Wait(_Action):
    action: Literal["wait"] = "wait"
    time: Annotated[float, BeforeValidator(_number), Field(ge=0, le=60)] = 1.0


class Answer(_Action):
    """Answer the user's question; the text becomes the run's answer."""

    action: Literal["answer"] = "answer"
    text: Annotated[Text, AfterValidator(_said), Field(max_length=10_000)]


class Interact(_Action):
    """Ask the user ``text`` (GUI-Owl's ``interact``): the task needs something only a person can
    say. Like an answer it changes nothing on the device; the run records the question."""

    action: Literal["interact"] = "interact"
    text: Annotated[Text, AfterValidator(_said), Field(max_length=10_000)]


class Terminate(_Action):
    action: Literal["terminate"] = "terminate"
    status: Literal["success", "failure"]


class Scroll(_Action):
    """Scroll by ``pixels`` wheel notches (−5..5, positive = up) at ``coordinate`` (or the centre),
    or at the centre of UI-tree element ``index``."""

    action: Literal["scroll"] = "scroll"
    pixels: Notches
    coordinate: Point | None = None
    index: ElementIndex | None = None

    @model_validator(mode="after")
    def _check_target(self) -> Any:
        _one_target(self, required=False)
        return self


class HScroll(_Action):
    """Scroll sideways by ``pixels`` wheel notches at ``coordinate`` (or the centre of the screen).

    Positive scrolls right (reveals what is right of the view), negative left — the sign of
    ``pyautogui.hscroll``, which sends X11 button 7 for right and 6 for left. Phones swipe instead.
    """

    action: Literal["hscroll"] = "hscroll"
    pixels: Notches
    coordinate: Point | None = None


class Drag(_Action):
    action: Literal["drag"] = "drag"
    coordinate: Point
    coordinate2: Point


class LeftClickDrag(_Action):
    """GUI-Owl's desktop ``left_click_drag``: press the left button where the pointer *is* (the
    model puts it there with ``mouse_move``) and drag to ``coordinate``. Given a second point,
    ``left_click_drag`` is a :class:`Drag` instead."""

    action: Literal["left_click_drag"] = "left_click_drag"
    coordinate: Point


class DoubleClick(_Action):
    action: Literal["double_click"] = "double_click"
    coordinate: Point


class TripleClick(_Action):
    """Three left clicks (selects a line or paragraph on a desktop); phones have no equivalent."""

    action: Literal["triple_click"] = "triple_click"
    coordinate: Point


class RightClick(_Action):
    action: Literal["right_click"] = "right_click"
    coordinate: Point


class MiddleClick(_Action):
    action: Literal["middle_click"] = "middle_click"
    coordinate: Point


class MouseMove(_Action):
    action: Literal["mouse_move"] = "mouse_move"
    coordinate: Point


Action = Annotated[
    Click
    | LongPress
    | Swipe
    | Type
    | Key
    | SystemButton
    | OpenApp
    | Wait
    | Answer
    | Interact
    | Terminate
    | Scroll
    | HScroll
    | Drag
    | LeftClickDrag
    | DoubleClick
    | TripleClick
    | RightClick
    | MiddleClick
    | MouseMove,
    Field(discriminator="action"),
]

_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
ACTION_TYPES: tuple[str, ...] = tuple(sorted(_ADAPTER.json_schema()["discriminator"]["mapping"]))

#: Names models use for our actions.
_ALIASES = {
    "tap": "click",
    "left_click": "click",
    "long_click": "long_press",
    "input_text": "type",
    "input": "type",
    "hotkey": "key",
    "press": "key",
    "launch_app": "open_app",
    "open": "open_app",
    "done": "terminate",
    "ask_user": "interact",
    "ask": "interact",
}
#: Field names models use for our fields.
_FIELD_ALIASES = {"point": "coordinate", "start": "coordinate", "end": "coordinate2", "app": "text"}
_BUTTONS = {"back": "Back", "home": "Home", "menu": "Menu", "enter": "Enter"}
_POINT_HINT = (
    f"a point is two plain numbers [x, y] from 0 to {MAX_COORDINATE} in the declared coordinate "
    "space, e.g. [540, 1200]; not NaN, Infinity, a boolean or a quoted word"
)
#: How to fix a bad field, fed back to the model with the error.
_FIELD_HINTS = {
    "coordinate": _POINT_HINT,
    "coordinate2": _POINT_HINT,
    "index": "index is the plain integer in [brackets] before an element of the UI tree",
    "time": "time is a number of seconds from 0 to 60",
    "long_press.time": "time is how long to press, in seconds from 0.001 to 10, e.g. 2",
    "pixels": "pixels is an integer number of wheel notches from -5 to 5",
    "duration_ms": "duration_ms is an integer number of milliseconds from 1 to 10000",
    "text": "text is a plain string",
    "keys": 'keys is a list of key names, e.g. ["ctrl", "c"]',
}


def _normalise(obj: dict[str, Any]) -> dict[str, Any]:
    data = dict(obj)
    if "action_type" in data and "action" not in data:
        data["action"] = data.pop("action_type")
    kind = data.get("action")
    if not isinstance(kind, str):
        raise ActionParseError(
            f"action object needs a string 'action' field, got {kind!r}",
            field="action",
            hint=f"use one of: {', '.join(ACTION_TYPES)}",
        )
    kind = _ALIASES.get(kind.strip().lower(), kind.strip().lower())
    data["action"] = kind
    # A role's own "ask the person first" flag (see agent_runtime.safety); the raw action keeps it.
    data.pop("confirm", None)
    for old, new in _FIELD_ALIASES.items():
        if old in data and new not in data:
            data[new] = data.pop(old)
    if kind == "left_click_drag" and "coordinate2" in data:
        # From one point to another it is a plain drag; with one point it starts at the pointer.
        kind = data["action"] = "drag"
    if kind == "key":
        if "keys" not in data and "text" in data:
            text = data.pop("text")
            data["keys"] = [text] if isinstance(text, str) else text
        if isinstance(data.get("keys"), str):
            data["keys"] = [k for k in data["keys"].replace("+", " ").split() if k]
    if kind == "system_button" and isinstance(data.get("button"), str):
        data["button"] = _BUTTONS.get(data["button"].strip().lower(), data["button"])
    if kind == "terminate" and isinstance(data.get("status"), str):
        data["status"] = data["status"].strip().lower()
    return data


def parse_action(obj: dict[str, Any] | str) -> Action:
    """Parse an action from a dict, a JSON string, or a GUI-Owl tool call.

    >>> parse_action({"action": "click", "coordinate": [10, 20]})
    Click(action='click', coordinate=(10.0, 20.0))
    >>> parse_action('{"name": "mobile_use", "arguments": {"action": "system_button", "button": "back"}}')
    SystemButton(action='system_button', button='Back')
    """
    if isinstance(obj, str):
        try:
            obj = extract_json_object(obj)
        except ParseError as exc:
            raise ActionParseError(exc.message, field="action", hint=exc.hint) from None
    if not isinstance(obj, dict):
        raise ActionParseError(f"an action must be a JSON object, got {type(obj).__name__}", field="action")
    if "arguments" in obj and isinstance(obj.get("name"), str):
        args = obj["arguments"]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (json.JSONDecodeError, RecursionError):
                try:
                    args = extract_json_object(args)
                except ParseError as exc:
                    raise ActionParseError(exc.message, field="arguments", hint=exc.hint) from None
        if not isinstance(args, dict):
            raise ActionParseError("tool call 'arguments' must be an object", field="arguments")
        obj = args
    data = _normalise(obj)
    if data["action"] not in ACTION_TYPES:
        raise ActionParseError(
            f"unknown action {data['action']!r}",
            field="action",
            hint=f"use one of: {', '.join(ACTION_TYPES)}",
        )
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"] if str(p) != data["action"]]
        field = str((err.get("ctx") or {}).get("field") or (loc[0] if loc else "action"))
        raise ActionParseError(
            f"invalid '{data['action']}' action: field '{field}': {err['msg']}",
            field=field,
            hint=_FIELD_HINTS.get(f"{data['action']}.{field}", _FIELD_HINTS.get(field)),
        ) from None


def to_screen(action: Action, mapper: CoordMapper) -> Action:
    """Map every coordinate of ``action`` from the model's space to screen pixels."""
    points = action.points()
    if not points:
        return action
    return action.model_copy(update={k: mapper.to_screen(*v) for k, v in points.items()})


class ActionResult(BaseModel):
    """What a device reports after executing an action."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    message: str = ""
    error: str | None = None
    duration_ms: float = 0.0
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def success(cls, message: str = "", **data: Any) -> ActionResult:
        return cls(ok=True, message=message, data=data)

    @classmethod
    def failure(cls, error: str, **data: Any) -> ActionResult:
        return cls(ok=False, error=error, data=data)

    @classmethod
    def recorded(cls, action: Answer | Interact | Terminate) -> ActionResult:
        """Answer, interact and terminate change nothing on a device; every backend records them alike."""
        if isinstance(action, Answer):
            return cls.success("answer recorded", answer=action.text)
        if isinstance(action, Interact):
            return cls.success("question for the user recorded", question=action.text)
        return cls.success(f"terminate: {action.status}", status=action.status)


__all__ = [
    "ACTION_TYPES",
    "Action",
    "ActionResult",
    "Answer",
    "Click",
    "DoubleClick",
    "Drag",
    "HScroll",
    "Interact",
    "Key",
    "LeftClickDrag",
    "LongPress",
    "MiddleClick",
    "MouseMove",
    "OpenApp",
    "RightClick",
    "Scroll",
    "Swipe",
    "SystemButton",
    "Terminate",
    "TripleClick",
    "Type",
    "Wait",
    "parse_action",
    "to_screen",
]
