"""The Worker (executor): one action for the current subgoal, in the model's coordinate space.

Reply format: ``### Thought ###``, ``### Action ###`` (one JSON object) and
``### Description ###`` (becomes the Reflector's expectation). GUI-Owl's single-model form —
``<thinking>…</thinking><tool_call>{"name": "mobile_use", "arguments": {…}}</tool_call>
<conclusion>…</conclusion>`` — is read too. The prompt lists only the actions of the device's
platform and the parser rejects any other, so a desktop-only action never reaches a phone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.actions import parse_action
from agent_runtime.alignment import check_index
from agent_runtime.config import shows_screenshot, shows_tree
from agent_runtime.coords import CoordSpace, ImageBudget, Size
from agent_runtime.errors import ActionParseError, ParseError
from agent_runtime.jsonish import extract_json_object
from agent_runtime.observation import Observation
from agent_runtime.role_outputs import WorkerOutput
from agent_runtime.roles.sections import readable, split_sections
from agent_runtime.specs import prompt_template

TEMPLATE = prompt_template("worker")
SECTIONS = ("Thought", "Action", "Description")
_HEADINGS = ("Thought", "Action", "Description", "Summary")
_ACTION_HINT = 'write one object under ### Action ###, e.g. {"action": "click", "coordinate": [x, y]}'
#: What asking the user does, in every prompt that offers it (the Worker's list, GUI-Owl's tools).
INTERACT_DESCRIPTION = (
    "Ask the user a question (text) when the task cannot go on without information or a decision "
    "only they can give; the run pauses for their answer."
)
_TAG = re.compile(r"<(?P<tag>thinking|think|tool_call|conclusion)>(?P<body>.*?)(?:</(?P=tag)>|$)", re.DOTALL)


class ActionSpec(BaseModel):
    """One action as the Worker prompt lists it."""

    name: str
    signature: str
    description: str


_SPECS: dict[str, ActionSpec] = {
    s.name: s
    for s in (
        ActionSpec(
            name="click", signature='{"action": "click", "coordinate": [x, y]}', description="Tap the point."
        ),
        ActionSpec(
            name="long_press",
            signature='{"action": "long_press", "coordinate": [x, y]}',
            description="Press and hold the point.",
        ),
        ActionSpec(
            name="swipe",
            signature='{"action": "swipe", "coordinate": [x1, y1], "coordinate2": [x2, y2]}',
            description="Swipe from the first point to the second (swipe up to scroll down).",
        ),
        ActionSpec(
            name="type",
            signature='{"action": "type", "text": "..."}',
            description="Type text into the focused input field (tap the field first).",
        ),
        ActionSpec(
            name="system_button",
            signature='{"action": "system_button", "button": "Back" | "Home" | "Menu" | "Enter"}',
            description="Press a system button.",
        ),
        ActionSpec(
            name="open_app",
            signature='{"action": "open_app", "text": "app name"}',
            description="Open an app by its name.",
        ),
        ActionSpec(
            name="wait", signature='{"action": "wait", "time": seconds}', description="Wait for the screen."
        ),
        ActionSpec(
            name="interact",
            signature='{"action": "interact", "text": "..."}',
            description=INTERACT_DESCRIPTION,
        ),
        ActionSpec(
            name="answer",
            signature='{"action": "answer", "text": "..."}',
            description="Answer the user's question; ends the task.",
        ),
        ActionSpec(
            name="terminate",
            signature='{"action": "terminate", "status": "success" | "failure"}',
            description="End the task, saying whether it succeeded.",
        ),
        ActionSpec(
            name="double_click",
            signature='{"action": "double_click", "coordinate": [x, y]}',
            description="Double-click the point.",
        ),
        ActionSpec(
            name="right_click",
            signature='{"action": "right_click", "coordinate": [x, y]}',
            description="Right-click the point.",
        ),
        ActionSpec(
            name="middle_click",
            signature='{"action": "middle_click", "coordinate": [x, y]}',
            description="Middle-click the point.",
        ),
        ActionSpec(
            name="mouse_move",
            signature='{"action": "mouse_move", "coordinate": [x, y]}',
            description="Move the pointer to the point.",
        ),
        ActionSpec(
            name="drag",
            signature='{"action": "drag", "coordinate": [x1, y1], "coordinate2": [x2, y2]}',
            description="Drag from the first point to the second.",
        ),
        ActionSpec(
            name="scroll",
            signature='{"action": "scroll", "pixels": n, "coordinate": [x, y]}',
            description="Scroll n notches (-5..5, positive = up) at the point.",
        ),
        ActionSpec(
            name="key",
            signature='{"action": "key", "keys": ["ctrl", "c"]}',
            description="Press keys together.",
        ),
    )
}

#: Actions each platform offers, in prompt order.
PLATFORM_ACTIONS: dict[str, tuple[str, ...]] = {
    "mobile": (
        "click",
        "long_press",
        "swipe",
        "type",
        "system_button",
        "open_app",
        "wait",
        "interact",
        "answer",
        "terminate",
    ),
    "desktop": (
        "click",
        "double_click",
        "right_click",
        "middle_click",
        "mouse_move",
        "drag",
        "scroll",
        "type",
        "key",
        "wait",
        "interact",
        "answer",
        "terminate",
    ),
}


#: Index forms (ReachAgent's action alignment) shown to roles that read the UI tree.
_INDEX_SPECS: dict[str, ActionSpec] = {
    s.name: s
    for s in (
        ActionSpec(
            name="click",
            signature='{"action": "click", "index": i}',
            description="Tap element [i] of the UI tree (at its centre).",
        ),
        ActionSpec(
            name="long_press",
            signature='{"action": "long_press", "index": i}',
            description="Press and hold element [i].",
        ),
        ActionSpec(
            name="swipe",
            signature='{"action": "swipe", "index": i, "direction": "up" | "down" | "left" | "right"}',
            description="Swipe along scrollable element [i] in the direction given "
            "(swipe up to scroll down).",
        ),
        ActionSpec(
            name="type",
            signature='{"action": "type", "index": i, "text": "..."}',
            description="Tap input field [i] and type text into it "
            "(leave out index to type into the focused field).",
        ),
    )
}


def action_specs(platform: str, observation: str = "screenshot") -> list[ActionSpec]:
    """The action list the Worker prompt shows for ``platform`` (mobile | desktop).

    Roles that read the UI tree (``observation`` ``ui_tree`` or ``both``) get the element-index
    forms of click, long_press, swipe and type.
    """
    names = PLATFORM_ACTIONS.get(platform, PLATFORM_ACTIONS["mobile"])
    by_index = shows_tree(observation)
    return [_INDEX_SPECS[n] if by_index and n in _INDEX_SPECS else _SPECS[n] for n in names]


_PIXELS_NOTE = "The screen's resolution is {w}x{h}; coordinates are pixels from the top-left."


_TREE_NOTE = (
    "The screen is {w}x{h} pixels; elements are named by their [index] in the UI tree, "
    "and their bounds are screen pixels."
)


def screen_note(space: CoordSpace, screen: Size, budget: ImageBudget, observation: str = "screenshot") -> str:
    """How the prompt declares the coordinate space — the size *the model* works in.

    A role that reads only the UI tree names elements by index and is told the screen size the
    tree's bounds are in.
    """
    if not shows_screenshot(observation):
        return _TREE_NOTE.format(w=screen.width, h=screen.height)
    match space:
        case CoordSpace.PIXELS:
            return _PIXELS_NOTE.format(w=screen.width, h=screen.height)
        case CoordSpace.PIXELS_RESIZED:
            r = budget.resized(screen)
            return _PIXELS_NOTE.format(w=r.width, h=r.height)
        case CoordSpace.RELATIVE_1000:
            return (
                "Coordinates are relative: x and y range from 0 to 1000, "
                "(0, 0) is top-left, (1000, 1000) bottom-right."
            )
        case CoordSpace.NORMALIZED:
            return (
                "Coordinates are normalized: x and y range from 0.0 to 1.0, "
                "(0, 0) is top-left, (1, 1) bottom-right."
            )
    raise ValueError(f"unknown coordinate space {space!r}")


class HistoryEntry(BaseModel):
    """One line of ``### Latest Action History ###``."""

    action: str
    description: str = ""
    outcome: str = "Successful"
    feedback: str = ""


class WorkerInputs(BaseModel):
    """Everything ``worker.j2`` renders."""

    task: str
    device_word: str = "phone"
    plan: list[str] = Field(default_factory=list)
    subgoal: str = ""
    completed: list[str] = Field(default_factory=list)
    notes: str = ""
    screen_note: str
    actions: list[ActionSpec]
    history: list[HistoryEntry] = Field(default_factory=list)
    last_feedback: str = ""
    answers: list[str] = Field(
        default_factory=list, description="the user's answers to the agent's questions, 'Q: … — A: …'"
    )
    observation: str = Field("screenshot", description="screenshot | ui_tree | both")
    ui_tree: str = Field("", description="the indexed UI tree (ui_tree/both modes)")


def _action_source(text: str) -> tuple[str, dict[str, str]]:
    """Where the action JSON is, plus thought/description from GUI-Owl tags when present.

    The action comes from the Action section, else the first ``<tool_call>``; only a reply with
    no headings is searched whole, without its ``<think>``/``<thinking>``/``<conclusion>`` parts.
    A JSON object in the Thought, the Description or the thinking is never taken for the action —
    a model musing about ``answer`` or ``terminate`` there has not chosen it.
    """
    tags: dict[str, str] = {}
    for m in _TAG.finditer(text):
        tags.setdefault(m.group("tag"), m.group("body").strip())
    sections = split_sections(text, _HEADINGS)
    extra = {
        "thought": sections.get("thought") or tags.get("thinking") or tags.get("think", ""),
        "description": sections.get("description") or sections.get("summary") or tags.get("conclusion", ""),
    }
    if "action" in sections and "{" in sections["action"]:
        return sections["action"], extra
    if "tool_call" in tags:
        return tags["tool_call"], extra
    if sections:
        raise ActionParseError(
            "the reply has no action: no JSON object under ### Action ### and no <tool_call>",
            field="action",
            hint=_ACTION_HINT,
        )
    return _TAG.sub("", text), extra


def parse_worker(
    text: str,
    platform: str = "mobile",
    *,
    screen: Observation | None = None,
    indices: bool = True,
    allowed: Sequence[str] | None = None,
) -> WorkerOutput:
    """Parse a Worker reply into one action allowed on ``platform`` (``allowed``: the action
    names this role may use there; by default the Worker's list, :data:`PLATFORM_ACTIONS`).

    Element-index actions are checked against ``screen`` when given (an index that is not in
    its UI tree is a parse error, so the model is re-asked); ``indices=False`` rejects them
    outright — for a role shown screenshots only, which has no indices to name.

    >>> parse_worker("### Action ###\\n{'action': 'click', 'coordinate': [5, 9]}").action
    Click(action='click', coordinate=(5.0, 9.0))
    """
    source, extra = _action_source(readable(text))
    try:
        raw: dict[str, Any] = extract_json_object(source)
    except ParseError as exc:
        raise ActionParseError(
            f"no action JSON object found ({exc.message})", field="action", hint=_ACTION_HINT
        ) from None
    action = parse_action(raw)
    if "arguments" in raw and isinstance(raw.get("name"), str) and isinstance(raw["arguments"], dict):
        raw = raw["arguments"]
    if allowed is None:
        allowed = PLATFORM_ACTIONS.get(platform, PLATFORM_ACTIONS["mobile"])
    if action.action not in allowed:
        raise ActionParseError(
            f"action {action.action!r} is not available on this {platform} device",
            field="action",
            hint=f"use one of: {', '.join(allowed)}",
        )
    if action.by_index and not indices:
        check_index(action, None)
    elif action.by_index and screen is not None:
        check_index(action, screen)
    return WorkerOutput(
        thought=extra["thought"], action=action, raw_action=raw, description=extra["description"]
    )
