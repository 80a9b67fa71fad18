"""GUI-Owl end to end: one model, one call per step, in its native tool-call format.

The system message defines the ``mobile_use`` (phones) or ``computer_use`` (desktops) function
with GUI-Owl's whole action space (Mobile-Agent-v3 paper, Tables 9 and 10 and the function
schema of its appendix); the user turn gives the query, one line per earlier step (GUI-Owl keeps
only each step's ``<conclusion>`` in its history) and the screen. The model replies
``<thinking>…</thinking><tool_call>{"name": "mobile_use", "arguments": {…}}</tool_call>
<conclusion>…</conclusion>``; :func:`parse_gui_owl` reads it with the Worker's parser, held to
this platform's GUI-Owl actions.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.config import shows_tree
from agent_runtime.observation import Observation
from agent_runtime.role_outputs import WorkerOutput
from agent_runtime.roles.worker import INTERACT_DESCRIPTION, parse_worker
from agent_runtime.specs import prompt_template

TEMPLATE = prompt_template("single")
SYSTEM_TEMPLATE = prompt_template("single", system=True)
REPLY_FORMAT = (
    '<thinking>…</thinking> <tool_call>{"name": "FUNCTION", "arguments": {"action": …}}</tool_call> '
    "<conclusion>…</conclusion>"
)

#: GUI-Owl's actions per platform (our canonical names; ``open`` and ``left_click`` are read as
#: ``open_app`` and ``click``), each with the definition the function schema gives it.
ACTIONS: dict[str, dict[str, str]] = {
    "mobile": {
        "key": "Perform a key event on the mobile device using adb's keyevent syntax (text: the key).",
        "click": "Click the point on the screen with specified (x, y) coordinates.",
        "long_press": "Press the point on the screen with specified (x, y) coordinates for a specified "
        "number of seconds (time).",
        "swipe": "Swipe from starting point with specified (x, y) coordinates to endpoint with specified "
        "(x2, y2) coordinates.",
        "type": "Input the specified text into the activated input box.",
        "answer": "Output the specified answer.",
        "system_button": "Press the specified system button: Back, Home, Menu, or Enter.",
        "open": "Open an application on the device specified by text.",
        "wait": "Wait for a specified number of seconds for changes to occur.",
        "terminate": "Terminate the current task and report its completion status: success or failure.",
        "interact": INTERACT_DESCRIPTION,
    },
    "desktop": {
        "key": "Performs key down presses on the arguments passed in order, then performs key releases "
        "in reverse order.",
        "type": "Type a string of text on the keyboard (clear: overwrite the existing text first; enter: "
        "press Enter after).",
        "mouse_move": "Move the cursor to a specified (x, y) pixel coordinate on the screen.",
        "left_click": "Click the left mouse button at a specified (x, y) pixel coordinate on the screen.",
        "left_click_drag": "Click and drag the cursor from where it is to a specified (x, y) pixel "
        "coordinate on the screen.",
        "drag": "Click at a specified (x, y) pixel coordinate on the screen, and drag the cursor to another "
        "specified (x2, y2) pixel coordinate.",
        "right_click": "Click the right mouse button at a specified (x, y) pixel coordinate on the screen.",
        "middle_click": "Click the middle mouse button at a specified (x, y) pixel coordinate on the screen.",
        "double_click": "Double-click the left mouse button at a specified (x, y) pixel coordinate.",
        "triple_click": "Triple-click the left mouse button at a specified (x, y) pixel coordinate.",
        "scroll": "Performs a scroll of the mouse scroll wheel (pixels: positive up, negative down).",
        "hscroll": "Performs a horizontal scroll of the mouse wheel (pixels: positive right, negative left).",
        "wait": "Wait specified seconds for the change to happen.",
        "terminate": "Terminate the current task and report its completion status.",
        "answer": "Output the specified answer.",
        "interact": INTERACT_DESCRIPTION,
    },
}
#: The names in :data:`ACTIONS` as the action parser reads them.
_CANONICAL = {"open": "open_app", "left_click": "click"}

_PARAMETERS: dict[str, dict[str, Any]] = {
    "coordinate": {
        "description": "(x, y): the point to act on (for drag and swipe: the start).",
        "type": "array",
    },
    "coordinate2": {"description": "(x, y): the end point of swipe and drag.", "type": "array"},
    "text": {"description": "Required by type, answer, open, key (mobile) and interact.", "type": "string"},
    "keys": {"description": "Required only by action=key on a computer.", "type": "array"},
    "clear": {"description": "type: clear the field first.", "type": "boolean"},
    "enter": {"description": "type: press Enter after typing.", "type": "boolean"},
    "pixels": {"description": "The amount of scrolling (wheel notches).", "type": "number"},
    "time": {"description": "The seconds to wait (wait) or to press (long_press).", "type": "number"},
    "button": {"description": "Back, Home, Menu or Enter.", "type": "string"},
    "status": {"description": "The status of the task.", "type": "string", "enum": ["success", "failure"]},
}
_PLATFORM_PARAMETERS = {
    "mobile": ("coordinate", "coordinate2", "text", "time", "button", "status"),
    "desktop": ("coordinate", "coordinate2", "text", "keys", "clear", "enter", "pixels", "time", "status"),
}
_INDEX_PARAMETER = {
    "description": "Instead of coordinate: the [index] of a UI-tree element (its centre is used).",
    "type": "integer",
}


def function_name(platform: str) -> str:
    """``computer_use`` on a desktop, ``mobile_use`` otherwise."""
    return "computer_use" if platform == "desktop" else "mobile_use"


def allowed_actions(platform: str) -> tuple[str, ...]:
    """The canonical action names GUI-Owl may use on ``platform``."""
    names = ACTIONS["desktop" if platform == "desktop" else "mobile"]
    return tuple(_CANONICAL.get(n, n) for n in names)


def tools_json(platform: str, screen_note: str, observation: str = "screenshot") -> str:
    """The function definition the system message carries, as one JSON line."""
    key = "desktop" if platform == "desktop" else "mobile"
    actions = ACTIONS[key]
    listing = "".join(f"\n* `{name}`: {text}" for name, text in actions.items())
    parameters: dict[str, Any] = {
        "action": {
            "description": f"The action to perform. The available actions are:{listing}",
            "enum": list(actions),
            "type": "string",
        },
        **{name: _PARAMETERS[name] for name in _PLATFORM_PARAMETERS[key]},
    }
    if shows_tree(observation):
        parameters["index"] = _INDEX_PARAMETER
    what = (
        "Use a mouse and keyboard to interact with a computer, and take screenshots."
        if key == "desktop"
        else "Use a touchscreen to interact with a mobile device, and take screenshots."
    )
    description = (
        f"{what}\n* Some applications may take time to start or process actions, so you may need to wait "
        f"and take successive screenshots to see the results of your actions.\n* {screen_note}\n"
        "* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the "
        "element. Don't click boxes on their edges unless asked."
    )
    function = {
        "type": "function",
        "function": {
            "name": function_name(platform),
            "description": description,
            "parameters": {"properties": parameters, "required": ["action"], "type": "object"},
        },
    }
    return json.dumps(function, ensure_ascii=False)


class GuiOwlInputs(BaseModel):
    """Everything ``gui_owl_system.j2`` and ``gui_owl.j2`` render."""

    task: str
    tools: str
    history: list[str] = Field(default_factory=list, description="one 'StepN: …' line per earlier step")
    answers: list[str] = Field(
        default_factory=list, description="the user's answers to the agent's questions, 'Q: … — A: …'"
    )
    observation: str = "screenshot"
    ui_tree: str = ""


def parse_gui_owl(
    text: str, platform: str = "mobile", *, screen: Observation | None = None, indices: bool = True
) -> WorkerOutput:
    """A GUI-Owl reply → its action (``<tool_call>``), thought (``<thinking>``) and conclusion.

    >>> reply = '<tool_call>{"name": "mobile_use", "arguments": {"action": "long_press", "coordinate": [5, 9], "time": 2}}</tool_call>'
    >>> parse_gui_owl(reply).action.duration_ms
    2000
    """  # noqa: E501
    return parse_worker(text, platform, screen=screen, indices=indices, allowed=allowed_actions(platform))
