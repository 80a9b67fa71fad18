"""UI-TARS-1.5's replies: ``Thought: …`` then ``Action: click(start_box='(x,y)')``.

Read as ``ui_tars.action_parser.parse_action_to_structure_output`` reads them
(bytedance/UI-TARS, ``codes/ui_tars/action_parser.py``): the thought is what follows
``Thought:`` up to ``Action:``; the action is the call after the last ``Action: `` (the first of
several, which UI-TARS separates by a blank line), parsed as a Python call with keyword
arguments; a point may be written ``(x,y)``, ``<|box_start|>(x,y)<|box_end|>``,
``<point>x y</point>`` or as a box ``(x1,y1,x2,y2)`` (its centre). Each call becomes the
runtime's action in the model's coordinate space (pixels of the resized screenshot).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from agent_runtime.actions import parse_action
from agent_runtime.coords import Size
from agent_runtime.errors import ActionParseError
from agent_runtime.role_outputs import WorkerOutput

_THOUGHT = re.compile(r"(?:Thought|Reflection|Action_Summary): (.+?)(?=\s*Action: |$)", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_TYPE = re.compile(r"type\(content='(.*)'\)\s*$", re.DOTALL)
#: How far a ``scroll`` moves the finger: this share of the screen side, as UI-TARS's mobile
#: operators swipe about a third of the screen.
SCROLL_SHARE = 0.3
_HINT = "end with one line 'Action: click(start_box='(x,y)')' (or another call from the action space)"


def _point(value: Any, field: str) -> list[float]:
    numbers = [float(n) for n in _NUMBER.findall(str(value))]
    if len(numbers) == 2:
        return numbers
    if len(numbers) == 4:
        return [(numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2]
    raise ActionParseError(f"{field} {str(value)[:60]!r} is not a point '(x,y)'", field=field, hint=_HINT)


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')


def _call(source: str) -> tuple[str, dict[str, Any]]:
    """A call's name and keyword arguments (constants only)."""
    match = _TYPE.match(source)
    if match:  # UI-TARS types raw text: quotes inside need not be escaped
        return "type", {"content": _unescape(match.group(1))}
    try:
        node = ast.parse(source.replace("\n", "\\n"), mode="eval").body
    except SyntaxError:
        node = None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ActionParseError(f"the action {source[:80]!r} is not a call", field="action", hint=_HINT)
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None or not isinstance(kw.value, ast.Constant):
            raise ActionParseError(
                f"argument {kw.arg!r} of {node.func.id} is not a literal",
                field=kw.arg or "action",
                hint=_HINT,
            )
        kwargs[kw.arg] = kw.value.value
    return node.func.id, kwargs


def _scroll_end(start: list[float], direction: str, extent: Size) -> list[float]:
    """Where a scroll's finger ends: scrolling ``down`` shows what is below, so the finger moves up."""
    dx = {"left": 1, "right": -1}.get(direction, 0) * SCROLL_SHARE * extent.width
    dy = {"up": 1, "down": -1}.get(direction, 0) * SCROLL_SHARE * extent.height
    if not dx and not dy:
        raise ActionParseError(
            f"scroll direction {direction!r} is not up, down, left or right", field="direction", hint=_HINT
        )
    return [min(max(start[0] + dx, 0), extent.width - 1), min(max(start[1] + dy, 0), extent.height - 1)]


def to_action(name: str, kwargs: dict[str, Any], extent: Size) -> dict[str, Any]:
    """A UI-TARS mobile call as the runtime's action object (model space; ``extent``: its size)."""
    match name:
        case "click" | "long_press":
            return {"action": name, "coordinate": _point(kwargs.get("start_box"), "start_box")}
        case "type":
            content = str(kwargs.get("content", ""))
            submit = content.endswith("\n")
            return {"action": "type", "text": content.removesuffix("\n"), "enter": submit}
        case "scroll":
            start = _point(kwargs.get("start_box"), "start_box")
            end = _scroll_end(start, str(kwargs.get("direction", "")).strip(), extent)
            return {"action": "swipe", "coordinate": start, "coordinate2": end}
        case "drag":
            return {
                "action": "swipe",
                "coordinate": _point(kwargs.get("start_box"), "start_box"),
                "coordinate2": _point(kwargs.get("end_box"), "end_box"),
            }
        case "open_app":
            return {"action": "open_app", "text": kwargs.get("app_name", "")}
        case "press_home":
            return {"action": "system_button", "button": "Home"}
        case "press_back":
            return {"action": "system_button", "button": "Back"}
        case "wait":
            return {"action": "wait", "time": 5}
        case "finished":
            content = str(kwargs.get("content", "")).strip()
            if content:
                return {"action": "answer", "text": content}
            return {"action": "terminate", "status": "success"}
    raise ActionParseError(
        f"UI-TARS action {name!r} is not in its mobile action space",
        field="action",
        hint="use click, long_press, type, scroll, open_app, drag, press_home, press_back, wait or finished",
    )


def parse_ui_tars(text: str, extent: Size) -> WorkerOutput:
    """A UI-TARS reply -> its action (pixels of the resized screenshot of size ``extent``).

    >>> parse_ui_tars("Thought: Open it.\\nAction: click(start_box='(100,200)')", Size(1092, 2408)).action
    Click(action='click', coordinate=(100.0, 200.0))
    """
    text = text.strip()
    if "Action:" not in text:
        raise ActionParseError("the reply has no 'Action:' line", field="action", hint=_HINT)
    thought = _THOUGHT.search(text)
    source = text.split("Action:")[-1].strip().split(")\n\n")[0].strip()
    if not source.endswith(")"):
        source += ")"
    if "<point>" in source:
        source = source.replace("start_point=", "start_box=").replace("end_point=", "end_box=")
        source = source.replace("point=", "start_box=")
    name, kwargs = _call(source)
    raw = to_action(name, kwargs, extent)
    return WorkerOutput(
        thought=thought.group(1).strip() if thought else "",
        action=parse_action(raw),
        raw_action={"name": name, "arguments": kwargs},
        description=thought.group(1).strip() if thought else "",
    )
