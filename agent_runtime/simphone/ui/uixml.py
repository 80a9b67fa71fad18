"""Serialize a laid-out view tree as a ``uiautomator dump`` does.

Attribute names and order follow real dumps; bounds are each view's *visible* rectangle — the
same rectangle the painter drew and hit testing uses. An empty EditText reports its hint as
``text``, as Android 8+ does.
"""

from __future__ import annotations

import re

from agent_runtime.simphone.ui.view import View

HEADER = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"

_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
)


_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _esc(text: str) -> str:
    """Escape for an attribute; drop characters XML 1.0 cannot carry (controls, lone surrogates)."""
    return _INVALID_XML.sub("", text).translate(_ESCAPES)


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def to_xml(root: View, default_package: str) -> str:
    out: list[str] = [HEADER, '<hierarchy rotation="0">']
    _node(root, 0, default_package, out)
    out.append("</hierarchy>")
    return "".join(out)


def _node(v: View, index: int, package: str, out: list[str]) -> None:
    pkg = v.package or package
    x1, y1, x2, y2 = v.bounds
    text = v.text
    if v.kind == "edit":
        text = ("•" * len(v.text) if v.password else v.text) or v.hint
    rid = f"{pkg}:id/{v.rid}" if v.rid and ":" not in v.rid else v.rid
    out.append(
        f'<node index="{index}" text="{_esc(text)}" resource-id="{_esc(rid)}" class="{v.cls}" '
        f'package="{pkg}" content-desc="{_esc(v.desc)}" checkable="{_b(v.checkable)}" '
        f'checked="{_b(v.checked)}" clickable="{_b(v.clickable)}" enabled="{_b(v.enabled)}" '
        f'focusable="{_b(v.focusable)}" focused="{_b(v.focused)}" scrollable="{_b(v.scrollable)}" '
        f'long-clickable="{_b(v.long_clickable)}" password="{_b(v.password)}" '
        f'selected="{_b(v.selected)}" bounds="[{x1},{y1}][{x2},{y2}]"'
    )
    kids = [c for c in v.children if c.in_xml]
    if not kids:
        out.append(" />")
        return
    out.append(">")
    for i, child in enumerate(kids):
        _node(child, i, pkg, out)
    out.append("</node>")
