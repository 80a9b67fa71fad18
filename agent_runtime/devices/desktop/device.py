"""An X11 desktop as a device: mss screenshots, pyautogui input, xdotool typing.

Spec: ``desktop`` (the ``DISPLAY`` of the environment) or ``desktop::1`` / ``desktop:1`` (display
``:1``). Options (config ``[device] options``) are :class:`DesktopOptions`.

Why these parts (measured under Xvfb at 1920×1080, see ``benchmarks/devices.py``): mss grabs a
frame in ~3 ms where pyautogui needs 60–90 ms; PNG-encoding that frame costs 35–50 ms on two
cores while JPEG (quality 90) costs ~10 ms, so screenshots are JPEG unless ``image_format="png"``.
pyautogui reads ``DISPLAY`` when it is *imported* and raises ``KeyError`` without one, so it is
imported only here, after the environment is checked and prepared.

HiDPI: the screenshot is in physical pixels; pyautogui moves in logical points. The ratio is
measured once (grab size ÷ monitor size, and mss' virtual screen ÷ pyautogui's size) and applied
to every action; it is recorded in :meth:`info` and in each observation's ``extra``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.actions import (
    Action,
    ActionResult,
    Answer,
    Click,
    DoubleClick,
    Drag,
    HScroll,
    Interact,
    Key,
    LeftClickDrag,
    LongPress,
    MiddleClick,
    MouseMove,
    OpenApp,
    RightClick,
    Scroll,
    Swipe,
    SystemButton,
    Terminate,
    TripleClick,
    Type,
    Wait,
)
from agent_runtime.coords import Size
from agent_runtime.device import Device, DeviceInfo
from agent_runtime.devices.desktop.keys import normalise_keys
from agent_runtime.devices.desktop.text_entry import PinnedKeys, TypingMethod, XTyper
from agent_runtime.devices.settle import SettleOptions, nearly_same, thumbnail, wait_until_stable
from agent_runtime.errors import ConfigError, DeviceError
from agent_runtime.observation import Observation

XVFB_HINT = (
    "start a virtual display with 'Xvfb :1 -screen 0 1920x1080x24 &' and use desktop::1, or set DISPLAY"
)


class DesktopOptions(BaseModel):
    """Backend options for ``desktop`` devices."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    monitor: int = Field(
        1, ge=0, description="mss monitor index: 1 = first monitor, 0 = all monitors together"
    )
    image_format: Literal["jpeg", "png"] = Field(
        "jpeg", description="screenshot encoding (png is ~4x slower)"
    )
    jpeg_quality: int = Field(90, ge=50, le=100)
    typing: TypingMethod = Field("auto", description="auto | xdotool | pyautogui | clipboard")
    type_delay_ms: int = Field(5, ge=1, le=200, description="xdotool delay between keys (0 loses keys)")
    drag_duration_s: float = Field(0.3, ge=0, le=10, description="how long a drag moves the pointer")
    accessibility: bool = Field(True, description="add an AT-SPI tree to observations when available")
    atspi_python: str = Field(
        "/usr/bin/python3", description="a Python with pyatspi (Debian python3-pyatspi)"
    )
    settle_timeout_s: float = Field(2.0, ge=0, le=60, description="max wait for the screen to stop changing")
    settle_poll_s: float = Field(0.1, gt=0, le=5, description="pause between two stability probes")
    settle_min_delay_s: float = Field(0.05, ge=0, le=5, description="pause before the first probe")


def _prepare_x_environment(display: str) -> None:
    """Set what pyautogui/Xlib need: DISPLAY, an existing XAUTHORITY file, XDG_SESSION_TYPE."""
    os.environ["DISPLAY"] = display
    xauth = os.environ.get("XAUTHORITY")
    if not (xauth and Path(xauth).is_file()) and not (not xauth and (Path.home() / ".Xauthority").is_file()):
        empty = Path(tempfile.gettempdir()) / "agent-runtime-empty.Xauthority"
        empty.touch(exist_ok=True)
        os.environ["XAUTHORITY"] = str(empty)
    os.environ.setdefault("XDG_SESSION_TYPE", "x11")


def _normalise_display(arg: str | None) -> str | None:
    if arg is None:
        return os.environ.get("DISPLAY") or None
    arg = arg.strip()
    return f":{arg}" if arg.isdigit() else arg


class DesktopDevice(Device):
    """One monitor of an X11 display. Not thread-safe (see :class:`~agent_runtime.device.Device`)."""

    kind = "desktop"
    platform = "desktop"

    def __init__(self, display: str | None = None, options: DesktopOptions | None = None) -> None:
        self.options = options or DesktopOptions()
        self._x11 = sys.platform.startswith("linux")
        self.display = _normalise_display(display) if self._x11 else None
        if self._x11:
            if not self.display:
                raise DeviceError("no X display: DISPLAY is not set and the spec names none", hint=XVFB_HINT)
            _prepare_x_environment(self.display)
        self._sct = self._open_mss()
        self._pg = self._import_pyautogui()
        monitors = self._sct.monitors
        if self.options.monitor >= len(monitors):
            self.close()
            raise ConfigError(
                f"monitor {self.options.monitor} does not exist on {self.display}",
                hint=f"use monitor 0..{len(monitors) - 1} (0 = all monitors together)",
            )
        self._monitor = dict(monitors[self.options.monitor])
        shot = self._sct.grab(self._monitor)
        self._size = Size(shot.width, shot.height)
        logical = self._pg.size()
        self._scale_grab = (shot.width / self._monitor["width"], shot.height / self._monitor["height"])
        self._scale_virtual = (monitors[0]["width"] / logical[0], monitors[0]["height"] / logical[1])
        env = {k: v for k, v in os.environ.items()}
        self._typer = XTyper(
            env,
            method=self.options.typing,
            delay_ms=self.options.type_delay_ms,
            write=lambda text: self._pg.write(text),
            hotkey=lambda *keys: self._pg.hotkey(*keys),
            # pyautogui's own Xlib connection: its lifetime is the process's, like the pins'
            pins=PinnedKeys(self._pg._pyautogui_x11._display) if self._x11 else None,
        )
        self._settle = SettleOptions(
            timeout_s=self.options.settle_timeout_s,
            poll_s=self.options.settle_poll_s,
            min_delay_s=self.options.settle_min_delay_s,
        )
        self._tree = None
        if self.options.accessibility and self._x11:
            from agent_runtime.devices.desktop.atspi import AtspiTree

            self._tree = AtspiTree(self.options.atspi_python, env)

    @classmethod
    def from_spec(cls, arg: str | None, **options: Any) -> DesktopDevice:
        try:
            opts = DesktopOptions(**options)
        except ValidationError as exc:
            raise ConfigError(
                f"bad desktop device options: {exc.errors()[0]['msg']}", hint=str(exc)
            ) from None
        return cls(arg, opts)

    # -- setup -------------------------------------------------------------------------------

    def _open_mss(self) -> Any:
        import mss

        try:
            return mss.MSS(display=self.display) if self._x11 else mss.MSS()
        except Exception as exc:  # mss raises ScreenShotError for a dead or unauthorised display
            raise DeviceError(f"cannot open X display {self.display}: {exc}", hint=XVFB_HINT) from None

    def _import_pyautogui(self) -> Any:
        try:
            # python-xlib *prints* "no xauthority details available" to stdout for an empty
            # XAUTHORITY file (normal under Xvfb); keep it out of JSON output and CLI results.
            with contextlib.redirect_stdout(io.StringIO()):
                import pyautogui
        except Exception as exc:  # Xlib raises its own error types for a display it cannot open
            self._sct.close()
            raise DeviceError(
                f"pyautogui cannot use display {self.display}: {exc!r}", hint=XVFB_HINT
            ) from None
        if self._x11:
            # the X11 backend module is private: pyautogui's stubs do not declare it
            x11 = importlib.import_module("pyautogui._pyautogui_x11")
            bound = x11._display.get_display_name()
            if bound != self.display:
                self._sct.close()
                raise DeviceError(
                    f"pyautogui is bound to display {bound} in this process; cannot drive {self.display}",
                    hint="pyautogui reads DISPLAY once at import: use one desktop display per process",
                )
        pyautogui.PAUSE = 0  # we wait for the screen to settle instead of a fixed pause per call
        pyautogui.FAILSAFE = False  # a corner click is a legitimate agent action
        return pyautogui

    # -- Device ------------------------------------------------------------------------------

    @property
    def screen_size(self) -> Size:
        return self._size

    def _to_input(self, point: tuple[float, float] | None) -> tuple[int, int]:
        """Screenshot pixels → pyautogui coordinates (monitor offset and HiDPI scale applied)."""
        if point is None:
            # the graph maps element-index actions to screen pixels before a device sees them
            raise DeviceError(
                "an element-index action reached the device unresolved",
                hint="map it to screen pixels first: agent_runtime.alignment.screen_actions",
            )
        x = min(max(point[0], 0), self._size.width - 1)
        y = min(max(point[1], 0), self._size.height - 1)
        vx = self._monitor["left"] + x / self._scale_grab[0]
        vy = self._monitor["top"] + y / self._scale_grab[1]
        return round(vx / self._scale_virtual[0]), round(vy / self._scale_virtual[1])

    @property
    def scale(self) -> tuple[float, float]:
        """Screenshot pixels per input coordinate unit, per axis."""
        return (self._scale_grab[0] * self._scale_virtual[0], self._scale_grab[1] * self._scale_virtual[1])

    def _grab(self) -> Any:
        try:
            return self._sct.grab(self._monitor)
        except Exception as exc:  # the display went away
            raise DeviceError(f"screenshot of {self.display} failed: {exc}", hint=XVFB_HINT) from None

    def _encode(self, shot: Any) -> bytes:
        from PIL import Image

        out = io.BytesIO()
        if self.options.image_format == "png":
            img = Image.frombuffer("RGB", shot.size, shot.bgra, "raw", "BGRX", 0, 1)
            img.save(out, format="PNG", compress_level=1)
        else:
            # libjpeg-turbo reads RGBX rows directly: ~25% faster than converting to RGB first.
            img = Image.frombuffer("RGBX", shot.size, shot.bgra, "raw", "BGRX", 0, 1)
            img.save(out, format="JPEG", quality=self.options.jpeg_quality)
        return out.getvalue()

    def screenshot(self) -> bytes:
        """The selected monitor, encoded (the fast part of :meth:`observe`)."""
        return self._encode(self._grab())

    def observe(self) -> Observation:
        shot = self._grab()
        ts = time.time()
        image = self._encode(shot)
        ui_xml: str | None = None
        ui_error: str | None = "no accessibility tree (AT-SPI not available: the accessibility option is off)"
        if self._tree is not None:
            ui_xml, ui_error = self._tree.dump(self._monitor, self.scale)
        sx, sy = self.scale
        return Observation(
            screenshot=image,
            size=self._size,
            ui_xml=ui_xml,
            ui_error=ui_error,
            app=None,
            timestamp=ts,
            extra={
                "display": self.display,
                "monitor": self.options.monitor,
                "scale_x": sx,
                "scale_y": sy,
                "image_format": self.options.image_format,
            },
        )

    def _probe(self) -> Any:
        from PIL import Image

        shot = self._grab()
        return thumbnail(Image.frombuffer("RGB", shot.size, shot.bgra, "raw", "BGRX", 0, 1))

    def execute(self, action: Action) -> ActionResult:
        start = time.perf_counter()
        try:
            result, settle = self._dispatch(action)
        except DeviceError:
            raise
        except Exception as exc:  # Xlib/pyautogui/OS errors mean the display is gone or refused input
            raise DeviceError(f"{action.action} on {self.display} failed: {exc!r}", hint=XVFB_HINT) from None
        data = dict(result.data)
        if settle and result.ok:
            waited = wait_until_stable(self._probe, self._settle, same=nearly_same)
            data["settle"] = waited.model_dump()
        duration = (time.perf_counter() - start) * 1000
        return result.model_copy(update={"duration_ms": duration, "data": data})

    def _dispatch(self, action: Action) -> tuple[ActionResult, bool]:
        pg = self._pg
        match action:
            case Click(coordinate=p):
                pg.click(*self._to_input(p))
            case DoubleClick(coordinate=p):
                pg.doubleClick(*self._to_input(p))
            case TripleClick(coordinate=p):
                pg.tripleClick(*self._to_input(p))
            case RightClick(coordinate=p):
                pg.rightClick(*self._to_input(p))
            case MiddleClick(coordinate=p):
                pg.middleClick(*self._to_input(p))
            case MouseMove(coordinate=p):
                pg.moveTo(*self._to_input(p))
            case Drag(coordinate=p1, coordinate2=p2):
                self._drag(p1, p2, self.options.drag_duration_s)
            case LeftClickDrag(coordinate=p):
                self._drag_to(p, self.options.drag_duration_s)  # from wherever the pointer is
            case Swipe(coordinate=p1, coordinate2=p2, duration_ms=ms):
                self._drag(p1, p2, ms / 1000)
            case LongPress(coordinate=p, duration_ms=ms):
                pg.mouseDown(*self._to_input(p))
                time.sleep(ms / 1000)
                pg.mouseUp(*self._to_input(p))
            case Scroll(pixels=notches, coordinate=p):
                centre = (self._size.width / 2, self._size.height / 2)
                pg.scroll(notches, *self._to_input(p if p is not None else centre))
            case HScroll(pixels=notches, coordinate=p):
                centre = (self._size.width / 2, self._size.height / 2)
                pg.hscroll(notches, *self._to_input(p if p is not None else centre))
            case Key(keys=keys):
                names, bad = normalise_keys(keys, pg)
                if bad:
                    return ActionResult.failure(
                        f"unknown key name(s): {', '.join(map(repr, bad))}", keys=keys
                    ), False
                pg.hotkey(*names)
                return ActionResult.success("pressed " + "+".join(names), keys=names), True
            case Type(text=text, clear=clear, enter=enter):
                if clear:
                    self._clear_field()
                method = self._typer.type(text)
                if enter:
                    pg.press("enter")
                return ActionResult.success(f"typed {len(text)} characters", method=method), True
            case SystemButton(button="Enter"):
                pg.press("enter")
            case SystemButton(button=button):
                return ActionResult.failure(
                    f"system_button {button} is a phone button; on a desktop use a key action (e.g. alt+left)"
                ), False
            case OpenApp(text=name):
                return ActionResult.failure(
                    f"open_app({name!r}) is not available on a desktop; click the app's launcher instead"
                ), False
            case Wait(time=seconds):
                time.sleep(seconds)
                return ActionResult.success(f"waited {seconds:g} s"), False
            case Answer() | Interact() | Terminate():
                return ActionResult.recorded(action), False
            case _:
                return ActionResult.failure(f"action {action.action!r} is not supported on a desktop"), False
        return ActionResult.success(action.action), True

    def _drag(
        self, p1: tuple[float, float] | None, p2: tuple[float, float] | None, duration_s: float
    ) -> None:
        self._pg.moveTo(*self._to_input(p1))
        self._drag_to(p2, duration_s)

    def _drag_to(self, point: tuple[float, float] | None, duration_s: float) -> None:
        """Press the left button where the pointer is, move it to ``point`` and release it."""
        pg = self._pg
        target = self._to_input(point)
        pg.mouseDown()
        try:
            pg.moveTo(*target, duration=duration_s)
        finally:
            pg.mouseUp()

    def _clear_field(self) -> None:
        """Empty the focused text field in GTK/Qt/browsers (Ctrl+A) *and* Tk/Xaw (End, Shift+Home)."""
        pg = self._pg
        pg.hotkey("ctrl", "a")
        pg.press("backspace")
        pg.press("end")
        pg.hotkey("shift", "home")
        pg.press("backspace")

    def info(self) -> DeviceInfo:
        sx, sy = self.scale
        return DeviceInfo(
            kind=self.kind,
            spec=f"desktop:{self.display}" if self.display else "desktop",
            screen=self._size,
            details={
                "display": self.display,
                "monitor": self.options.monitor,
                "monitor_rect": [self._monitor[k] for k in ("left", "top", "width", "height")],
                "scale_x": sx,
                "scale_y": sy,
                "image_format": self.options.image_format,
                "typing": self.options.typing,
                "accessibility": self._tree is not None and self._tree.available,
            },
        )

    def close(self) -> None:
        typer = getattr(self, "_typer", None)
        if typer is not None:  # releasing twice is a no-op
            typer.close()
        sct, self._sct = getattr(self, "_sct", None), None
        if sct is not None:
            sct.close()


__all__ = ["DesktopDevice", "DesktopOptions"]
