"""Screenshot encoding: resized by smart_resize, encoded once per screenshot."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from agent_runtime.coords import ImageBudget, Size, smart_resize
from agent_runtime.models.images import ImageEncoder, decode_data_url
from agent_runtime.observation import Observation


def _png(size: tuple[int, int], color: tuple[int, int, int] = (10, 120, 200), mode: str = "RGB") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, color).save(buf, "PNG")
    return buf.getvalue()


def _payload(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


def test_same_screenshot_for_two_roles_is_encoded_once() -> None:
    enc = ImageEncoder()
    png = _png((1080, 2400))
    obs = Observation(screenshot=png, size=Size(1080, 2400))
    budget = ImageBudget()
    manager = enc.encode(obs, budget)
    worker = enc.encode(obs, budget)
    notetaker = enc.encode(png, budget)  # raw bytes of the same screenshot hit the same entry
    assert (enc.misses, enc.hits) == (1, 2)
    assert manager is worker is notetaker
    h, w = smart_resize(2400, 1080)
    assert manager.size == Size(w, h) == Size(1092, 2408)
    assert manager.original == Size(1080, 2400)
    with Image.open(io.BytesIO(_payload(manager.data_url))) as img:
        assert img.size == (1092, 2408)
        assert img.format == "PNG"
    assert manager.part() == {"type": "image_url", "image_url": {"url": manager.data_url}}


def test_budget_and_format_are_part_of_the_key() -> None:
    enc = ImageEncoder()
    png = _png((1920, 1080))
    small = ImageBudget(min_pixels=56 * 56, max_pixels=112 * 112)
    a = enc.encode(png, ImageBudget())
    b = enc.encode(png, small)
    c = enc.encode(png, small, fmt="jpeg", jpeg_quality=70)
    assert enc.misses == 3 and enc.hits == 0
    h, w = smart_resize(1080, 1920, min_pixels=small.min_pixels, max_pixels=small.max_pixels)
    assert b.size == Size(w, h) and w * h <= small.max_pixels
    assert a.size == Size(1932, 1092)
    assert c.data_url.startswith("data:image/jpeg;base64,")
    with Image.open(io.BytesIO(_payload(c.data_url))) as img:
        assert img.format == "JPEG" and img.size == (w, h)


def test_already_sized_png_is_sent_as_captured() -> None:
    png = _png((1092, 2408), mode="RGBA")
    out = ImageEncoder().encode(png, ImageBudget())
    assert out.size == out.original == Size(1092, 2408)
    assert _payload(out.data_url) == png


def test_lru_evicts_the_oldest() -> None:
    enc = ImageEncoder(capacity=2)
    shots = [_png((100, 100), (i, 0, 0)) for i in range(3)]
    for s in shots:
        enc.encode(s, ImageBudget())
    enc.encode(shots[2], ImageBudget())
    assert enc.hits == 1
    enc.encode(shots[0], ImageBudget())  # evicted: encoded again
    assert enc.misses == 4


def test_unreadable_screenshot_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not a readable image"):
        ImageEncoder().encode(b"not a png", ImageBudget())


def test_decode_data_url_round_trip_and_rejections() -> None:
    url = ImageEncoder().encode(_png((56, 56), (1, 2, 3)), ImageBudget()).data_url
    img = decode_data_url(url)
    assert img.mode == "RGB" and img.size == (56, 56) and img.getpixel((0, 0)) == (1, 2, 3)
    with pytest.raises(ValueError, match="only data:"):
        decode_data_url("http://example.com/a.png")
    with pytest.raises(ValueError, match="base64"):
        decode_data_url("data:text/plain,hello")
    with pytest.raises(ValueError, match="readable image"):
        decode_data_url("data:image/png;base64," + base64.b64encode(b"garbage").decode())
