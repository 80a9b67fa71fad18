"""Print the AT-SPI tree of the desktop as uiautomator-style XML (run by the *system* Python).

Usage: ``python3 desktop_atspi_dump.py LEFT TOP WIDTH HEIGHT SCALE_X SCALE_Y``. Bounds are
converted from desktop coordinates to pixels of the screenshot of that monitor. Stand-alone on
purpose: it runs under the Python that has pyatspi (Debian ``python3-pyatspi``), where
agent-runtime is usually not installed. Only the standard library and pyatspi are used.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

MAX_NODES = 5000
MAX_DEPTH = 60
CLICK_ACTIONS = {"click", "press", "activate", "jump", "toggle", "open"}
CHECKABLE_ROLES = {
    "check_box",
    "radio_button",
    "toggle_button",
    "check_menu_item",
    "radio_menu_item",
    "switch",
}


def main(argv: list[str]) -> int:
    import pyatspi

    left, top, width, height = (int(v) for v in argv[:4])
    sx, sy = float(argv[4]), float(argv[5])
    root = ET.Element("hierarchy", rotation="0")
    count = 0

    def bounds(acc) -> str | None:
        try:
            x, y, w, h = acc.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        except Exception:
            return None
        if w <= 0 or h <= 0:
            return None
        x1 = max(0, min(width, x - left))
        y1 = max(0, min(height, y - top))
        x2 = max(0, min(width, x + w - left))
        y2 = max(0, min(height, y + h - top))
        return f"[{round(x1 * sx)},{round(y1 * sy)}][{round(x2 * sx)},{round(y2 * sy)}]"

    def text_of(acc) -> str:
        try:
            t = acc.queryText()
            return t.getText(0, t.characterCount)
        except Exception:
            return ""

    def actions(acc) -> set[str]:
        try:
            a = acc.queryAction()
            return {a.getName(i).lower() for i in range(a.nActions)}
        except Exception:
            return set()

    def walk(acc, parent: ET.Element, depth: int, app: str) -> None:
        nonlocal count
        if count >= MAX_NODES or depth > MAX_DEPTH:
            return
        try:
            states = acc.getState()
            if not states.contains(pyatspi.STATE_SHOWING):
                return
            role = acc.getRoleName().replace(" ", "_")
            name = acc.name or ""
            desc = acc.description or ""
            n = acc.childCount
        except Exception:
            return
        box = bounds(acc) or "[0,0][0,0]"
        editable = states.contains(pyatspi.STATE_EDITABLE)
        node = ET.SubElement(
            parent,
            "node",
            {
                "index": str(len(parent)),
                "text": text_of(acc) if editable else name,
                "resource-id": "",
                "class": f"atspi.{role}",
                "package": app,
                "content-desc": name if editable else desc,
                "checkable": str(role in CHECKABLE_ROLES or states.contains(pyatspi.STATE_CHECKABLE)).lower(),
                "checked": str(states.contains(pyatspi.STATE_CHECKED)).lower(),
                "clickable": str(bool(actions(acc) & CLICK_ACTIONS)).lower(),
                "enabled": str(states.contains(pyatspi.STATE_ENABLED)).lower(),
                "focusable": str(states.contains(pyatspi.STATE_FOCUSABLE)).lower(),
                "focused": str(states.contains(pyatspi.STATE_FOCUSED)).lower(),
                "scrollable": "false",
                "long-clickable": "false",
                "password": str(role == "password_text").lower(),
                "selected": str(states.contains(pyatspi.STATE_SELECTED)).lower(),
                "bounds": box,
            },
        )
        count += 1
        for i in range(n):
            try:
                child = acc.getChildAtIndex(i)
            except Exception:
                continue
            if child is not None:
                walk(child, node, depth + 1, app)

    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        if app is None:
            continue
        for j in range(app.childCount):
            window = app.getChildAtIndex(j)
            if window is not None:
                walk(window, root, 0, app.name or "")
    sys.stdout.write("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>")
    sys.stdout.write(ET.tostring(root, encoding="unicode"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
