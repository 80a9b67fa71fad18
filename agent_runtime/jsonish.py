"""Lenient extraction of one JSON object from model text.

Models wrap JSON in code fences, add prose around it, use single quotes or Python literals
(``True``/``None``), or leave a trailing comma. This module finds the first balanced ``{…}`` and
tries strict JSON, then a repaired form, then a Python literal — never ``eval``.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from agent_runtime.errors import ParseError

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span, respecting quoted strings."""
    spans: list[str] = []
    depth = 0
    start = -1
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _literal(text: str) -> Any:
    """``ast.literal_eval`` without the SyntaxWarning it emits for an escape such as ``"\\i"``
    (under ``-W error`` that warning would escape as an exception no caller expects)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(text)


def _loads(candidate: str) -> dict[str, Any] | None:
    for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
        try:
            value = json.loads(attempt)
        except (json.JSONDecodeError, RecursionError):
            pass
        else:
            return value if isinstance(value, dict) else None
        try:
            value = _literal(attempt)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    # JSON-ish with true/false/null *and* single quotes
    swapped = re.sub(
        r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", candidate))
    )
    try:
        value = _literal(_TRAILING_COMMA.sub(r"\1", swapped))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def extract_json_object(text: str) -> dict[str, Any]:
    """Return the first JSON object in ``text``; raise :class:`ParseError` when there is none.

    >>> extract_json_object("Sure!\\n```json\\n{'action': 'click', 'coordinate': [1, 2],}\\n```")
    {'action': 'click', 'coordinate': [1, 2]}
    """
    if len(text) > 200_000:
        raise ParseError("model reply is too long to contain a single action object")
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        for span in _balanced_objects(source):
            value = _loads(span)
            if value is not None:
                return value
    snippet = text.strip().replace("\n", " ")[:120]
    raise ParseError(f"no JSON object found in: {snippet!r}", hint="answer with one JSON object")
