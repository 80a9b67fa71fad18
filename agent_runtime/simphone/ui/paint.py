"""Turn a laid-out view tree into draw operations.

An operation is a flat, hashable tuple ``(kind, x1, y1, x2, y2, clip, colour, key)``:

* ``fill`` — a solid rectangle (``key`` unused);
* ``mask`` — paste ``colour`` through the alpha mask ``masks.mask(key)``, which is exactly
  ``x2-x1`` × ``y2-y1`` pixels;
* ``image`` — paste the RGB image ``masks.image(key)``.

``clip`` is the rectangle the operation may draw into (a scroll viewport) or ``None``. Because
operations are plain data, the renderer can cache rendered bands by the operations that touch
them, and a frame that did not change costs nothing to encode again.
"""

from __future__ import annotations

from agent_runtime.simphone.ui.theme import Color, line_height, text_width
from agent_runtime.simphone.ui.view import Rect, View, ellipsize, fit_suffix, text_lines

Op = tuple[str, int, int, int, int, Rect | None, Color | None, tuple[object, ...] | None]


def _blend(a: Color, b: Color, t: float) -> Color:
    return (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t), round(a[2] + (b[2] - a[2]) * t))


class Painter:
    """Collects the operations of one frame."""

    def __init__(self, density: float) -> None:
        self.ops: list[Op] = []
        self.density = density

    def dp(self, v: float) -> int:
        return round(v * self.density)

    def fill(self, r: Rect, clip: Rect | None, color: Color) -> None:
        if r[2] > r[0] and r[3] > r[1]:
            self.ops.append(("fill", r[0], r[1], r[2], r[3], clip, color, None))

    def box(self, r: Rect, clip: Rect | None, color: Color, radius: int) -> None:
        w, h = r[2] - r[0], r[3] - r[1]
        if w <= 0 or h <= 0:
            return
        radius = min(radius, w // 2, h // 2)
        if radius <= 0:
            self.fill(r, clip, color)
        else:
            self.ops.append(("mask", r[0], r[1], r[2], r[3], clip, color, ("rrect", w, h, radius)))

    def ring(self, r: Rect, clip: Rect | None, color: Color, radius: int, width: int) -> None:
        w, h = r[2] - r[0], r[3] - r[1]
        if w > 0 and h > 0:
            radius = min(radius, w // 2, h // 2)
            self.ops.append(("mask", r[0], r[1], r[2], r[3], clip, color, ("ring", w, h, radius, width)))

    def shape(self, name: str, r: Rect, clip: Rect | None, color: Color) -> None:
        w, h = r[2] - r[0], r[3] - r[1]
        if w > 0 and h > 0:
            self.ops.append(("mask", r[0], r[1], r[2], r[3], clip, color, ("shape", name, w, h)))

    def text(self, line: str, x: int, y: int, size: int, bold: bool, clip: Rect | None, color: Color) -> None:
        if not line:
            return
        w, h = text_width(line, size, bold), line_height(size, bold)
        self.ops.append(("mask", x, y, x + w, y + h, clip, color, ("text", line, size, bold)))


def paint_tree(root: View, density: float, background: Color) -> list[Op]:
    """All operations of a frame, background first, in drawing order."""
    p = Painter(density)
    p.fill(root.rect, None, background)
    for v in root.walk():
        _paint(p, v)
    return p.ops


def _paint(p: Painter, v: View) -> None:
    r, clip = v.rect, v.clip
    if v.kind == "image":
        key = tuple(v.shape.split(":"))
        w, h = r[2] - r[0], r[3] - r[1]
        p.ops.append(("image", r[0], r[1], r[2], r[3], clip, None, (key[0], int(key[1]), w, h)))
        return
    if v.kind == "scrim":
        w, h = r[2] - r[0], r[3] - r[1]
        p.ops.append(("mask", r[0], r[1], r[2], r[3], clip, v.fg, ("alpha", w, h, 110)))
        return
    if v.bg is not None:
        p.box(r, clip, v.bg, v.radius)
    if v.border is not None:
        p.ring(r, clip, v.border, v.radius, max(1, p.dp(1)))
    if v.kind == "switch":
        _switch(p, v)
    elif v.kind in ("check", "radio"):
        _check(p, v)
    elif v.kind == "seek":
        _seek(p, v)
    elif v.kind == "icon" and v.shape:
        left, top, right, bottom = v.pad
        x1, y1, x2, y2 = r[0] + left, r[1] + top, r[2] - right, r[3] - bottom
        s = min(x2 - x1, y2 - y1)
        cx, cy = (x1 + x2) // 2, (y1 + y2) // 2
        p.shape(v.shape, (cx - s // 2, cy - s // 2, cx - s // 2 + s, cy - s // 2 + s), clip, v.fg)
    if v.size and (v.text or v.hint or v.kind == "edit"):
        _text(p, v)


def _text(p: Painter, v: View) -> None:
    left, top, right, bottom = v.pad
    x1, y1, x2, y2 = v.rect[0] + left, v.rect[1] + top, v.rect[2] - right, v.rect[3] - bottom
    inner_w = x2 - x1
    lines = text_lines(v, inner_w)
    lh = line_height(v.size, v.bold)
    single = v.lines == 1 and not v.multiline
    if v.kind == "edit" and single and v.text and v.focused:
        # A long single-line field shows its end, where the cursor is.
        lines = [fit_suffix(lines[0], inner_w - p.dp(4), v.size, v.bold)]
    elif single:
        lines = [ellipsize(lines[0], inner_w, v.size, v.bold)]
    color = v.fg if (v.text or v.kind != "edit") else v.hint_fg
    block = lh * len(lines)
    y = y1 + max(0, (y2 - y1 - block) // 2) if not v.multiline else y1
    clip = _clip_to(v.clip, v.rect) if v.kind == "edit" or not single else v.clip
    for line in lines:
        w = text_width(line, v.size, v.bold)
        if v.align == "center":
            x = x1 + (inner_w - w) // 2
        elif v.align == "end":
            x = x2 - w
        else:
            x = x1
        p.text(line, x, y, v.size, v.bold, clip, color)
        y += lh
    if v.kind == "edit" and v.focused:
        last = lines[-1] if v.text else ""
        cx = x1 + text_width(last, v.size, v.bold) + p.dp(1) if v.align != "center" else x1 + inner_w // 2
        cy = y - lh if v.text else y1 + max(0, (y2 - y1 - lh) // 2) if not v.multiline else y1
        p.fill((cx, cy + p.dp(2), cx + p.dp(2), cy + lh - p.dp(2)), clip, v.accent)


def _clip_to(clip: Rect | None, r: Rect) -> Rect:
    if clip is None:
        return r
    return (max(clip[0], r[0]), max(clip[1], r[1]), min(clip[2], r[2]), min(clip[3], r[3]))


def _switch(p: Painter, v: View) -> None:
    x1, y1, x2, y2 = v.rect
    tw, th = p.dp(52), p.dp(32)
    tx2 = x2 - v.pad[2]
    tx1, ty1 = tx2 - tw, (y1 + y2 - th) // 2
    track = (tx1, ty1, tx2, ty1 + th)
    if v.checked:
        p.box(track, v.clip, v.accent, th // 2)
        k = p.dp(24)
        kx = tx2 - p.dp(4) - k
        p.shape("circle", (kx, ty1 + (th - k) // 2, kx + k, ty1 + (th - k) // 2 + k), v.clip, v.accent2)
    else:
        muted = _blend(v.fg, (128, 128, 128), 0.5)
        p.ring(track, v.clip, muted, th // 2, p.dp(2))
        k = p.dp(16)
        kx = tx1 + p.dp(8)
        p.shape("circle", (kx, ty1 + (th - k) // 2, kx + k, ty1 + (th - k) // 2 + k), v.clip, muted)


def _check(p: Painter, v: View) -> None:
    x1, y1, x2, y2 = v.rect
    s = p.dp(20)
    bx2 = x2 - v.pad[2]
    bx1, by1 = bx2 - s, (y1 + y2 - s) // 2
    box = (bx1, by1, bx2, by1 + s)
    if v.kind == "radio":
        p.shape("ring", box, v.clip, v.accent if v.checked else v.fg)
        if v.checked:
            p.shape("dot", box, v.clip, v.accent)
        return
    if v.checked:
        p.box(box, v.clip, v.accent, p.dp(3))
        p.shape(
            "check", (bx1 + p.dp(3), by1 + p.dp(3), bx2 - p.dp(3), by1 + s - p.dp(3)), v.clip, (255, 255, 255)
        )
    else:
        p.ring(box, v.clip, v.fg, p.dp(3), p.dp(2))


def _seek(p: Painter, v: View) -> None:
    x1, y1, x2, y2 = v.rect
    left, _, right, _ = v.pad
    tx1, tx2 = x1 + left, x2 - right
    cy = (y1 + y2) // 2
    h = p.dp(4)
    pos = tx1 + round((tx2 - tx1) * max(0.0, min(1.0, v.value)))
    p.box((tx1, cy - h // 2, tx2, cy - h // 2 + h), v.clip, _blend(v.accent, (128, 128, 128), 0.6), h // 2)
    p.box((tx1, cy - h // 2, pos, cy - h // 2 + h), v.clip, v.accent, h // 2)
    k = p.dp(20)
    p.shape("circle", (pos - k // 2, cy - k // 2, pos - k // 2 + k, cy - k // 2 + k), v.clip, v.accent)
