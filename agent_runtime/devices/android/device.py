"""An Android phone over adb (real phones, emulators, and SimPhone's adb endpoint).

Spec: ``adb`` (the only/first device) or ``adb:SERIAL``. The adb server comes from the options
``adb_host``/``adb_port``, else ``ANDROID_ADB_SERVER_HOST``/``ANDROID_ADB_SERVER_PORT``, else
127.0.0.1:5037. Options (config ``[device] options``) are :class:`AndroidOptions`.

An observation is three adb calls run in parallel (each is its own TCP connection): the
screenshot (``exec:screencap -p``, raw bytes), the UI tree (``uiautomator dump`` + ``cat``, retried —
it fails during animations) and the foreground window (``dumpsys window``). After an action the
driver waits for the screen to stop changing (see :mod:`agent_runtime.devices.settle`) instead of sleeping.
Typing: see :mod:`.text_entry`; app names: see :mod:`.apps`.
"""

from __future__ import annotations

import hashlib
import re
import struct
import time
from concurrent.futures import ThreadPoolExecutor
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
    OpenApp,
    Scroll,
    Swipe,
    SystemButton,
    Terminate,
    Type,
    Wait,
)
from agent_runtime.android_keys import BUTTONS, key_for
from agent_runtime.coords import Size
from agent_runtime.device import AddressBook, Device, DeviceInfo
from agent_runtime.devices.android.adb import AdbLink
from agent_runtime.devices.android.apps import resolve_app
from agent_runtime.devices.android.contacts import QUERY as CONTACTS_QUERY
from agent_runtime.devices.android.contacts import parse_phones
from agent_runtime.devices.android.text_entry import AndroidTyper, run_input
from agent_runtime.devices.settle import SettleOptions, nearly_same, thumbnail, wait_until_stable
from agent_runtime.errors import ConfigError, DeviceError
from agent_runtime.observation import Observation

_KEYCODE_NAME = re.compile(r"^KEYCODE_[A-Z0-9_]+$")
_FOCUS = re.compile(r"mCurrentFocus=Window\{[^}]*?\s(?P<pkg>[\w.]+)/(?P<act>[\w.$]+)\}")
_FOCUSED_APP = re.compile(r"mFocusedApp=.*?ActivityRecord\{[^}]*?\s(?P<pkg>[\w.]+)/(?P<act>[\w.$]+)[\s}]")
_ROTATION = re.compile(r'<hierarchy[^>]*\brotation="(\d)"')
_ORIENTATION = re.compile(r"(?:mCurrentOrientation|orientation)=(\d)")
_WM_SIZE = re.compile(r"(Override|Physical) size: (\d+)x(\d+)")
_PNG = b"\x89PNG\r\n\x1a\n"


class AndroidOptions(BaseModel):
    """Backend options for ``adb`` devices."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    adb_host: str | None = Field(
        None, description="adb server host (default: ANDROID_ADB_SERVER_HOST or 127.0.0.1)"
    )
    adb_port: int | None = Field(None, ge=1, le=65535, description="adb server port (default: env or 5037)")
    start_server: bool = Field(True, description="start a local adb server on first connect if none runs")
    command_timeout_s: float = Field(30.0, gt=0, le=600, description="limit for one adb command")
    reconnect_attempts: int = Field(5, ge=0, le=20, description="reconnect tries when the connection drops")
    reconnect_backoff_s: float = Field(
        0.2, gt=0, le=10, description="first reconnect pause (doubles, max 5 s)"
    )
    ui_dump: bool = Field(True, description="add the uiautomator tree to observations")
    ui_dump_retries: int = Field(2, ge=0, le=10, description="retries when uiautomator dump fails")
    ui_dump_path: str = Field("/data/local/tmp/agent_runtime_uidump.xml", pattern=r"^/[\w./-]+$")
    settle_timeout_s: float = Field(3.0, ge=0, le=60, description="max wait for the screen to stop changing")
    settle_poll_s: float = Field(0.2, gt=0, le=5, description="pause between two stability probes")
    settle_min_delay_s: float = Field(0.1, ge=0, le=5, description="pause before the first probe")
    settle_probe: Literal["screenshot", "ui"] = Field("screenshot", description="what must stop changing")
    ime_switch_timeout_s: float = Field(
        3.0, gt=0, le=30, description="wait for ADB Keyboard to become active"
    )


def png_size(data: bytes) -> Size:
    """Width and height from a PNG header (no decoding)."""
    if not data.startswith(_PNG) or len(data) < 24:
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return Size(width, height)


def parse_focus(text: str) -> tuple[str | None, str | None]:
    """``(package, activity)`` from ``dumpsys window`` output, or ``(None, None)``."""
    m = _FOCUS.search(text) or _FOCUSED_APP.search(text)
    if not m:
        return None, None
    pkg, act = m["pkg"], m["act"]
    return pkg, (pkg + act if act.startswith(".") else act)


def keyevent_arg(name: str) -> int | str | None:
    """What ``input keyevent`` gets for a key name: its code, a literal ``KEYCODE_*`` name outside
    the shared table (the phone knows more keys than we do), or None for no key at all — nothing
    else ever reaches the shell.

    >>> keyevent_arg("Back"), keyevent_arg("KEYCODE_MEDIA_RECORD"), keyevent_arg("rm -rf /")
    (4, 'KEYCODE_MEDIA_RECORD', None)
    """
    code = key_for(name)
    literal = name.strip().upper()
    return literal if code is None and _KEYCODE_NAME.match(literal) else code


class AndroidDevice(Device):
    """A phone behind an adb server. Not thread-safe (see :class:`~agent_runtime.device.Device`)."""

    kind = "adb"
    platform = "mobile"

    def __init__(self, serial: str | None = None, options: AndroidOptions | None = None) -> None:
        self.options = opts = options or AndroidOptions()
        self.link = AdbLink(
            serial,
            host=opts.adb_host,
            port=opts.adb_port,
            start_server=opts.start_server,
            timeout_s=opts.command_timeout_s,
            reconnect_attempts=opts.reconnect_attempts,
            reconnect_backoff_s=opts.reconnect_backoff_s,
        )
        self.serial = self.link.serial
        self._pool: ThreadPoolExecutor | None = None
        self._settle = SettleOptions(
            timeout_s=opts.settle_timeout_s, poll_s=opts.settle_poll_s, min_delay_s=opts.settle_min_delay_s
        )
        self._packages: set[str] = set()
        self._typer = AndroidTyper(
            self.link, ui_dump=self.ui_dump, ime_switch_timeout_s=opts.ime_switch_timeout_s
        )
        self._size, self._rotation = self._query_screen()

    @classmethod
    def from_spec(cls, arg: str | None, **options: Any) -> AndroidDevice:
        try:
            opts = AndroidOptions(**options)
        except ValidationError as exc:
            raise ConfigError(f"bad adb device options: {exc.errors()[0]['msg']}", hint=str(exc)) from None
        return cls(arg, opts)

    # -- looking ---------------------------------------------------------------------------

    def _query_screen(self) -> tuple[Size, int]:
        out = self.link.shell("wm size; dumpsys display | grep -E 'mCurrentOrientation|orientation='")
        sizes = {kind: Size(int(w), int(h)) for kind, w, h in _WM_SIZE.findall(out)}
        size = sizes.get("Override") or sizes.get("Physical")
        if size is None:
            raise DeviceError(f"cannot read the screen size of {self.serial}: {out.strip()[:200]!r}")
        m = _ORIENTATION.search(out)
        rotation = int(m[1]) if m else 0
        return (Size(size.height, size.width) if rotation % 2 else size), rotation

    @property
    def screen_size(self) -> Size:
        return self._size

    def screenshot(self) -> bytes:
        """PNG bytes of the screen; updates :attr:`screen_size` (rotation changes it)."""
        data = self.link.exec_out("screencap -p")
        try:
            self._size = png_size(data)
        except ValueError:
            head = data[:120].decode("utf-8", "replace").strip()
            raise DeviceError(
                f"screencap on {self.serial} returned no PNG: {head!r}",
                hint="unlock the screen; some apps block screenshots (FLAG_SECURE)",
            ) from None
        return data

    def ui_dump(self) -> tuple[str | None, str | None]:
        """``(xml, None)`` or ``(None, why)`` after ``ui_dump_retries`` retries."""
        path = self.options.ui_dump_path
        command = f"rm -f {path}; uiautomator dump {path} 2>&1 && cat {path}"
        reason = "uiautomator dump failed"
        for attempt in range(self.options.ui_dump_retries + 1):
            if attempt:
                time.sleep(0.2 * attempt)
            out = self.link.shell(command)
            start = out.find("<?xml")
            if start < 0:
                start = out.find("<hierarchy")
            if start >= 0 and out.rstrip().endswith("</hierarchy>"):
                return out[start:].rstrip(), None
            reason = out.strip().splitlines()[0][:200] if out.strip() else "uiautomator dump printed nothing"
        return None, f"uiautomator dump failed after {self.options.ui_dump_retries + 1} tries: {reason}"

    def foreground(self) -> tuple[str | None, str | None]:
        """The focused ``(package, activity)``."""
        return parse_focus(self.link.shell("dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'"))

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix=f"adb-{self.serial}")
        return self._pool

    def observe(self) -> Observation:
        pool = self._executor()
        ts = time.time()
        shot = pool.submit(self.screenshot)
        tree = pool.submit(self.ui_dump) if self.options.ui_dump else None
        focus = pool.submit(self.foreground)
        image = shot.result()
        xml, error = tree.result() if tree else (None, "UI dump disabled (ui_dump = false)")
        package, activity = focus.result()
        rotation = self._rotation
        if xml and (m := _ROTATION.search(xml[:300])):
            rotation = self._rotation = int(m[1])
        return Observation(
            screenshot=image,
            size=self._size,
            ui_xml=xml,
            ui_error=error,
            app=package,
            activity=activity,
            timestamp=ts,
            extra={"serial": self.serial, "rotation": rotation, "reconnects": self.link.reconnects},
        )

    def _probe(self) -> Any:
        if self.options.settle_probe == "ui":
            xml, error = self.ui_dump()
            return hashlib.sha1((xml or error or "").encode("utf-8")).hexdigest()
        return thumbnail(self.screenshot())

    def _same(self, a: Any, b: Any) -> bool:
        return a == b if self.options.settle_probe == "ui" else nearly_same(a, b)

    # -- acting ----------------------------------------------------------------------------

    def _xy(self, point: tuple[float, float] | None) -> tuple[int, int]:
        if point is None:
            # the graph maps element-index actions to screen pixels before a device sees them
            raise DeviceError(
                "an element-index action reached the device unresolved",
                hint="map it to screen pixels first: agent_runtime.alignment.screen_actions",
            )
        x = min(max(round(point[0]), 0), self._size.width - 1)
        y = min(max(round(point[1]), 0), self._size.height - 1)
        return x, y

    def _act(self, command: str) -> str:
        """Run a command that changes the device (never re-sent after it may have arrived)."""
        return self.link.shell(command, idempotent=False)

    def execute(self, action: Action) -> ActionResult:
        start = time.perf_counter()
        result, settle = self._dispatch(action)
        data = dict(result.data)
        if settle and result.ok:
            data["settle"] = wait_until_stable(self._probe, self._settle, same=self._same).model_dump()
        return result.model_copy(update={"duration_ms": (time.perf_counter() - start) * 1000, "data": data})

    def _dispatch(self, action: Action) -> tuple[ActionResult, bool]:
        match action:
            case Click(coordinate=p):
                x, y = self._xy(p)
                return self._input(f"input tap {x} {y}"), True
            case DoubleClick(coordinate=p):
                x, y = self._xy(p)
                return self._input(f"input tap {x} {y} && input tap {x} {y}"), True
            case LongPress(coordinate=p, duration_ms=ms):
                x, y = self._xy(p)
                return self._input(f"input swipe {x} {y} {x} {y} {ms}"), True
            case Swipe(coordinate=p1, coordinate2=p2, duration_ms=ms):
                (x1, y1), (x2, y2) = self._xy(p1), self._xy(p2)
                return self._input(f"input swipe {x1} {y1} {x2} {y2} {ms}"), True
            case Drag(coordinate=p1, coordinate2=p2):
                (x1, y1), (x2, y2) = self._xy(p1), self._xy(p2)
                return self._input(f"input swipe {x1} {y1} {x2} {y2} 1000"), True
            case Scroll(pixels=notches, coordinate=p):
                return self._scroll(notches, p), notches != 0
            case HScroll(pixels=notches, coordinate=p):
                return self._scroll(notches, p, horizontal=True), notches != 0
            case SystemButton(button=button):
                return self._input(f"input keyevent {BUTTONS[button]}"), True
            case Key(keys=keys):
                codes = [keyevent_arg(k) for k in keys]
                bad = [k for k, c in zip(keys, codes, strict=True) if c is None]
                if bad:
                    return ActionResult.failure(f"unknown Android key(s): {', '.join(map(repr, bad))}"), False
                return self._input("input keyevent " + " ".join(str(c) for c in codes)), True
            case OpenApp(text=name):
                return self._open_app(name)
            case Type(text=text, clear=clear, enter=enter):
                return self._typer.type(text, clear=clear, enter=enter), True
            case Wait(time=seconds):
                time.sleep(seconds)
                return ActionResult.success(f"waited {seconds:g} s"), False
            case Answer() | Interact() | Terminate():
                return ActionResult.recorded(action), False
            case LeftClickDrag():
                return ActionResult.failure(
                    "'left_click_drag' drags from the mouse pointer, which a phone does not have; "
                    "use swipe from [x, y] to [x2, y2]"
                ), False
            case _:
                return ActionResult.failure(
                    f"action {action.action!r} is a desktop action, not available on a phone; "
                    "use click or long_press"
                ), False

    def _input(self, command: str) -> ActionResult:
        return run_input(self.link, command)

    def _scroll(
        self, notches: int, point: tuple[float, float] | None, *, horizontal: bool = False
    ) -> ActionResult:
        """A wheel scroll as a finger swipe: positive = up (or right) = the finger moves down (or
        left). Zero notches do nothing: a swipe of no length would be a tap."""
        if notches == 0:
            return ActionResult.success("scrolled by 0 notches: nothing to do")
        w, h = self._size
        x, y = self._xy(point) if point is not None else (w // 2, h // 2)
        if horizontal:
            dx = max(-(w // 2), min(w // 2, round(notches * w / 10)))
            x2 = min(max(x - dx, 0), w - 1)
            return self._input(f"input swipe {x} {y} {x2} {y} 300")
        dy = max(-(h // 2), min(h // 2, round(notches * h / 10)))
        y2 = min(max(y + dy, 0), h - 1)
        return self._input(f"input swipe {x} {y} {x} {y2} 300")

    # -- apps ------------------------------------------------------------------------------

    def packages(self, *, refresh: bool = False) -> set[str]:
        """Installed packages (``pm list packages``), cached."""
        if refresh or not self._packages:
            out = self.link.shell("pm list packages")
            self._packages = set(re.findall(r"^package:(\S+)\s*$", out, re.M))
        return self._packages

    def _open_app(self, name: str) -> tuple[ActionResult, bool]:
        found = resolve_app(name, self.packages())
        if found.package is None:
            found = resolve_app(name, self.packages(refresh=True))
        if found.package is None:
            near = f"; close matches: {', '.join(found.suggestions)}" if found.suggestions else ""
            return ActionResult.failure(
                f"no installed app matches {name!r}{near}", suggestions=list(found.suggestions)
            ), False
        out = self._act(f"monkey -p {found.package} -c android.intent.category.LAUNCHER 1")
        if "No activities found" in out or "aborted" in out or "Error" in out:
            return ActionResult.failure(
                f"{found.package} has no launcher activity: {out.strip()[-200:]}"
            ), False
        return ActionResult.success(
            f"opened {found.package}", package=found.package, resolved_by=found.how
        ), True

    def address_book(self) -> AddressBook | None:
        """The contacts provider's numbers (one ``content query``); None when it cannot be read."""
        return parse_phones(self.link.shell(CONTACTS_QUERY))

    # -- bookkeeping -----------------------------------------------------------------------

    def info(self) -> DeviceInfo:
        return DeviceInfo(
            kind=self.kind,
            spec=f"adb:{self.serial}",
            screen=self._size,
            details={
                "serial": self.serial,
                "adb_server": f"{self.link.host}:{self.link.port}",
                "rotation": self._rotation,
                "reconnects": self.link.reconnects,
            },
        )

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


__all__ = ["AndroidDevice", "AndroidOptions", "parse_focus", "png_size"]
