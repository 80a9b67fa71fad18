"""Coordinate spaces and Qwen's ``smart_resize``.

Wrong tap coordinates are the most reported bug of GUI-agent runtimes: a model answers in *its*
coordinate space and the runtime must map that to screen pixels exactly. Every model declares one
of four spaces:

* ``pixels`` — screen pixels (the screenshot as captured).
* ``pixels_resized`` — pixels of the screenshot after ``smart_resize`` (GUI-Owl v1, Qwen2.5-VL).
* ``relative_1000`` — 0..1000 on both axes (Qwen2-VL, UI-TARS, GUI-Owl-1.5, Seed-VL).
* ``normalized`` — 0..1 floats (Hi-Agent data).

The same ``smart_resize`` decides the size of the image the model sees, so the mapping and the
image can never disagree.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

#: Qwen2.5-VL's patch (14) × spatial merge (2).
QWEN_FACTOR = 28
#: GUI-Owl / Mobile-Agent-v3 budgets: min 4 merged patches, max 12800 of them.
DEFAULT_MIN_PIXELS = 3136
DEFAULT_MAX_PIXELS = 12800 * 28 * 28

#: How a screenshot is sent to a model (see :mod:`agent_runtime.models.images`).
ImageFormat = Literal["png", "jpeg"]


class Size(NamedTuple):
    """A width × height pair in pixels."""

    width: int
    height: int


class CoordSpace(StrEnum):
    """The space a model's coordinates live in."""

    PIXELS = "pixels"
    PIXELS_RESIZED = "pixels_resized"
    RELATIVE_1000 = "relative_1000"
    NORMALIZED = "normalized"


def _round_by(x: float, f: int) -> int:
    return round(x / f) * f


def _floor_by(x: float, f: int) -> int:
    return math.floor(x / f) * f


def _ceil_by(x: float, f: int) -> int:
    return math.ceil(x / f) * f


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = DEFAULT_MIN_PIXELS,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2-VL's resize rule; returns ``(height, width)`` like the original.

    Both sides become multiples of ``factor``, the area stays within ``[min_pixels, max_pixels]``
    and the aspect ratio is kept as closely as possible.

    >>> smart_resize(2400, 1080)
    (2408, 1092)
    >>> smart_resize(1080, 1920)
    (1092, 1932)
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} is over 200, which Qwen-VL cannot take")
    h_bar = max(factor, _round_by(height, factor))
    w_bar = max(factor, _round_by(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, _floor_by(height / beta, factor))
        w_bar = max(factor, _floor_by(width / beta, factor))
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = _ceil_by(height * beta, factor)
        w_bar = _ceil_by(width * beta, factor)
    return h_bar, w_bar


class ImageBudget(BaseModel):
    """How a model wants its images sized (Qwen's min/max pixels)."""

    model_config = ConfigDict(frozen=True)

    min_pixels: int = Field(DEFAULT_MIN_PIXELS, gt=0)
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0)
    factor: int = Field(QWEN_FACTOR, gt=0)

    def resized(self, screen: Size) -> Size:
        """The size a screenshot of ``screen`` is resized to before it is sent to the model."""
        h, w = smart_resize(screen.height, screen.width, self.factor, self.min_pixels, self.max_pixels)
        return Size(w, h)


class CoordMapper(BaseModel):
    """Maps between a model's coordinate space and the screen for one screen size."""

    model_config = ConfigDict(frozen=True)

    space: CoordSpace
    screen: Size
    budget: ImageBudget = ImageBudget()

    def _extent(self) -> tuple[float, float]:
        """The model-space width and height that correspond to the full screen."""
        match self.space:
            case CoordSpace.PIXELS:
                return float(self.screen.width), float(self.screen.height)
            case CoordSpace.PIXELS_RESIZED:
                r = self.budget.resized(self.screen)
                return float(r.width), float(r.height)
            case CoordSpace.RELATIVE_1000:
                return 1000.0, 1000.0
            case CoordSpace.NORMALIZED:
                return 1.0, 1.0
        raise ValueError(f"unknown coordinate space {self.space!r}")

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        """Model coordinates → integer screen pixels, clamped onto the screen.

        Non-finite coordinates raise ``ValueError`` with a message instead of ``round``'s
        "cannot convert float NaN to integer"; parsed actions never carry them (see
        :data:`agent_runtime.actions.Coordinate`), so reaching this is a caller's bug.
        """
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"cannot map the non-finite point ({x}, {y}) onto the screen")
        ew, eh = self._extent()
        sx = round(x * self.screen.width / ew)
        sy = round(y * self.screen.height / eh)
        return (
            min(max(sx, 0), self.screen.width - 1),
            min(max(sy, 0), self.screen.height - 1),
        )

    def from_screen(self, x: float, y: float) -> tuple[float, float]:
        """Screen pixels → model coordinates (exact floats; round them yourself if needed)."""
        ew, eh = self._extent()
        return x * ew / self.screen.width, y * eh / self.screen.height
