"""Screenshots to image parts: resized with the model's budget, encoded once, cheaply.

Several roles send the same screenshot in one step (Manager, Worker, Reflector's "after",
Notetaker). The encoder keeps a small LRU of data URLs keyed by screenshot hash, budget and
format, so each screenshot is encoded once however many roles send it; the hash of a bytes
object it has already seen is remembered too, so a multi-megabyte screenshot is not hashed again
for every role. The image is resized with the same :class:`~agent_runtime.coords.ImageBudget`
(``smart_resize``) that maps the model's coordinates back to the screen, so the image and the
coordinate mapping can never disagree.

What one encode costs (a 1080×2400 SimPhone screen → 1092×2408 on one core of a loaded 2-core
dev box, ``python benchmarks/overhead.py --json``): PNG decode ~5.5 ms, BICUBIC resize 43–53 ms,
PNG level 1 31–34 ms, JPEG q90 5–6 ms, base64 and sha1 < 0.5 ms; the old path (BICUBIC + PNG)
~96 ms, this one ~13 ms. So:

* **Near-identity resizes use NEAREST.** For a phone or desktop screen the budget usually only
  rounds each side to a multiple of 28 (1080→1092: 1.1 %). A bicubic pass over 2.6 M pixels for
  that costs ~45 ms and blurs every edge by a sub-pixel shift; NEAREST (~1.5 ms) repeats (or
  drops) one line in every ~90, so every pixel sent is a captured pixel, at most half a source
  pixel from where the exact scale puts it — the scale :class:`~agent_runtime.coords.CoordMapper`
  maps back with. Real rescales (more than :data:`NEAR_IDENTITY` on a side: a budget that binds)
  keep BICUBIC, as Qwen's own processor resizes.
* **JPEG is the runtime's default format** (``image_format``/``jpeg_quality`` in the model
  config): ~5 ms and ~110 KB at quality 90 against PNG level 1's ~31 ms and ~165–190 KB, PSNR
  ~43 dB against the resized pixels. ``image_format = "png"`` sends lossless PNG (level 1).
  :func:`encode_screenshot` and :meth:`ImageEncoder.encode` default to PNG for direct callers;
  role calls use :func:`encode_for`, which takes the model config's settings. A model under an
  official profile (:mod:`agent_runtime.profiles`) is sent the format its family's code sends
  (:func:`profile_image_format`: PNG) unless its config sets ``image_format``.

The trace never re-encodes: it stores the captured screenshot bytes as they came from the
device (``screens/NNNN.png``); anything that needs the model's view rebuilds it with this
encoder and the model config's settings, which is deterministic.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from PIL import Image, UnidentifiedImageError
from pydantic import BaseModel, ConfigDict

from agent_runtime.coords import ImageBudget, ImageFormat, Size
from agent_runtime.observation import Observation

if TYPE_CHECKING:
    from agent_runtime.config import ModelConfig

__all__ = [
    "NEAR_IDENTITY",
    "EncodedImage",
    "ImageEncoder",
    "ImageFormat",
    "decode_data_url",
    "default_encoder",
    "encode_for",
    "encode_screenshot",
    "profile_image_format",
    "resample_for",
]

_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
_PIL_FORMAT = {"png": "PNG", "jpeg": "JPEG"}
#: Largest relative change of either side that is resized with NEAREST (see the module doc):
#: 2 % covers the factor-28 rounding of every screen from ~700 px up.
NEAR_IDENTITY = 0.02


#: Freed image blocks Pillow keeps for reuse (``PILLOW_BLOCKS_MAX``; Pillow's default is 0).
#: Every encode allocates two ~10 MB images (the decoded screen, the resized one); fresh ones
#: are fresh pages, and faulting them in cost ~10 of a 22 ms encode. Two cached blocks (at most
#: 2 × 16 MB kept) take that to ~12 ms. An explicit ``PILLOW_BLOCKS_MAX`` is left alone.
PIL_BLOCKS_MAX = 2
if "PILLOW_BLOCKS_MAX" not in os.environ and Image.core.get_blocks_max() < PIL_BLOCKS_MAX:
    Image.core.set_blocks_max(PIL_BLOCKS_MAX)


def resample_for(original: Size, target: Size) -> Image.Resampling:
    """The filter a resize from ``original`` to ``target`` uses: NEAREST when both sides change
    by at most :data:`NEAR_IDENTITY` (budget rounding), BICUBIC for a real rescale.

    >>> resample_for(Size(1080, 2400), Size(1092, 2408)).name
    'NEAREST'
    >>> resample_for(Size(1080, 2400), Size(672, 1484)).name
    'BICUBIC'
    """
    near = all(abs(t - o) <= NEAR_IDENTITY * o for t, o in zip(target, original, strict=True))
    return Image.Resampling.NEAREST if near else Image.Resampling.BICUBIC


class EncodedImage(BaseModel):
    """A screenshot ready to send: a data URL of ``size`` pixels (resized from ``original``)."""

    model_config = ConfigDict(frozen=True)

    data_url: str
    size: Size
    original: Size
    format: ImageFormat
    nbytes: int

    def part(self) -> dict[str, Any]:
        """The OpenAI chat content part for this image."""
        return {"type": "image_url", "image_url": {"url": self.data_url}}


class ImageEncoder:
    """Resize + encode with an LRU cache; ``hits``/``misses`` count cache use.

    Encoding happens under the lock, so two roles asking for the same screenshot at once still
    encode it once.
    """

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[tuple[Any, ...], EncodedImage] = OrderedDict()
        #: id(bytes) -> (those bytes, their sha1): the bytes are held, so the id stays theirs.
        self._digests: OrderedDict[int, tuple[bytes, str]] = OrderedDict()
        self._lock = threading.Lock()

    def _digest(self, data: bytes) -> str:
        """sha1 of ``data``, remembered for the same bytes object (every role sends the
        observation's own bytes, so a step hashes its screenshot once)."""
        seen = self._digests.get(id(data))
        if seen is not None and seen[0] is data:
            self._digests.move_to_end(id(data))
            return seen[1]
        digest = hashlib.sha1(data).hexdigest()
        self._digests[id(data)] = (data, digest)
        if len(self._digests) > self.capacity:
            self._digests.popitem(last=False)
        return digest

    def encode(
        self,
        screenshot: Observation | bytes,
        budget: ImageBudget,
        *,
        fmt: ImageFormat = "png",
        jpeg_quality: int = 90,
    ) -> EncodedImage:
        """The data URL of a screenshot resized to ``budget.resized(size)``, as ``fmt``."""
        with self._lock:
            if isinstance(screenshot, Observation):
                data, digest = screenshot.screenshot, screenshot.screenshot_hash
            else:
                data, digest = screenshot, self._digest(screenshot)
        key = (
            digest,
            budget.min_pixels,
            budget.max_pixels,
            budget.factor,
            fmt,
            jpeg_quality if fmt == "jpeg" else 0,
        )
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return cached
            self.misses += 1
            encoded = _encode(data, budget, fmt, jpeg_quality)
            self._cache[key] = encoded
            if len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
            return encoded

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._digests.clear()
            self.hits = self.misses = 0


def _encode(data: bytes, budget: ImageBudget, fmt: ImageFormat, jpeg_quality: int) -> EncodedImage:
    try:
        img = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"screenshot is not a readable image: {exc}") from exc
    original = Size(*img.size)
    target = budget.resized(original)
    if target == original and (img.format or "").lower() == fmt:
        payload = data  # already the right size and format: send the captured bytes as they are
    else:
        try:
            img.load()
        except OSError as exc:  # a truncated or corrupt image fails when its pixels are decoded
            raise ValueError(f"screenshot is not a readable image: {exc}") from exc
        rgb = img if img.mode == "RGB" else img.convert("RGB")
        if target != original:
            rgb = rgb.resize(target, resample_for(original, target))
        buf = io.BytesIO()
        # PNG: zlib level 1, ~40 % less CPU than PIL's default 6 for ~7 % more bytes on phone
        # screens. JPEG keeps PIL's 4:2:0 chroma (4:4:4 costs ~60 % more CPU and 40 % more bytes).
        options = {"quality": jpeg_quality} if fmt == "jpeg" else {"compress_level": 1}
        rgb.save(buf, format=_PIL_FORMAT[fmt], **options)
        payload = buf.getvalue()
    url = f"data:{_MIME[fmt]};base64,{base64.b64encode(payload).decode('ascii')}"
    return EncodedImage(data_url=url, size=target, original=original, format=fmt, nbytes=len(payload))


_default_encoder = ImageEncoder()


def default_encoder() -> ImageEncoder:
    """The process-wide encoder every role shares."""
    return _default_encoder


def encode_screenshot(
    screenshot: Observation | bytes, budget: ImageBudget, *, fmt: ImageFormat = "png", jpeg_quality: int = 90
) -> EncodedImage:
    """Encode with the shared encoder (see :class:`ImageEncoder`).

    ``fmt`` defaults to lossless PNG; role calls pass their model config's ``image_format`` and
    ``jpeg_quality`` (JPEG 90 unless configured), see :func:`encode_for`.
    """
    return _default_encoder.encode(screenshot, budget, fmt=fmt, jpeg_quality=jpeg_quality)


def profile_image_format(model: ModelConfig, official: ImageFormat) -> ImageFormat:
    """The format a model under a profile is sent: ``image_format`` when the config sets it,
    else the format the family's own code sends (PNG for GUI-Owl, GUI-Owl-1.5 and UI-TARS:
    JPEG artefacts are pixels those models never saw in training).

    >>> from agent_runtime.config import ModelConfig
    >>> profile_image_format(ModelConfig(), "png")
    'png'
    >>> profile_image_format(ModelConfig(image_format="jpeg"), "png")
    'jpeg'
    """
    return model.image_format if "image_format" in model.model_fields_set else official


def encode_for(screenshot: Observation | bytes, model: ModelConfig) -> EncodedImage:
    """A screenshot as ``model`` is sent it: its image budget, ``image_format`` and
    ``jpeg_quality``, with the shared encoder (what every role call sends)."""
    return _default_encoder.encode(
        screenshot, model.budget, fmt=model.image_format, jpeg_quality=model.jpeg_quality
    )


#: Most pixels a received image may have (a 4K screen is 8.3 M): larger ones are refused from
#: their header, before any pixel is decoded, so a decompression bomb costs nothing.
MAX_DECODE_PIXELS = 32_000_000


def decode_data_url(url: str, *, max_pixels: int = MAX_DECODE_PIXELS) -> Image.Image:
    """A ``data:image/...;base64,`` URL to an RGB PIL image; ``ValueError`` for anything else.

    Only data URLs are accepted: fetching ``http(s)://`` images would let a prompt make the
    server reach arbitrary hosts. An image over ``max_pixels`` (a decompression bomb: a few KB
    that claim gigapixels) and data that is no image are ``ValueError`` too: the sender's fault.
    """
    if not url.startswith("data:"):
        raise ValueError(f"only data: image URLs are supported, got {url[:40]!r}")
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64") or not header[5:].startswith("image/"):
        raise ValueError(f"expected data:image/<type>;base64,<data>, got {header[:60]!r}")
    try:
        raw = base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"image data URL is not valid base64: {exc}") from exc
    try:
        img = Image.open(io.BytesIO(raw))  # reads the header only
    except Image.DecompressionBombError as exc:
        raise ValueError(f"the image is a decompression bomb: {exc}") from exc
    except Exception as exc:  # PIL raises OSError, SyntaxError, EOFError, struct.error … on bad data
        raise ValueError(f"image data URL does not hold a readable image: {exc}") from exc
    width, height = img.size
    if width * height > max_pixels:
        raise ValueError(
            f"the image is {width}x{height} pixels, more than the {max_pixels} this server decodes "
            "(a decompression bomb?); send a smaller screenshot"
        )
    try:
        img.load()
        return img.convert("RGB")
    except Exception as exc:
        raise ValueError(f"image data URL does not hold a readable image: {exc}") from exc
