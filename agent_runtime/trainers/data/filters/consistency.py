"""Thought–action consistency (Mobile-Agent-v3 §2.2.3, step 2), as a documented heuristic.

The paper drops steps whose reasoning does not support the executed action, without saying how
it checks. We check it without a model, from the Worker's own words (its Thought and
Description) — a sample is *consistent* when both hold:

1. **Verb.** The words name the action's kind: e.g. a ``click`` needs one of click / tap / press
   / select / open / …, a ``type`` one of type / enter / input / write / fill / search, a
   ``system_button`` Back one of back / return / previous. (:data:`VERBS` lists them all.)
2. **Target**, where one can be determined:

   * ``type`` — the typed text (or its first three words) appears;
   * ``open_app`` — the app name appears;
   * ``click`` / ``long_press`` / ``double_click`` — if the prompt carries a UI tree
     (``Class; flags; label; [x1,y1][x2,y2]`` lines, :func:`~agent_runtime.observation.compress_ui_xml`),
     the smallest labelled element under the executed screen point gives the target, and a word
     of its label (three letters or more) must appear; or the words contain coordinates within
     ``coord_tolerance`` of the action's (model-space) point. Without a tree and without
     coordinates in the words, the verb decides alone;
   * ``swipe`` / ``scroll`` — if the words name directions, one of them must lie on the swipe's
     axis (up/down for a vertical swipe, left/right for a horizontal one);
   * ``terminate`` — success needs words of completion, failure words of failure;
   * ``answer`` — the verb *or* the answer text suffices.

Only Worker samples carry an action; samples of other roles pass through unchanged.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from agent_runtime.trainers.data.filters import Filtered, report
from agent_runtime.trainers.data.samples import Sample

_CLICK = (
    "click",
    "tap",
    "press",
    "select",
    "choose",
    "open",
    "hit",
    "toggle",
    "check",
    "uncheck",
    "enable",
    "disable",
    "turn",
    "switch",
    "go to",
    "navigate",
    "enter",
    "access",
    "view",
)
_SWIPE = ("swipe", "scroll", "drag", "slide", "fling", "flick")
VERBS: dict[str, tuple[str, ...]] = {
    "click": _CLICK,
    "double_click": ("double", *_CLICK),
    "right_click": ("right", "context menu", *_CLICK),
    "middle_click": ("middle", *_CLICK),
    "long_press": ("long press", "long-press", "long click", "hold", "press and hold"),
    "swipe": _SWIPE,
    "scroll": _SWIPE,
    "drag": ("drag", "move", "slide"),
    "mouse_move": ("move", "hover", "point"),
    "type": ("type", "enter", "input", "write", "fill", "search", "put", "insert"),
    "key": ("press", "key", "hit", "shortcut"),
    "open_app": ("open", "launch", "start", "go to", "switch to"),
    "wait": ("wait", "load", "pause"),
    "answer": ("answer", "respond", "reply", "tell", "report", "result is"),
}
BUTTON_VERBS: dict[str, tuple[str, ...]] = {
    "Back": ("back", "return", "previous", "close", "dismiss", "exit"),
    "Home": ("home",),
    "Enter": ("enter", "submit", "confirm", "search", "send", "done"),
    "Menu": ("menu",),
}
DONE_WORDS = (
    "done",
    "complete",
    "completed",
    "finish",
    "finished",
    "accomplished",
    "achieved",
    "success",
    "succeeded",
    "terminate",
    "already",
)
FAIL_WORDS = (
    "cannot",
    "can't",
    "unable",
    "impossible",
    "fail",
    "failed",
    "failure",
    "give up",
    "not possible",
    "does not exist",
    "doesn't exist",
    "no way",
)
_VERTICAL: tuple[str, ...] = ("up", "down", "top", "bottom", "upward", "downward")
_HORIZONTAL: tuple[str, ...] = ("left", "right", "leftward", "rightward")

_TREE_LINE = re.compile(
    r"^\s*(?:\[\d+\]\s*)?[^;\n]*;[^;\n]*;\s*(?P<label>.*?);\s*\[(\d+),(\d+)\]\[(\d+),(\d+)\]\s*$",
    re.MULTILINE,
)
_NUMBER_PAIR = re.compile(r"(-?\d+(?:\.\d+)?)\s*[,\s]\s*(-?\d+(?:\.\d+)?)")


def _has_word(text: str, phrases: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(p)}", text) for p in phrases)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def tree_elements(prompt: str) -> list[tuple[str, tuple[int, int, int, int]]]:
    """``(label, bounds)`` of every compressed-UI-tree line in a prompt.

    >>> tree_elements("Button; clickable; Save; [10,20][110,80]")
    [('Save', (10, 20, 110, 80))]
    """
    found = []
    for m in _TREE_LINE.finditer(prompt):
        left, top, right, bottom = (int(m.group(i)) for i in range(2, 6))
        found.append((m["label"].strip(), (left, top, right, bottom)))
    return found


def element_at(prompt: str, x: float, y: float) -> str | None:
    """The label of the smallest labelled tree element containing ``(x, y)`` (screen pixels)."""
    hits = [
        ((x2 - x1) * (y2 - y1), label)
        for label, (x1, y1, x2, y2) in tree_elements(prompt)
        if label and x1 <= x < x2 and y1 <= y < y2
    ]
    return min(hits)[1] if hits else None


def _mentions_text(words: str, text: str) -> bool:
    target = _norm(text)
    if not target:
        return True
    if target in words:
        return True
    first = target.split()[:3]
    return all(w in words for w in first)


def _mentions_label(words: str, label: str) -> bool:
    if _norm(label) in words:
        return True
    tokens = [t for t in re.split(r"[^\w]+", label.casefold()) if len(t) >= 3]
    return any(re.search(rf"\b{re.escape(t)}\b", words) for t in tokens)


def _mentions_point(words: str, point: tuple[float, float], tolerance: float) -> bool:
    px, py = point
    return any(
        abs(float(a) - px) <= tolerance and abs(float(b) - py) <= tolerance
        for a, b in _NUMBER_PAIR.findall(words)
    )


def _point(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        try:
            return float(value[0]), float(value[1])
        except (TypeError, ValueError):
            return None
    return None


def check_consistency(
    words: str,
    action: dict[str, Any],
    *,
    prompt: str = "",
    action_screen: dict[str, Any] | None = None,
    coord_tolerance: float = 30.0,
) -> tuple[bool, str]:
    """Whether ``words`` (thought + description) support ``action``; returns (ok, reason).

    >>> check_consistency("Tap the Wi-Fi row.", {"action": "click", "coordinate": [5, 5]})
    (True, 'consistent (no target label known)')
    >>> check_consistency("Scroll down to find Wi-Fi.", {"action": "click", "coordinate": [5, 5]})
    (False, 'thought does not name a click')
    >>> check_consistency("Type the name.", {"action": "type", "text": "Alice Smith"})
    (False, 'typed text not in thought')
    """
    text = _norm(words)
    kind = str(action.get("action", ""))
    if kind == "system_button":
        button = str(action.get("button", ""))
        ok = _has_word(text, BUTTON_VERBS.get(button, (button.casefold(),)))
        return (True, "consistent") if ok else (False, f"thought does not name the {button} button")
    if kind == "terminate":
        failure = action.get("status") == "failure"
        ok = _has_word(text, FAIL_WORDS if failure else DONE_WORDS)
        return (
            (True, "consistent")
            if ok
            else (False, f"thought does not say the task {'failed' if failure else 'is done'}")
        )
    if kind == "answer":
        ok = _has_word(text, VERBS["answer"]) or _mentions_text(text, str(action.get("text", "")))
        return (True, "consistent") if ok else (False, "thought neither answers nor states the answer")
    verbs = VERBS.get(kind)
    if verbs is None:
        return True, "no rule for this action"
    if not _has_word(text, verbs):
        return False, f"thought does not name a {kind.replace('_', ' ')}"
    if kind == "type" and not _mentions_text(text, str(action.get("text", ""))):
        return False, "typed text not in thought"
    if kind == "open_app" and not _mentions_text(text, str(action.get("text", ""))):
        return False, "app name not in thought"
    if kind in ("click", "long_press", "double_click", "right_click", "middle_click"):
        return _check_target(text, action, prompt, action_screen, coord_tolerance)
    if kind in ("swipe", "scroll", "drag"):
        return _check_axis(text, action)
    return True, "consistent"


def _check_target(
    text: str, action: dict[str, Any], prompt: str, action_screen: dict[str, Any] | None, tolerance: float
) -> tuple[bool, str]:
    model_point = _point(action.get("coordinate"))
    if model_point is not None and _mentions_point(text, model_point, tolerance):
        return True, "consistent"
    screen_point = _point((action_screen or {}).get("coordinate"))
    label = element_at(prompt, *screen_point) if screen_point is not None and prompt else None
    if label is None:
        return True, "consistent (no target label known)"
    if _mentions_label(text, label):
        return True, "consistent"
    return False, "target element not in thought"


def _check_axis(text: str, action: dict[str, Any]) -> tuple[bool, str]:
    start, end = _point(action.get("coordinate")), _point(action.get("coordinate2"))
    if action.get("action") == "scroll":
        axis = _VERTICAL
    elif start is None or end is None:
        return True, "consistent"
    else:
        axis = _VERTICAL if abs(end[1] - start[1]) >= abs(end[0] - start[0]) else _HORIZONTAL
    named = [d for d in (*_VERTICAL, *_HORIZONTAL) if re.search(rf"\b{d}\b", text)]
    if not named or any(d in axis for d in named):
        return True, "consistent"
    return False, "swipe direction contradicts thought"


def sample_words(sample: Sample) -> str:
    """The Worker's thought and description for this call (parsed output first, else the step's)."""
    parsed = sample.parsed or {}
    thought = parsed.get("thought") or sample.thought
    description = parsed.get("description") or sample.description
    return f"{thought}\n{description}"


def filter_consistency(samples: list[Sample], *, coord_tolerance: float = 30.0) -> Filtered:
    """Drop Worker samples whose thought does not support their action (module docstring)."""
    kept: list[Sample] = []
    why_kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for s in samples:
        action = (s.parsed or {}).get("action") if s.parsed else None
        action = action or s.action
        if s.role != "worker" or not action:
            why_kept["no action to check"] += 1
            kept.append(s)
            continue
        ok, reason = check_consistency(
            sample_words(s),
            action,
            prompt=s.prompt_text(),
            action_screen=s.action_screen,
            coord_tolerance=coord_tolerance,
        )
        if ok:
            why_kept[reason] += 1
            kept.append(s)
        else:
            dropped[reason] += 1
    return Filtered(
        kept, report("consistency", len(samples), why_kept, dropped, coord_tolerance=coord_tolerance)
    )
