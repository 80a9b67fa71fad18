"""Screenshots as the models get them: at the image budget's size, in the model config's format,
encoded once per observation however many roles read it, with coordinates that map back to the
screen point they show, and a trace whose screenshots stay readable."""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from PIL import Image, ImageChops, ImageDraw
from pydantic import PrivateAttr, ValidationError

from agent_runtime.config import ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.coords import CoordMapper, CoordSpace, ImageBudget, Size
from agent_runtime.models import images
from agent_runtime.models.images import ImageEncoder, decode_data_url, encode_for, resample_for
from agent_runtime.roles import reflector
from agent_runtime.roles.caller import ImageInput, RoleCaller
from agent_runtime.roles.templates import load_template
from agent_runtime.runtime import Runtime
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, notetaker_reply
from tests.test_graph import SETTINGS, make_config, phone_with_wifi_off, wifi_manager, wifi_worker

SCREEN = Size(1080, 2400)
SENT = Size(1092, 2408)  # smart_resize(2400, 1080) with the default budget


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _payload(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


class ImageRecordingModel(ScriptedChatModel):
    """A scripted model that also keeps every image URL it was sent, with the calling role."""

    _images: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _image_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        role = str(((run_manager.metadata if run_manager else None) or {}).get("agent_runtime_role"))
        for message in messages:
            for part in message.content if isinstance(message.content, list) else []:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    with self._image_lock:
                        self._images.append((role, part["image_url"]["url"]))
        return super()._generate(messages, stop, run_manager, **kw)

    @property
    def images(self) -> list[tuple[str, str]]:
        with self._image_lock:
            return list(self._images)


@pytest.fixture
def encoder(monkeypatch):
    """A fresh shared encoder whose real encodes (cache misses) are counted by screenshot hash."""
    fresh = ImageEncoder()
    monkeypatch.setattr(images, "_default_encoder", fresh)
    encoded: list[str] = []
    real = images._encode

    def counting(data, *args, **kwargs):
        encoded.append(hashlib.sha1(data).hexdigest())
        return real(data, *args, **kwargs)

    monkeypatch.setattr(images, "_encode", counting)
    return SimpleNamespace(encoder=fresh, encoded=encoded)


def test_a_run_encodes_each_observation_once_at_the_budget_size_and_its_trace_stays_readable(
    tmp_path, encoder
):
    phone = phone_with_wifi_off()
    model = ImageRecordingModel(
        script={
            "manager": wifi_manager(phone),
            "worker": wifi_worker(phone),
            "reflector": "### Outcome ###\nA",
            "notetaker": notetaker_reply("- nothing special"),
        }
    )
    roles = ("manager", "worker", "reflector", "notetaker")
    runtime = Runtime(make_config(), models=dict.fromkeys(roles, model), runs_dir=tmp_path)
    result = runtime.run("Turn on Wi-Fi", device=phone)
    # The Worker's clicks are written in the sent image's pixels and land on the right elements.
    assert result.status == "completed" and phone.app(SETTINGS).state.wifi

    loaded = load_run(result.run_dir)
    refs = sorted(p.relative_to(result.run_dir).as_posix() for p in (result.run_dir / "screens").iterdir())
    captured = {ref: loaded.screen(ref) for ref in refs}
    distinct = {hashlib.sha1(png).hexdigest() for png in captured.values()}
    # One encode per distinct observation, however many roles looked at it.
    assert sorted(encoder.encoded) == sorted(distinct)
    assert len(model.images) > len(encoder.encoded)
    assert {role for role, _ in model.images} == set(roles)
    assert encoder.encoder.misses == len(distinct) and encoder.encoder.hits == len(model.images) - len(
        distinct
    )

    # What every role was sent: a JPEG (the default image_format) at the budget's size.
    for _, url in model.images:
        assert url.startswith("data:image/jpeg;base64,")
        with Image.open(io.BytesIO(_payload(url))) as img:
            assert img.format == "JPEG" and img.size == SENT

    # The trace keeps the captured screenshots (no re-encode), readable, and its call records
    # name them with the size the model saw.
    for png in captured.values():
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        with Image.open(io.BytesIO(png)) as img:
            img.load()
            assert img.size == SCREEN
    parts = [
        p
        for call in loaded.calls
        for m in call.messages
        for p in m["content"]
        if isinstance(m["content"], list)
    ]
    image_refs = [p for p in parts if p.get("type") == "image_ref"]
    assert len(image_refs) == len(model.images)
    assert all(p["size"] == list(SENT) and p["ref"] in captured for p in image_refs)


def test_each_bytes_object_is_hashed_once_and_equal_bytes_share_an_entry(monkeypatch):
    hashed: list[int] = []

    def sha1(data: bytes):
        hashed.append(len(data))
        return hashlib.sha1(data)

    monkeypatch.setattr(images, "hashlib", SimpleNamespace(sha1=sha1))
    enc = ImageEncoder()
    png = _png(Image.new("RGB", (100, 200), (5, 6, 7)))
    first = enc.encode(png, ImageBudget(), fmt="jpeg")
    for _ in range(3):  # Manager, Worker, Notetaker: the observation's own bytes object
        assert enc.encode(png, ImageBudget(), fmt="jpeg") is first
    assert len(hashed) == 1
    copy = bytes(bytearray(png))  # equal content, another object: hashed, then the same entry
    assert enc.encode(copy, ImageBudget(), fmt="jpeg") is first
    assert len(hashed) == 2 and (enc.misses, enc.hits) == (1, 4)


def _caller(cfg: ModelConfig, model: ImageRecordingModel) -> RoleCaller:
    return RoleCaller("reflector", model, cfg, load_template(reflector.TEMPLATE))


def _sent_by(cfg: ModelConfig, png: bytes) -> tuple[bytes, list[int]]:
    """What a role call with ``cfg`` sends for ``png``: the image bytes, and the traced size."""
    model = ImageRecordingModel(script={"reflector": "### Outcome ###\nA"})
    records: list[Any] = []
    caller = _caller(cfg, model)
    caller.record = records.append
    inputs = reflector.ReflectorInputs(task="T", screen_note="n", action="{}").model_dump()
    result = caller.call(
        inputs, reflector.parse_reflector, images=[ImageInput(png, "screens/0000.png")], step=0
    )
    assert result.ok
    ((_, url),) = model.images
    (ref,) = [p for p in records[0].messages[0]["content"] if p["type"] == "image_ref"]
    return _payload(url), ref["size"]


def test_the_model_config_picks_jpeg_or_png_and_the_quality():
    screen = Image.new("RGB", SCREEN, "white")
    ImageDraw.Draw(screen).text((100, 300), "Wi-Fi  Bluetooth  Airplane mode", fill="black")
    png = _png(screen)
    assert ModelConfig().image_format == "jpeg" and ModelConfig().jpeg_quality == 90

    jpeg, size = _sent_by(ModelConfig(), png)
    lossless, png_size = _sent_by(ModelConfig(image_format="png"), png)
    low, _ = _sent_by(ModelConfig(jpeg_quality=30), png)
    assert size == png_size == list(SENT)
    with Image.open(io.BytesIO(jpeg)) as a, Image.open(io.BytesIO(lossless)) as b:
        assert (a.format, a.size) == ("JPEG", SENT) and (b.format, b.size) == ("PNG", SENT)
    assert len(low) < len(jpeg)

    # A role can override its model's format; nonsense is refused.
    config = RuntimeConfig(
        models={"default": ModelConfig()}, roles={"worker": RoleConfig(image_format="png", jpeg_quality=75)}
    )
    assert config.model_for("worker").image_format == "png" and config.model_for("worker").jpeg_quality == 75
    assert config.model_for("manager").image_format == "jpeg"
    with pytest.raises(ValidationError):
        ModelConfig(image_format="webp")
    with pytest.raises(ValidationError):
        ModelConfig(jpeg_quality=0)


def test_encode_for_uses_the_model_configs_settings(encoder):
    png = _png(Image.new("RGB", (300, 600), (40, 90, 200)))
    small = ModelConfig(min_pixels=56 * 56, max_pixels=112 * 112, image_format="png")
    out = encode_for(png, small)
    assert out.format == "png" and out.size == small.budget.resized(Size(300, 600))
    assert encode_for(png, small) is out and len(encoder.encoded) == 1
    assert encode_for(png, ModelConfig()).format == "jpeg" and len(encoder.encoded) == 2


def test_a_near_identity_resize_sends_only_captured_pixels():
    """The budget's rounding (1080→1092) repeats lines instead of blending them (NEAREST)."""
    screen = Image.new("RGB", SCREEN)
    draw = ImageDraw.Draw(screen)
    palette = [(255, 0, 0), (0, 160, 0), (0, 0, 255), (250, 250, 250), (20, 20, 20)]
    for i in range(0, SCREEN.width, 7):  # thin stripes: any blending would make new colours
        draw.rectangle((i, 0, i + 2, SCREEN.height), fill=palette[(i // 7) % len(palette)])
    for j in range(0, SCREEN.height, 11):
        draw.line((0, j, SCREEN.width, j), fill=palette[(j // 11) % len(palette)])
    out = ImageEncoder().encode(_png(screen), ImageBudget(), fmt="png")
    sent = decode_data_url(out.data_url)
    assert sent.size == SENT
    captured = {c for _, c in screen.getcolors(maxcolors=1 << 16)}
    assert {c for _, c in sent.getcolors(maxcolors=1 << 16)} <= captured
    assert resample_for(SCREEN, SENT) is Image.Resampling.NEAREST
    assert resample_for(SCREEN, Size(672, 1484)) is Image.Resampling.BICUBIC


def _marker_centre(img: Image.Image) -> tuple[float, float]:
    """The centre of the red marker in ``img`` (continuous pixel coordinates)."""
    r, g, _ = img.convert("RGB").split()
    red = ImageChops.logical_and(
        r.point(lambda v: 255 if v > 150 else 0, "1"), g.point(lambda v: 255 if v < 100 else 0, "1")
    )
    box = red.getbbox()
    assert box is not None, "the marker is not in the sent image"
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
@pytest.mark.parametrize(
    "max_pixels", [ModelConfig().max_pixels, 1280 * 28 * 28]
)  # rounding; a real downscale
@pytest.mark.parametrize(
    "space", [CoordSpace.PIXELS_RESIZED, CoordSpace.RELATIVE_1000, CoordSpace.NORMALIZED]
)
def test_a_point_in_the_sent_image_maps_back_to_the_screen_point_it_shows(fmt, max_pixels, space):
    target = (700, 1800)
    screen = Image.new("RGB", SCREEN, "white")
    ImageDraw.Draw(screen).rectangle(
        (target[0] - 10, target[1] - 10, target[0] + 10, target[1] + 10), fill="red"
    )
    cfg = ModelConfig(max_pixels=max_pixels, image_format=fmt, coords=space)
    out = ImageEncoder().encode(_png(screen), cfg.budget, fmt=fmt)
    sent = decode_data_url(out.data_url)
    assert sent.size == out.size == cfg.budget.resized(SCREEN)
    cx, cy = _marker_centre(sent)
    # The model answers in its space: the sent image's pixels, or fractions of it.
    extent = {
        CoordSpace.PIXELS_RESIZED: (1.0, 1.0),
        CoordSpace.RELATIVE_1000: (1000 / sent.width, 1000 / sent.height),
        CoordSpace.NORMALIZED: (1 / sent.width, 1 / sent.height),
    }[space]
    mapper = CoordMapper(space=space, screen=SCREEN, budget=cfg.budget)
    sx, sy = mapper.to_screen(cx * extent[0], cy * extent[1])
    tolerance = 1 + SCREEN.width / sent.width  # a sent pixel is this many screen pixels, plus rounding
    assert abs(sx - target[0]) <= tolerance and abs(sy - target[1]) <= tolerance


def test_a_truncated_screenshot_is_a_clear_error():
    png = _png(Image.effect_noise((300, 600), 60).convert("RGB"))
    for fmt in ("jpeg", "png"):
        with pytest.raises(ValueError, match="not a readable image"):
            ImageEncoder().encode(png[: len(png) // 2], ImageBudget(), fmt=fmt)
