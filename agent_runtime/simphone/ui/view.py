"""The SimPhone widget tree and its layout.

A screen is a tree of :class:`View` objects built fresh from app state. :func:`layout` gives
every view its screen rectangle once; the painter (:mod:`.paint`), the uiautomator serializer
(:mod:`.uixml`) and hit testing all read those same rectangles, so what the XML says is exactly
what is drawn and what a tap hits.

Layout is deliberately small: a view stacks its children in a column, a row, or on top of each
other (``stack``); sizes are fixed pixels, measured text, or a share (``weight``) of what is
left. A ``scroll`` view lays its column out at full height, shifts it by its scroll offset and
clips children to its viewport (children scrolled fully out of view disappear from the tree,
like a RecyclerView's recycled rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from agent_runtime.simphone.ui.theme import Color, line_height, text_width

Rect = tuple[int, int, int, int]
#: A click handler; what it returns is ignored (``lambda: phone.launch(pkg)`` is one).
Handler = Callable[[], object]


@dataclass(eq=False, slots=True)
class View:
    """One node: what it is (for XML), how it is laid out, how it looks, what it does."""

    kind: str = "box"  # box | text | edit | switch | check | radio | icon | seek | image | scroll
    cls: str = "android.widget.FrameLayout"
    text: str = ""
    desc: str = ""
    rid: str = ""
    package: str = ""  # empty: inherit the parent's
    children: list[View] = field(default_factory=list)
    # layout
    direction: str = "col"  # col | row | stack
    w: int | None = None
    h: int | None = None
    pos: Rect | None = None  # in a stack: an absolute rectangle instead of the parent's
    gravity: str = ""  # in a stack: "" (top-left/fill) | center | bottom | bottom_end
    margin: int = 0  # in a stack with gravity: distance from the parent's edges
    lift: int = 0  # in a stack with a bottom gravity: extra distance from the bottom edge
    weight: float = 0.0
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # left, top, right, bottom
    gap: int = 0
    align: str = "start"  # text: start | center | end; children across the main axis: start | center | end
    justify: str = "start"  # column children along the main axis: start | center
    # look
    bg: Color | None = None
    radius: int = 0
    border: Color | None = None
    fg: Color = (0, 0, 0)
    size: int = 0  # font size in px (0: no text drawn)
    bold: bool = False
    lines: int = 1  # 1: single line (ellipsized); 0: wrap without limit; n: wrap to n lines
    shape: str = ""  # icon mask name (see paint.SHAPES)
    hint: str = ""
    hint_fg: Color = (128, 128, 128)
    value: float = 0.0  # seek bar position 0..1
    accent: Color = (0, 0, 255)  # switch/check/seek colour when on, text cursor
    accent2: Color = (255, 255, 255)  # switch knob when on
    in_xml: bool = True  # False: drawn only (e.g. a label already carried by its parent node)
    # flags (uiautomator attributes)
    clickable: bool = False
    long_clickable: bool = False
    checkable: bool = False
    checked: bool = False
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    enabled: bool = True
    selected: bool = False
    password: bool = False
    # behaviour
    on_click: Handler | None = None
    on_long_click: Handler | None = None
    on_submit: Handler | None = None  # ENTER in a focused field
    on_seek: Callable[[float], None] | None = None  # tap position on a seek bar, 0..1
    field_key: str = ""  # EditText: key of the text field it shows
    multiline: bool = False
    input_type: str = "text"  # text | number | phone: which keyboard layer opens first
    scroll_key: str = ""  # scroll: key of its offset in the screen's scroll table
    scroll_y: int = 0
    owner: object = None  # scroll: the screen or dialog that stores its offset
    # computed by layout
    rect: Rect = (0, 0, 0, 0)  # the full (unclipped) rectangle
    bounds: Rect = (0, 0, 0, 0)  # the visible part: what the XML reports and taps hit
    clip: Rect | None = None
    content_h: int = 0
    max_scroll: int = 0

    def walk(self) -> Iterator[View]:
        """This view and its visible descendants in document (= drawing) order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def add(self, *children: View | None) -> View:
        self.children.extend(c for c in children if c is not None)
        return self


def wrap_text(text: str, width: int, size: int, bold: bool, max_lines: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels; hard newlines are kept. ``max_lines`` 0 = no limit."""
    out: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in para.split(" "):
            trial = f"{line} {word}" if line else word
            if text_width(trial, size, bold) <= width or not line:
                line = trial
            else:
                out.append(line)
                line = word
            while len(line) > 1 and text_width(line, size, bold) > width:
                # A single word wider than the line: break it.
                cut = max(1, fit_prefix(line, width, size, bold))
                out.append(line[:cut])
                line = line[cut:]
        out.append(line)
        if max_lines and len(out) >= max_lines:
            break
    if max_lines and len(out) > max_lines:
        out = out[:max_lines]
    return out


def fit_prefix(text: str, width: int, size: int, bold: bool, suffix: str = "") -> int:
    """Length of the longest prefix that fits ``width`` pixels (with ``suffix`` appended)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_width(text[:mid] + suffix, size, bold) <= width:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_suffix(text: str, width: int, size: int, bold: bool) -> str:
    """The longest tail of ``text`` that fits ``width`` pixels (a field scrolled to its cursor)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_width(text[len(text) - mid :], size, bold) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[len(text) - max(lo, 1) :]


def ellipsize(text: str, width: int, size: int, bold: bool) -> str:
    if text_width(text, size, bold) <= width:
        return text
    return text[: fit_prefix(text, width, size, bold, "…")] + "…"


def text_lines(v: View, inner_w: int) -> list[str]:
    """The lines a view draws (wrapped or ellipsized to its inner width)."""
    shown = v.text if v.kind != "edit" or v.text else v.hint
    if v.kind == "edit" and v.password:
        shown = "•" * len(v.text) if v.text else v.hint
    if v.lines == 1 and not v.multiline:
        return [shown.replace("\n", " ")]
    return wrap_text(shown, max(1, inner_w), v.size, v.bold, 0 if v.multiline else v.lines)


def _measure_h(v: View, width: int) -> int:
    """Natural height of ``v`` when it is ``width`` pixels wide."""
    if v.h is not None:
        return v.h
    left, top, right, bottom = v.pad
    inner = width - left - right
    if v.size and (v.text or v.hint):
        n = len(text_lines(v, inner))
        return top + bottom + n * line_height(v.size, v.bold)
    if not v.children:
        return top + bottom
    if v.direction == "row":
        best = 0
        for c, cw in zip(v.children, _row_widths(v, inner), strict=True):
            best = max(best, _measure_h(c, cw))
        return top + bottom + best
    if v.direction == "stack":
        return top + bottom + max(_measure_h(c, c.w or inner) for c in v.children)
    total = sum(_measure_h(c, c.w or inner) for c in v.children)
    return top + bottom + total + v.gap * (len(v.children) - 1)


def _measure_w(v: View) -> int:
    """Natural width of ``v`` in a row (fixed, or its one-line text plus padding)."""
    if v.w is not None:
        return v.w
    left, _, right, _ = v.pad
    if v.size and (v.text or v.hint):
        return left + right + text_width(v.text or v.hint, v.size, v.bold)
    if v.direction == "row" and v.children:
        return left + right + sum(_measure_w(c) for c in v.children) + v.gap * (len(v.children) - 1)
    return left + right


def _row_widths(v: View, inner: int) -> list[int]:
    fixed = [0 if c.weight else _measure_w(c) for c in v.children]
    free = inner - sum(fixed) - v.gap * (len(v.children) - 1)
    total_w = sum(c.weight for c in v.children)
    out = []
    for c, f in zip(v.children, fixed, strict=True):
        out.append(max(0, int(free * c.weight / total_w)) if c.weight and total_w else f)
    return out


def _intersect(a: Rect, b: Rect | None) -> Rect:
    if b is None:
        return a
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def _empty(r: Rect) -> bool:
    return r[2] <= r[0] or r[3] <= r[1]


def layout(v: View, rect: Rect, clip: Rect | None = None) -> None:
    """Assign ``bounds`` (visible part of ``rect``) and ``clip`` to ``v`` and its children.

    Children that end up fully clipped are removed: they are neither drawn nor in the XML.
    """
    v.rect = rect
    v.bounds = _intersect(rect, clip)
    v.clip = clip
    x1, y1, x2, y2 = rect
    left, top, right, bottom = v.pad
    ix1, iy1, ix2, iy2 = x1 + left, y1 + top, x2 - right, y2 - bottom
    inner_w, inner_h = ix2 - ix1, iy2 - iy1
    if v.kind == "scroll":
        heights = [_measure_h(c, c.w or inner_w) for c in v.children]
        v.content_h = sum(heights) + v.gap * max(0, len(heights) - 1)
        v.max_scroll = max(0, v.content_h - inner_h)
        v.scroll_y = min(max(v.scroll_y, 0), v.max_scroll)
        v.scrollable = v.max_scroll > 0
        inner_clip = _intersect((ix1, iy1, ix2, iy2), clip)
        y = iy1 - v.scroll_y
        kept = []
        for c, ch in zip(v.children, heights, strict=True):
            cx1 = _cross(c, ix1, inner_w, v.align)
            layout(c, (cx1, y, cx1 + (c.w or inner_w), y + ch), inner_clip)
            if not _empty(c.bounds):
                kept.append(c)
            y += ch + v.gap
        v.children = kept
        return
    if v.direction == "row":
        widths = _row_widths(v, inner_w)
        x = ix1
        for c, cw in zip(v.children, widths, strict=True):
            ch = min(inner_h, c.h) if c.h is not None else inner_h
            cy = iy1 + (inner_h - ch) // 2 if v.align == "center" or c.h is not None else iy1
            layout(c, (x, cy, x + cw, cy + ch), clip)
            x += cw + v.gap
    elif v.direction == "stack":
        for c in v.children:
            if c.pos is not None:
                layout(c, c.pos, clip)
                continue
            cw = c.w or inner_w - 2 * c.margin
            ch = c.h if c.h is not None else (_measure_h(c, cw) if c.gravity else inner_h)
            if c.gravity == "bottom_end":
                cx, cy = ix2 - cw - c.margin, iy2 - ch - c.margin - c.lift
            elif c.gravity == "bottom":
                cx, cy = ix1 + (inner_w - cw) // 2, iy2 - ch - c.margin - c.lift
            elif c.gravity == "center":
                cx, cy = ix1 + (inner_w - cw) // 2, iy1 + (inner_h - ch) // 2
            else:
                cx = _cross(c, ix1, inner_w, v.align)
                cy = iy1 + (inner_h - ch) // 2 if v.align == "center" else iy1
            layout(c, (cx, cy, cx + cw, cy + ch), clip)
    else:
        heights = [0 if c.weight else _measure_h(c, c.w or inner_w) for c in v.children]
        free = inner_h - sum(heights) - v.gap * max(0, len(v.children) - 1)
        total_w = sum(c.weight for c in v.children)
        y = iy1 + (max(0, free) // 2 if v.justify == "center" and not total_w else 0)
        for c, ch in zip(v.children, heights, strict=True):
            if c.weight and total_w:
                ch = max(0, int(free * c.weight / total_w))
            cx = _cross(c, ix1, inner_w, v.align)
            layout(c, (cx, y, cx + (c.w or inner_w), y + ch), clip)
            y += ch + v.gap
    v.children = [c for c in v.children if not _empty(c.bounds)]


def _cross(c: View, start: int, inner: int, align: str) -> int:
    if c.w is None or align == "start":
        return start
    if align == "center":
        return start + (inner - c.w) // 2
    return start + inner - c.w


def hit(root: View, x: float, y: float, attr: str = "clickable") -> View | None:
    """The topmost (last drawn) enabled view with ``attr`` whose visible bounds contain the point."""
    found: View | None = None
    for v in root.walk():
        if getattr(v, attr) and v.enabled:
            x1, y1, x2, y2 = v.bounds
            if x1 <= x < x2 and y1 <= y < y2:
                found = v
    return found


def find(root: View, pred: Callable[[View], bool]) -> View | None:
    for v in root.walk():
        if pred(v):
            return v
    return None
