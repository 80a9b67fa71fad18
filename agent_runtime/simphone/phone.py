"""SimPhone: an in-process virtual Android phone, deterministic from a seed.

The phone owns the apps, the foreground app, the soft keyboard, a virtual clock and the
renderer. Every observation rebuilds the view tree from app state (cheap), then derives the
screenshot and the uiautomator XML from that one tree, so bounds in the XML are exactly the
drawn widgets and what taps hit. PNG encoding is cached per band (see :mod:`.render`).

Input primitives mirror what adb's ``input``/``am`` commands do; :meth:`SimPhone.execute`
maps the runtime's action schema onto them. Methods are safe to call from several threads:
each public primitive takes :attr:`SimPhone.lock` (an ``RLock``), and callers that need a
sequence to be atomic (the adb endpoint) hold it around the sequence.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from agent_runtime import android_keys
from agent_runtime.actions import Action, ActionResult
from agent_runtime.coords import Size
from agent_runtime.device import AddressBook, Device, DeviceInfo
from agent_runtime.errors import ConfigError, DeviceError
from agent_runtime.observation import Observation, UIElement, parse_ui_xml
from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps import APP_CLASSES, LAUNCHER_PACKAGE
from agent_runtime.simphone.execute import execute_action
from agent_runtime.simphone.state import StateError, restore, snapshot
from agent_runtime.simphone.ui.compose import compose_screen
from agent_runtime.simphone.ui.fields import FieldOwner
from agent_runtime.simphone.ui.keyboard import KeyboardState
from agent_runtime.simphone.ui.paint import Op, paint_tree
from agent_runtime.simphone.ui.render import FrameRenderer
from agent_runtime.simphone.ui.theme import Theme, make_theme
from agent_runtime.simphone.ui.uixml import to_xml
from agent_runtime.simphone.ui.view import View, find, hit, layout

_UNTYPABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
_TOUCH_SLOP_DP = 8
_LONG_PRESS_MS = 500
FONT_SCALES = (0.9, 1.0, 1.1, 1.2)


@dataclass
class Frame:
    """One built screen: the laid-out tree plus lazily derived operations and XML."""

    root: View
    package: str
    ops: list[Op] | None = None
    xml: str | None = None


class SimPhone(Device):
    """A virtual Android phone with the apps of :data:`~agent_runtime.simphone.apps.APP_CLASSES`
    (the package docstring lists them) and a launcher."""

    kind = "simphone"
    platform = "mobile"

    def __init__(
        self,
        seed: int = 0,
        *,
        width: int = 1080,
        height: int = 2400,
        randomize: bool = False,
        serial: str = "emulator-5554",
    ) -> None:
        if not (240 <= width <= 4096 and 320 <= height <= 8192):
            raise ConfigError(
                f"SimPhone screen {width}x{height} is out of range", hint="use e.g. width=1080 height=2400"
            )
        self.seed = seed
        self.serial = serial
        self.randomize = randomize
        self.lock = threading.RLock()
        self._size = Size(width, height)
        rng = random.Random(f"simphone:{seed}")
        start = dt.datetime(2025, 3, 3, 8, 0) + dt.timedelta(
            days=rng.randint(0, 120), minutes=rng.randint(0, 660)
        )
        self._now = start
        self.battery = rng.randint(35, 100)
        self.wallpaper = rng.randrange(4) if randomize else 0
        #: What the Settings app starts with (a randomized phone varies them).
        self.font_scale_default = rng.choice(FONT_SCALES) if randomize else 1.0
        self.dark_default = rng.random() < 0.5 if randomize else False
        self.keyboard = KeyboardState()
        self.foreground = LAUNCHER_PACKAGE
        self._toast: str | None = None
        self._apps: dict[str, App] = {}
        for cls in APP_CLASSES:
            self._apps[cls.package] = cls(self, random.Random(f"simphone:{seed}:{cls.package}"))
        self._renderer = FrameRenderer(width, height)
        self._frame: Frame | None = None
        self._depth = 0

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_spec(cls, arg: str | None, **options: Any) -> SimPhone:
        """``simphone`` → seed 0, ``simphone:7`` → seed 7; options go to the constructor."""
        seed = options.pop("seed", 0)
        if arg:
            try:
                seed = int(arg)
            except ValueError:
                raise ConfigError(
                    f"SimPhone seed must be an integer, got {arg!r}",
                    hint="use simphone:SEED, e.g. simphone:7",
                ) from None
        allowed = {"width", "height", "randomize", "serial"}
        unknown = set(options) - allowed
        if unknown:
            raise ConfigError(
                f"unknown SimPhone option(s): {', '.join(sorted(unknown))}",
                hint=f"allowed: {', '.join(sorted(allowed))}",
            )
        return cls(int(seed), **options)

    # -- state --------------------------------------------------------------------------------

    @property
    def now(self) -> dt.datetime:
        """The virtual clock. It moves only with :meth:`advance_time` (and the wait action)."""
        return self._now

    def advance_time(self, seconds: float) -> None:
        with self.lock:
            self._now += dt.timedelta(seconds=seconds)
            self._invalidate()

    def set_clock(self, when: dt.datetime) -> None:
        """Set the virtual clock (a restored state's time)."""
        with self.lock:
            self._now = when
            self._invalidate()

    def state(self) -> dict[str, Any]:
        """Everything the phone holds as a JSON-safe dict: every app's data, the OS state (clock,
        focus), every app's screens. :meth:`from_state` rebuilds the phone from it; the layout
        is in :mod:`agent_runtime.simphone.state`."""
        return snapshot(self)

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SimPhone:
        """A new phone that has ``state`` (from :meth:`state`): same data, same screen.

        Raises :class:`~agent_runtime.simphone.state.StateError` for a state it cannot rebuild.
        """
        device = state.get("device") if isinstance(state, Mapping) else None
        if not isinstance(device, Mapping):
            raise StateError(
                "a SimPhone state needs its 'device' section", hint="pass what SimPhone.state() returned"
            )
        try:
            phone = cls(
                int(device["seed"]),
                width=int(device["width"]),
                height=int(device["height"]),
                randomize=bool(device["randomize"]),
                serial=str(device["serial"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"a SimPhone state's 'device' section is incomplete: {exc}") from None
        restore(phone, state)
        return phone

    def fork(self) -> SimPhone:
        """An independent copy in the same state (group rollouts: G plays from one start).

        The copy shares nothing with this phone: not its data, screens, lock or adb endpoint.
        """
        return SimPhone.from_state(self.state())

    def app(self, package: str) -> App:
        """The app object (its ``.state`` dataclass is what tasks read and write)."""
        with self.lock:
            try:
                found = self._apps[package]
            except KeyError:
                raise DeviceError(
                    f"SimPhone has no app {package!r}", hint=f"packages: {', '.join(self._apps)}"
                ) from None
            self._invalidate()
            return found

    @property
    def apps(self) -> Mapping[str, App]:
        """Installed apps by package (read-only; apps use it to look at each other)."""
        return MappingProxyType(self._apps)

    def packages(self) -> dict[str, str]:
        return {pkg: a.label for pkg, a in self._apps.items()}

    @property
    def theme(self) -> Theme:
        settings = self._apps.get("com.android.settings")
        dark = bool(getattr(settings.state, "dark_theme", False)) if settings else False
        scale = float(getattr(settings.state, "font_scale", 1.0)) if settings else 1.0
        return make_theme(self._size.width, self._size.height, dark=dark, font_scale=scale)

    def current_focus(self) -> tuple[str, str]:
        with self.lock:
            return self.foreground, self._apps[self.foreground].activity_name()

    def show_toast(self, text: str) -> None:
        """Show a toast until the next input event."""
        self._toast = text

    @property
    def toast_text(self) -> str | None:
        return self._toast

    @property
    def size(self) -> Size:
        return self._size

    def focus_field(self, owner: FieldOwner, key: str, input_type: str = "text") -> None:
        """Give a text field the input focus and open the keyboard on the right layer."""
        owner.focus = key
        self.keyboard.layer = "symbols" if input_type in ("number", "phone") else "letters"
        self.keyboard.shift = False

    def _invalidate(self) -> None:
        self._frame = None

    @contextmanager
    def _session(self) -> Iterator[None]:
        """Hold the lock; the outermost call starts from a freshly built frame.

        Tasks and the adb shell may change app state directly, so a frame is never reused
        across public calls — only within one (observe builds once for PNG and XML).
        """
        with self.lock:
            if self._depth == 0:
                self._frame = None
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1

    def _owner(self) -> FieldOwner:
        return self._apps[self.foreground].screen.owner

    # -- frame --------------------------------------------------------------------------------

    def _current(self) -> Frame:
        if self._frame is None:
            self._frame = self._build()
        return self._frame

    def _build(self) -> Frame:
        root = compose_screen(self)
        layout(root, (0, 0, *self._size))
        return Frame(root=root, package=self.foreground)

    def recents(self) -> None:
        """Overview: SimPhone has no recents screen; like a quick double-tap it goes home."""
        self.home()

    def key_typed(self, text: str) -> None:
        """A soft-keyboard key: type its character and release a one-shot Shift."""
        self.input_text(text)
        self.keyboard.shift = False

    # -- Device API ---------------------------------------------------------------------------

    @property
    def screen_size(self) -> Size:
        return self._size

    def screenshot_png(self) -> bytes:
        with self._session():
            frame = self._current()
            if frame.ops is None:
                frame.ops = paint_tree(frame.root, self.theme.density, self.theme.bg)
            return self._renderer.png(frame.ops)

    def screenshot_image(self) -> Any:
        """The current screen as a PIL image (for previews; ``screenshot_png`` is the fast path)."""
        with self._session():
            frame = self._current()
            ops = frame.ops or paint_tree(frame.root, self.theme.density, self.theme.bg)
            return self._renderer.image(ops)

    def ui_xml(self) -> str:
        with self._session():
            frame = self._current()
            if frame.xml is None:
                frame.xml = to_xml(frame.root, frame.package)
            return frame.xml

    def observe(self) -> Observation:
        with self._session():
            png = self.screenshot_png()
            xml = self.ui_xml()
            package, activity = self.current_focus()
            return Observation(
                screenshot=png,
                size=self._size,
                ui_xml=xml,
                app=package,
                activity=activity,
                extra={"virtual_time": self._now.isoformat(timespec="seconds")},
            )

    def execute(self, action: Action) -> ActionResult:
        with self._session():
            started = time.perf_counter()
            result = execute_action(self, action)
            return result.model_copy(update={"duration_ms": (time.perf_counter() - started) * 1000})

    def info(self) -> DeviceInfo:
        return DeviceInfo(
            kind=self.kind,
            spec=f"simphone:{self.seed}",
            screen=self._size,
            details={
                "serial": self.serial,
                "randomize": self.randomize,
                "model": "SimPhone",
                "android": "14",
            },
        )

    def address_book(self) -> AddressBook:
        """The Contacts app's names, numbers (what :meth:`MessagesApp.send` resolves) and
        emails now, and who the call log, received texts and received mail record."""
        contacts = self.apps.get("com.android.contacts")
        people = contacts.state.contacts if contacts is not None else []
        book = AddressBook.of((c.name, c.phone) for c in people)
        emails: dict[str, tuple[str, ...]] = {}
        for c in people:
            if c.name.strip() and c.email.strip():
                emails[c.name.strip()] = (*emails.get(c.name.strip(), ()), c.email.strip())
        dialer, messages, mail = (
            self.apps.get(p) for p in ("com.android.dialer", "com.android.messaging", "com.simphone.email")
        )
        records = {
            "calls": [c.number for c in dialer.state.calls] if dialer is not None else [],
            "texts": [t.address for t in messages.state.threads if any(not m.outgoing for m in t.messages)]
            if messages is not None
            else [],
            "emails": [
                e.sender_address for e in mail.state.emails if e.folder != "sent" and e.folder != "drafts"
            ]
            if mail is not None
            else [],
        }
        return book.model_copy(
            update={"emails": emails, "records": {k: tuple(dict.fromkeys(v)) for k, v in records.items()}}
        )

    # -- Android primitives -------------------------------------------------------------------

    def element_at(self, x: float, y: float, attr: str = "clickable") -> View | None:
        """The view a tap at (x, y) would hit (``attr``: clickable, long_clickable, scrollable)."""
        with self._session():
            return hit(self._current().root, x, y, attr)

    def find(self, label: str, *, clickable: bool | None = None, cls: str | None = None) -> UIElement | None:
        """The on-screen element labelled ``label``: text first, then content-desc, then resource-id.

        A convenience for task setup, scripts and tests (agents read the XML themselves).
        ``clickable`` filters on the clickable flag, ``cls`` on the class name's last part
        (``"EditText"``).
        """
        elements = [
            e
            for e in parse_ui_xml(self.ui_xml())
            if e.bounds.area > 0
            and (clickable is None or e.has("clickable") == clickable)
            and (cls is None or e.class_name.rsplit(".", 1)[-1] == cls)
        ]
        for matches in (
            lambda e: e.text == label,
            lambda e: e.content_desc == label,
            lambda e: bool(e.resource_id) and e.resource_id.endswith(f"/{label}"),
        ):
            found = next((e for e in elements if matches(e)), None)
            if found is not None:
                return found
        return None

    def tap_on(self, label: str, *, cls: str | None = None) -> UIElement:
        """Tap the centre of :meth:`find`'s element (a tap on a label reaches its clickable row)."""
        with self._session():
            el = self.find(label, cls=cls)
            if el is None:
                labels = sorted({e.label for e in parse_ui_xml(self.ui_xml()) if e.label})
                raise DeviceError(
                    f"nothing labelled {label!r} on screen", hint=f"on screen: {'; '.join(labels)[:600]}"
                )
            self.tap(*el.bounds.center)
            return el

    @contextmanager
    def _input(self, event: str, target: View) -> Iterator[None]:
        """Run one input's handler; a dialog it opens records the input in ``Dialog.opener``.

        A restored state reopens a dialog by replaying that input (:meth:`replay_input`): its
        buttons are closures over the app, which no snapshot can carry.
        """
        app = self._apps[self.foreground]
        before = app.screen.dialog
        root = self._current().root
        yield
        after = app.screen.dialog
        if after is None or after is before or after.opener is not None:
            return
        chain = () if before is None else before.opener
        path = _path_to(root, target)
        after.opener = None if chain is None or path is None else (*chain, (event, path))

    def replay_input(self, event: str, path: tuple[int, ...]) -> None:
        """Fire the ``event`` handler (click, long_click, submit) of the view at ``path``."""
        with self._session():
            view = self._current().root
            try:
                for index in path:
                    view = view.children[index]
            except IndexError:
                raise StateError(f"no view at {list(path)} on {self.foreground}'s screen") from None
            handler = {
                "click": view.on_click,
                "long_click": view.on_long_click,
                "submit": view.on_submit,
            }.get(event)
            if handler is None:
                raise StateError(f"the view at {list(path)} on {self.foreground}'s screen has no {event}")
            self._toast = None
            if event == "submit":
                self._owner().focus = None  # as Enter does before it submits
            with self._input(event, view):
                handler()
            self._invalidate()

    def tap(self, x: int, y: int) -> None:
        with self._session():
            target = hit(self._current().root, x, y)
            self._toast = None
            if target is not None:
                if target.on_seek is not None:
                    x1, _, x2, _ = target.rect
                    left, _, right, _ = target.pad
                    span = max(1, (x2 - right) - (x1 + left))
                    target.on_seek(min(1.0, max(0.0, (x - x1 - left) / span)))
                elif target.on_click is not None:
                    with self._input("click", target):
                        target.on_click()
            self._invalidate()

    def long_press(self, x: int, y: int, duration_ms: int = 800) -> None:
        with self._session():
            target = hit(self._current().root, x, y, "long_clickable")
            self._toast = None
            if target is not None and target.on_long_click is not None:
                with self._input("long_click", target):
                    target.on_long_click()
            elif target is not None and target.kind == "edit" and target.on_click is not None:
                target.on_click()  # long-pressing a field focuses it (and would select text)
            self._invalidate()

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        with self._session():
            slop = self.theme.dp(_TOUCH_SLOP_DP)
            if abs(x2 - x1) <= slop and abs(y2 - y1) <= slop:
                if duration_ms >= _LONG_PRESS_MS:
                    self.long_press(x1, y1, duration_ms)
                else:
                    self.tap(x1, y1)
                return
            self._toast = None
            frame = self._current()
            target = hit(frame.root, x1, y1, "scrollable")
            if target is not None and abs(y2 - y1) >= abs(x2 - x1):
                owner = target.owner if isinstance(target.owner, FieldOwner) else self._owner()
                new = min(max(target.scroll_y + (y1 - y2), 0), target.max_scroll)
                owner.scroll[target.scroll_key] = new
            else:
                self._apps[self.foreground].on_swipe(x1, y1, x2, y2)
            self._invalidate()

    def key(self, code: int) -> None:
        with self._session():
            self._toast = None
            if code == android_keys.HOME:
                self.home()
            elif code == android_keys.BACK:
                self.back()
            elif code == android_keys.ENTER:
                self._enter()
            elif code == android_keys.DEL:
                owner = self._owner()
                if owner.focus is not None:
                    owner.fields[owner.focus] = owner.fields.get(owner.focus, "")[:-1]
            elif code in android_keys.CHARACTERS:
                self.input_text(android_keys.CHARACTERS[code])
            self._invalidate()

    def _enter(self) -> None:
        owner = self._owner()
        if owner.focus is None:
            return
        field = find(self._current().root, lambda v: v.kind == "edit" and v.focused)
        if field is not None and field.on_submit is not None:
            owner.focus = None
            with self._input("submit", field):
                self._invalidate()
                field.on_submit()
        elif field is not None and field.multiline:
            owner.fields[owner.focus] = owner.fields.get(owner.focus, "") + "\n"
        else:
            owner.focus = None  # IME "done": hide the keyboard

    def input_text(self, text: str) -> None:
        """Type into the focused field (dropped when none has focus), like ``adb shell input text``.

        Control characters other than newline/tab and lone surrogates are removed: a keyboard
        cannot type them and XML cannot carry them.
        """
        with self._session():
            owner = self._owner()
            if owner.focus is None:
                return
            text = _UNTYPABLE.sub("", text)
            field = find(self._current().root, lambda v: v.kind == "edit" and v.focused)
            if field is not None and not field.multiline:
                text = text.replace("\r", "").replace("\n", " ")
            owner.fields[owner.focus] = owner.fields.get(owner.focus, "") + text
            self._invalidate()

    def clear_text(self) -> bool:
        """Empty the focused field (what ``type`` with ``clear`` does); False if none is focused."""
        with self._session():
            owner = self._owner()
            if owner.focus is None:
                return False
            owner.fields[owner.focus] = ""
            self._invalidate()
            return True

    def focused_field(self) -> str | None:
        """Key of the focused text field, or None when the keyboard is hidden."""
        with self.lock:
            return self._owner().focus

    def launch(self, package: str) -> bool:
        with self.lock:
            if package not in self._apps:
                return False
            self._leave_foreground()
            if package == LAUNCHER_PACKAGE:
                self._apps[package].reset_ui()
            self.foreground = package
            self._invalidate()
            return True

    def force_stop(self, package: str) -> bool:
        """``am force-stop``: reset the app's screens (not its stored state); home if it was in front."""
        with self.lock:
            if package not in self._apps:
                return False
            self._apps[package].reset_ui()
            if self.foreground == package:
                self.foreground = LAUNCHER_PACKAGE
            self._invalidate()
            return True

    def _leave_foreground(self) -> None:
        current = self._apps[self.foreground]
        current.screen.owner.focus = None
        current.screen.focus = None
        self._toast = None

    def home(self) -> None:
        with self.lock:
            self._leave_foreground()
            self.foreground = LAUNCHER_PACKAGE
            self._apps[LAUNCHER_PACKAGE].reset_ui()
            self._invalidate()

    def back(self) -> None:
        with self.lock:
            app = self._apps[self.foreground]
            screen = app.screen
            owner = screen.owner
            self._toast = None
            if owner.focus is not None:
                owner.focus = None  # Back first hides the keyboard
            elif screen.dialog is not None:
                if screen.dialog.on_cancel is not None:
                    screen.dialog.on_cancel()
                screen.dialog = None
            elif app.handle_back():
                pass
            elif not app.pop() and self.foreground != LAUNCHER_PACKAGE:
                self.foreground = LAUNCHER_PACKAGE
                self._apps[LAUNCHER_PACKAGE].reset_ui()
            self._invalidate()


def _path_to(root: View, target: View) -> tuple[int, ...] | None:
    """The child indices from ``root`` down to ``target`` (None when it is not in the tree)."""
    pending: list[tuple[View, tuple[int, ...]]] = [(root, ())]
    while pending:
        node, path = pending.pop()
        if node is target:
            return path
        pending.extend((child, (*path, i)) for i, child in enumerate(node.children))
    return None
