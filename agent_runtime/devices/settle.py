"""Wait for a UI to stop changing instead of sleeping a fixed time.

The reference Mobile-Agent-v3 sleeps 2–3 s after every action; AndroidWorld instead waits until
consecutive UI snapshots are equal. Both device drivers use :func:`wait_until_stable` with a cheap
*probe*: the action has settled once ``required`` polls in a row are the same, or the timeout
passes (then the result says so and the caller moves on — an ever-changing screen such as a video
must not stall a run).

Exact equality of screenshots never holds while a text caret blinks (Android and Tk blink it every
0.5 s), so screenshot probes compare grey thumbnails with :func:`nearly_same`: a handful of changed
thumbnail pixels (a caret) counts as unchanged, a typed character or a new screen does not.
"""

from __future__ import annotations

import io
import operator
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from PIL.Image import Image

#: Thumbnails are 1/8 of the screen per side: a 1080×2400 phone becomes 135×300.
THUMB_FACTOR = 8


class SettleOptions(BaseModel):
    """How long and how often to poll. Config: ``[device] options`` ``settle_*`` keys."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(3.0, ge=0, le=60, description="give up waiting after this long")
    poll_s: float = Field(0.15, gt=0, le=5, description="pause between two probes")
    min_delay_s: float = Field(
        0.05, ge=0, le=5, description="pause before the first probe (lets the app react)"
    )
    required: int = Field(2, ge=2, le=10, description="equal consecutive probes that count as stable")


class SettleResult(BaseModel):
    """What happened while waiting; recorded in ``ActionResult.data``."""

    model_config = ConfigDict(frozen=True)

    stable: bool
    waited_s: float
    polls: int


def thumbnail(image: Image | bytes) -> Image:
    """A grey 1/8-size copy of a screenshot (PIL image, or PNG/JPEG bytes), ~9 ms for a phone PNG."""
    from PIL import Image as PILImage

    img = PILImage.open(io.BytesIO(image)) if isinstance(image, bytes | bytearray) else image
    return img.convert("L").reduce(THUMB_FACTOR)


def nearly_same(a: Image, b: Image, *, tolerance: float = 0.0005, level: int = 24) -> bool:
    """True when at most ``tolerance`` of the pixels differ by more than ``level`` grey levels.

    At 1/8 scale a phone's caret touches ~8 of 40,500 pixels; one typed character ~40.
    """
    from PIL import ImageChops

    if a.size != b.size:
        return False
    changed = ImageChops.difference(a, b).point(lambda v: 255 if v > level else 0).histogram()[255]
    return changed <= max(2, tolerance * a.width * a.height)


def wait_until_stable(
    probe: Callable[[], Any],
    options: SettleOptions,
    *,
    same: Callable[[Any, Any], bool] = operator.eq,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> SettleResult:
    """Call ``probe`` until ``options.required`` consecutive values are ``same``.

    ``options.timeout_s == 0`` disables waiting (one probe is not even taken). The probe's own
    run time counts against the timeout, so a slow probe (a real phone's UI dump) polls less often
    rather than overrunning the bound by much.
    """
    start = clock()
    if options.timeout_s == 0:
        return SettleResult(stable=False, waited_s=0.0, polls=0)
    if options.min_delay_s:
        sleep(options.min_delay_s)
    deadline = start + options.timeout_s
    last: Any = None
    streak = 0
    polls = 0
    while True:
        value = probe()
        polls += 1
        streak = streak + 1 if polls > 1 and same(last, value) else 1
        last = value
        if streak >= options.required:
            return SettleResult(stable=True, waited_s=clock() - start, polls=polls)
        remaining = deadline - clock()
        if remaining <= 0:
            return SettleResult(stable=False, waited_s=clock() - start, polls=polls)
        sleep(min(options.poll_s, remaining))


__all__ = ["SettleOptions", "SettleResult", "nearly_same", "thumbnail", "wait_until_stable"]
