"""Colours, sizes and fonts of the SimPhone look.

Sizes are given in Android ``dp`` and converted with the screen's density (a 1080-pixel-wide
screen is 411 dp wide, like a Pixel), so any configured screen size keeps the same proportions.
Fonts are DejaVu Sans when the system has it (readable, wide Unicode coverage) and Pillow's
bundled scalable font otherwise; nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import ImageFont

Color = tuple[int, int, int]

_FONT_DIRS = (
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/dejavu"),
    Path("/usr/share/fonts/TTF"),
    Path("/Library/Fonts"),
)


def _font_path(bold: bool) -> Path | None:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for folder in _FONT_DIRS:
        if (folder / name).is_file():
            return folder / name
    return None


@lru_cache(maxsize=64)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """A TrueType font of ``size`` pixels (cached; fonts are immutable)."""
    path = _font_path(bold)
    if path is not None:
        return ImageFont.truetype(str(path), size)
    loaded = ImageFont.load_default(size=size)
    assert isinstance(loaded, ImageFont.FreeTypeFont)
    return loaded


@lru_cache(maxsize=8192)
def text_width(text: str, size: int, bold: bool = False) -> int:
    return int(font(size, bold).getlength(text) + 0.999)


@lru_cache(maxsize=64)
def line_height(size: int, bold: bool = False) -> int:
    """Height of one line box: ascent + descent of the font."""
    ascent, descent = font(size, bold).getmetrics()
    return ascent + descent


@dataclass(frozen=True)
class Theme:
    """One colour scheme plus the scale factors of a screen."""

    dark: bool
    density: float  # pixels per dp
    font_scale: float
    width: int
    height: int
    bg: Color
    surface: Color  # cards, app bars, dialogs
    on_bg: Color  # primary text
    muted: Color  # secondary text, hints
    divider: Color
    primary: Color  # accent: buttons, switches, FABs
    on_primary: Color
    primary_soft: Color  # selected chips, switch tracks
    scrim: Color
    keyboard_bg: Color
    key_bg: Color
    key_special: Color
    danger: Color

    def dp(self, value: float) -> int:
        return round(value * self.density)

    def sp(self, value: float) -> int:
        """A font size in pixels (dp × the user's font scale)."""
        return max(8, round(value * self.density * self.font_scale))


def make_theme(width: int, height: int, *, dark: bool, font_scale: float = 1.0) -> Theme:
    density = width / 411.0
    if dark:
        return Theme(
            dark=True,
            density=density,
            font_scale=font_scale,
            width=width,
            height=height,
            bg=(19, 19, 24),
            surface=(36, 36, 44),
            on_bg=(232, 232, 238),
            muted=(158, 158, 170),
            divider=(60, 60, 70),
            primary=(168, 199, 250),
            on_primary=(10, 30, 70),
            primary_soft=(50, 70, 110),
            scrim=(5, 5, 8),
            keyboard_bg=(32, 33, 36),
            key_bg=(60, 64, 67),
            key_special=(45, 48, 52),
            danger=(242, 139, 130),
        )
    return Theme(
        dark=False,
        density=density,
        font_scale=font_scale,
        width=width,
        height=height,
        bg=(250, 249, 253),
        surface=(255, 255, 255),
        on_bg=(27, 27, 31),
        muted=(100, 100, 112),
        divider=(224, 224, 230),
        primary=(11, 87, 208),
        on_primary=(255, 255, 255),
        primary_soft=(211, 227, 253),
        scrim=(90, 90, 96),
        keyboard_bg=(232, 234, 237),
        key_bg=(255, 255, 255),
        key_special=(200, 204, 210),
        danger=(179, 38, 30),
    )


#: Icon colours and letters of the built-in apps (launcher, drawer, app bars).
ICON_COLORS: dict[str, Color] = {
    "com.android.settings": (95, 99, 104),
    "com.android.deskclock": (26, 115, 232),
    "com.android.contacts": (25, 135, 84),
    "com.android.messaging": (66, 133, 244),
    "com.android.calendar": (234, 67, 53),
    "com.android.browser": (251, 140, 0),
    "com.simphone.notes": (245, 180, 0),
    "com.simphone.expenses": (0, 150, 136),
    "com.simphone.shop": (156, 39, 176),
    "com.simphone.files": (26, 115, 232),
    "com.simphone.gallery": (52, 168, 83),
    "com.simphone.music": (255, 87, 34),
    "com.simphone.recorder": (229, 57, 53),
    "com.android.dialer": (30, 136, 229),
    "com.simphone.email": (219, 68, 55),
    "com.simphone.maps": (15, 157, 88),
    "com.simphone.weather": (3, 169, 244),
}

#: Wallpapers: (top colour, bottom colour) of a vertical gradient.
WALLPAPERS: tuple[tuple[Color, Color], ...] = (
    ((40, 70, 140), (120, 60, 130)),
    ((20, 100, 110), (30, 40, 80)),
    ((160, 90, 60), (60, 40, 90)),
    ((50, 110, 70), (20, 50, 60)),
)
