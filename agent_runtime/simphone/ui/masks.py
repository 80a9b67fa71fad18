"""Alpha masks and images that draw operations paste: text lines, rounded boxes, icons.

Every mask is keyed by what it shows and cached, so a frame is a list of ``paste(colour, mask)``
calls — the slow parts (FreeType, anti-aliased shapes) run once per distinct glyph run or icon
size. Icons are drawn at 4× and downsampled, which is how they get smooth edges.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

from PIL import Image, ImageDraw

from agent_runtime.simphone.ui.theme import WALLPAPERS, font, line_height, text_width

MaskKey = tuple[object, ...]
_SS = 4  # supersampling factor for shapes


def _shape_canvas(w: int, h: int) -> tuple[Image.Image, ImageDraw.ImageDraw, float]:
    img = Image.new("L", (w * _SS, h * _SS), 0)
    return img, ImageDraw.Draw(img), min(w, h) * _SS / 100.0


def _down(img: Image.Image, w: int, h: int) -> Image.Image:
    return img.resize((w, h), Image.Resampling.BOX)


def _centre_box(w: int, h: int, s: float) -> tuple[float, float]:
    """Offset that centres the 100×100 unit box in a (w, h) canvas scaled by ``s``."""
    return (w * _SS - 100 * s) / 2, (h * _SS - 100 * s) / 2


ShapePainter = Callable[[ImageDraw.ImageDraw, Callable[[float, float], tuple[float, float]], float], None]


def _poly(
    d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], pts: list[tuple[float, float]]
) -> None:
    d.polygon([p(x, y) for x, y in pts], fill=255)


def _line(
    d: ImageDraw.ImageDraw,
    p: Callable[[float, float], tuple[float, float]],
    s: float,
    pts: list[tuple[float, float]],
    width: float,
) -> None:
    d.line([p(x, y) for x, y in pts], fill=255, width=max(1, round(width * s)), joint="curve")


def _ellipse(
    d: ImageDraw.ImageDraw,
    p: Callable[[float, float], tuple[float, float]],
    box: tuple[float, float, float, float],
    width: float = 0,
    s: float = 1,
) -> None:
    a, b = p(box[0], box[1]), p(box[2], box[3])
    if width:
        d.ellipse((a, b), outline=255, width=max(1, round(width * s)))
    else:
        d.ellipse((a, b), fill=255)


def _battery(level: int) -> ShapePainter:
    def paint(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
        d.rounded_rectangle((p(30, 12), p(70, 92)), radius=6 * s, outline=255, width=round(7 * s))
        d.rectangle((p(42, 4), p(58, 12)), fill=255)
        top = 88 - 72 * max(0, min(100, level)) / 100
        d.rectangle((p(37, top), p(63, 85)), fill=255)

    return paint


def _wifi(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.pieslice((p(2, 10), p(98, 106)), 225, 315, fill=255)


def _signal(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _poly(d, p, [(10, 90), (90, 10), (90, 90)])


def _bluetooth(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _line(d, p, s, [(28, 30), (72, 70), (50, 90), (50, 10), (72, 30), (28, 70)], 9)


def _plane(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _poly(
        d,
        p,
        [
            (46, 8),
            (54, 8),
            (56, 40),
            (92, 60),
            (92, 68),
            (56, 58),
            (56, 80),
            (68, 90),
            (68, 96),
            (50, 90),
            (32, 96),
            (32, 90),
            (44, 80),
            (44, 58),
            (8, 68),
            (8, 60),
            (44, 40),
        ],
    )


def _back(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.polygon([p(22, 50), p(78, 16), p(78, 84)], outline=255, width=round(8 * s))


def _home(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _ellipse(d, p, (18, 18, 82, 82), 8, s)


def _recents(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.rounded_rectangle((p(20, 20), p(80, 80)), radius=6 * s, outline=255, width=round(8 * s))


def _arrow_left(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _line(d, p, s, [(84, 50), (18, 50)], 9)
    _line(d, p, s, [(46, 20), (16, 50), (46, 80)], 9)


def _plus(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.rectangle((p(45, 14), p(55, 86)), fill=255)
    d.rectangle((p(14, 45), p(86, 55)), fill=255)


def _minus(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.rectangle((p(14, 45), p(86, 55)), fill=255)


def _search(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _ellipse(d, p, (12, 12, 64, 64), 9, s)
    _line(d, p, s, [(58, 58), (88, 88)], 11)


def _close(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _line(d, p, s, [(20, 20), (80, 80)], 9)
    _line(d, p, s, [(80, 20), (20, 80)], 9)


def _check(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _line(d, p, s, [(16, 52), (40, 76), (86, 26)], 12)


def _chevron(points: list[tuple[float, float]]) -> ShapePainter:
    def paint(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
        _line(d, p, s, points, 10)

    return paint


def _send(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _poly(d, p, [(10, 14), (92, 50), (10, 86), (18, 56), (60, 50), (18, 44)])


def _cart(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _line(d, p, s, [(6, 14), (22, 14), (34, 64), (82, 64), (92, 28), (26, 28)], 8)
    _ellipse(d, p, (30, 72, 46, 88))
    _ellipse(d, p, (70, 72, 86, 88))


def _star(filled: bool) -> ShapePainter:
    def paint(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
        pts = []
        for i in range(10):
            r = 46 if i % 2 == 0 else 19
            a = -math.pi / 2 + i * math.pi / 5
            pts.append(p(50 + r * math.cos(a), 54 + r * math.sin(a)))
        if filled:
            d.polygon(pts, fill=255)
        else:
            d.polygon(pts, outline=255, width=round(7 * s))

    return paint


def _delete(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.rectangle((p(16, 18), p(84, 26)), fill=255)
    d.rectangle((p(40, 8), p(60, 18)), fill=255)
    d.rounded_rectangle((p(24, 30), p(76, 92)), radius=6 * s, outline=255, width=round(8 * s))


def _more(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    for y in (18, 50, 82):
        _ellipse(d, p, (41, y - 9, 59, y + 9))


def _apps(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    for x in (20, 50, 80):
        for y in (20, 50, 80):
            _ellipse(d, p, (x - 10, y - 10, x + 10, y + 10))


def _shift(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.polygon(
        [p(50, 10), p(90, 52), p(68, 52), p(68, 88), p(32, 88), p(32, 52), p(10, 52)],
        outline=255,
        width=round(7 * s),
    )


def _backspace(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    d.polygon([p(6, 50), p(32, 18), p(94, 18), p(94, 82), p(32, 82)], outline=255, width=round(7 * s))
    _line(d, p, s, [(48, 36), (76, 64)], 7)
    _line(d, p, s, [(76, 36), (48, 64)], 7)


def _enter(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _line(d, p, s, [(82, 18), (82, 60), (20, 60)], 9)
    _line(d, p, s, [(40, 40), (18, 60), (40, 80)], 9)


def _alarm(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _ellipse(d, p, (14, 18, 86, 90), 8, s)
    _line(d, p, s, [(50, 34), (50, 56), (64, 66)], 8)


def _circle(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _ellipse(d, p, (0, 0, 100, 100))


def _ring(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _ellipse(d, p, (5, 5, 95, 95), 10, s)


def _dot(d: ImageDraw.ImageDraw, p: Callable[[float, float], tuple[float, float]], s: float) -> None:
    _ellipse(d, p, (28, 28, 72, 72))


SHAPES: dict[str, ShapePainter] = {
    "wifi": _wifi,
    "signal": _signal,
    "bluetooth": _bluetooth,
    "plane": _plane,
    "back": _back,
    "home": _home,
    "recents": _recents,
    "arrow_left": _arrow_left,
    "plus": _plus,
    "minus": _minus,
    "search": _search,
    "close": _close,
    "check": _check,
    "chevron_right": _chevron([(36, 16), (68, 50), (36, 84)]),
    "chevron_left": _chevron([(64, 16), (32, 50), (64, 84)]),
    "chevron_up": _chevron([(16, 64), (50, 32), (84, 64)]),
    "chevron_down": _chevron([(16, 36), (50, 68), (84, 36)]),
    "send": _send,
    "cart": _cart,
    "star": _star(True),
    "star_outline": _star(False),
    "delete": _delete,
    "more": _more,
    "apps": _apps,
    "shift": _shift,
    "backspace": _backspace,
    "enter": _enter,
    "alarm": _alarm,
    "circle": _circle,
    "ring": _ring,
    "dot": _dot,
}


@lru_cache(maxsize=2048)
def shape_mask(name: str, w: int, h: int) -> Image.Image:
    """An anti-aliased icon mask of ``w``×``h`` pixels (icon centred in a square)."""
    if name.startswith("battery:"):
        painter = _battery(int(name.split(":", 1)[1]))
    else:
        painter = SHAPES[name]
    img, d, s = _shape_canvas(w, h)
    ox, oy = _centre_box(w, h, s)

    def p(x: float, y: float) -> tuple[float, float]:
        return ox + x * s, oy + y * s

    painter(d, p, s)
    return _down(img, w, h)


@lru_cache(maxsize=1024)
def rrect_mask(w: int, h: int, r: int) -> Image.Image:
    img = Image.new("L", (w * _SS, h * _SS), 0)
    ImageDraw.Draw(img).rounded_rectangle((0, 0, w * _SS - 1, h * _SS - 1), radius=r * _SS, fill=255)
    return _down(img, w, h)


@lru_cache(maxsize=1024)
def ring_mask(w: int, h: int, r: int, width: int) -> Image.Image:
    img = Image.new("L", (w * _SS, h * _SS), 0)
    ImageDraw.Draw(img).rounded_rectangle(
        (0, 0, w * _SS - 1, h * _SS - 1), radius=r * _SS, outline=255, width=width * _SS
    )
    return _down(img, w, h)


@lru_cache(maxsize=8192)
def text_mask(text: str, size: int, bold: bool) -> Image.Image:
    """One line of text, ``text_width`` × ``line_height`` pixels, drawn from the ascender line."""
    img = Image.new("L", (max(1, text_width(text, size, bold)), line_height(size, bold)), 0)
    ImageDraw.Draw(img).text((0, 0), text, font=font(size, bold), fill=255, anchor="la")
    return img


@lru_cache(maxsize=16)
def alpha_mask(w: int, h: int, alpha: int) -> Image.Image:
    """A constant mask: pasting a colour through it tints the area (dialog scrims)."""
    return Image.new("L", (w, h), alpha)


def mask(key: MaskKey) -> Image.Image:
    kind = key[0]
    if kind == "alpha":
        return alpha_mask(key[1], key[2], key[3])
    if kind == "text":
        return text_mask(key[1], key[2], key[3])
    if kind == "rrect":
        return rrect_mask(key[1], key[2], key[3])
    if kind == "ring":
        return ring_mask(key[1], key[2], key[3], key[4])
    if kind == "shape":
        return shape_mask(key[1], key[2], key[3])
    raise KeyError(f"unknown mask kind {kind!r}")


@lru_cache(maxsize=8)
def wallpaper(index: int, w: int, h: int) -> Image.Image:
    """A vertical two-colour gradient (drawn as 1-pixel-wide strip, then stretched)."""
    top, bottom = WALLPAPERS[index % len(WALLPAPERS)]
    strip = Image.new("RGB", (1, 256))
    for i in range(256):
        t = i / 255
        strip.putpixel((0, i), tuple(round(a + (b - a) * t) for a, b in zip(top, bottom, strict=True)))
    return strip.resize((w, h), Image.Resampling.BILINEAR)


def image(key: MaskKey) -> Image.Image:
    if key[0] == "wallpaper":
        return wallpaper(key[1], key[2], key[3])
    raise KeyError(f"unknown image kind {key[0]!r}")
