"""Numbered and bulleted lists in model replies (plans, historical operations, notes)."""

from __future__ import annotations

import re

from agent_runtime.roles.sections import is_none

_ITEM = re.compile(r"^\s*(?:(?:step|subgoal)\s*)?(?:\d+\s*[.):]|[-*•+]|\(\d+\))(?:\s+|$)", re.IGNORECASE)


def split_items(text: str) -> list[str]:
    """Items of a list; lines without a marker continue the previous item.

    Text with no list markers at all gives one item per non-empty line.

    >>> split_items("1. Open Settings\\n2. Tap Wi-Fi\\n   (the toggle)\\n3) Done")
    ['Open Settings', 'Tap Wi-Fi (the toggle)', 'Done']
    """
    if is_none(text):
        return []
    lines = [line for line in text.splitlines() if line.strip()]
    if not any(_ITEM.match(line) for line in lines):
        return [_clean(line) for line in lines if _clean(line)]
    items: list[str] = []
    for line in lines:
        m = _ITEM.match(line)
        if m:
            items.append(_clean(line[m.end() :]))
        elif items:
            items[-1] = f"{items[-1]} {_clean(line)}".strip()
        else:
            items.append(_clean(line))
    return [i for i in items if i]


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip("*_`").strip())
