"""Map the runtime's action schema onto SimPhone's Android primitives.

Mobile actions run (a wheel scroll, vertical or horizontal, becomes a finger swipe);
desktop-only actions (double/triple/right/middle click, mouse move, drag, left_click_drag) fail
with a message that names the mobile alternative, so a Worker sees why and can recover.
"""

from __future__ import annotations

import difflib
from typing import Protocol

from agent_runtime.actions import (
    Action,
    ActionResult,
    Answer,
    Click,
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
from agent_runtime.android_keys import BUTTONS, ENTER, key_for
from agent_runtime.coords import Size
from agent_runtime.simphone.apps.launcher import LAUNCHER_PACKAGE
from agent_runtime.simphone.ui.view import View


class Controls(Protocol):
    """The phone's input primitives, as adb's ``input``/``am`` commands drive them: what an
    action maps onto (the phone calls :func:`execute_action` with itself)."""

    @property
    def screen_size(self) -> Size: ...

    def packages(self) -> dict[str, str]: ...

    def element_at(self, x: float, y: float, attr: str = "clickable") -> View | None: ...

    def tap(self, x: int, y: int) -> None: ...

    def long_press(self, x: int, y: int, duration_ms: int = 800) -> None: ...

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None: ...

    def focused_field(self) -> str | None: ...

    def clear_text(self) -> bool: ...

    def input_text(self, text: str) -> None: ...

    def key(self, code: int) -> None: ...

    def launch(self, package: str) -> bool: ...

    def advance_time(self, seconds: float) -> None: ...


#: Names people and models use for the built-in apps, beyond their labels.
APP_ALIASES = {
    "chrome": "com.android.browser",
    "internet": "com.android.browser",
    "web": "com.android.browser",
    "sms": "com.android.messaging",
    "messaging": "com.android.messaging",
    "text messages": "com.android.messaging",
    "alarm": "com.android.deskclock",
    "alarms": "com.android.deskclock",
    "deskclock": "com.android.deskclock",
    "phone book": "com.android.contacts",
    "people": "com.android.contacts",
    "store": "com.simphone.shop",
    "shopping": "com.simphone.shop",
    "notepad": "com.simphone.notes",
    "expense": "com.simphone.expenses",
    "expense tracker": "com.simphone.expenses",
    "file manager": "com.simphone.files",
    "my files": "com.simphone.files",
    "downloads": "com.simphone.files",
    "photos": "com.simphone.gallery",
    "pictures": "com.simphone.gallery",
    "camera roll": "com.simphone.gallery",
    "music player": "com.simphone.music",
    "songs": "com.simphone.music",
    "voice recorder": "com.simphone.recorder",
    "sound recorder": "com.simphone.recorder",
    "voice memos": "com.simphone.recorder",
    "dialer": "com.android.dialer",
    "phone app": "com.android.dialer",
    "call log": "com.android.dialer",
    "mail": "com.simphone.email",
    "gmail": "com.simphone.email",
    "e-mail": "com.simphone.email",
    "inbox": "com.simphone.email",
    "google maps": "com.simphone.maps",
    "navigation": "com.simphone.maps",
    "forecast": "com.simphone.weather",
    "home": "com.android.launcher3",
    "launcher": "com.android.launcher3",
}

_SCROLL_NOTCH_FRACTION = 0.12  # one wheel notch scrolls ~12% of the screen along its axis


def _describe(v: View | None) -> str:
    if v is None:
        return "nothing"
    label = v.text or v.desc or v.rid or v.cls.rsplit(".", 1)[-1]
    return f"{v.cls.rsplit('.', 1)[-1]} '{label}'"


def resolve_app(phone: Controls, name: str) -> tuple[str | None, list[str]]:
    """(package, close label matches) for an app name: label, alias or package, case-insensitive."""
    wanted = " ".join(name.strip().lower().split())
    labels = {label.lower(): pkg for pkg, label in phone.packages().items()}
    if wanted in labels:
        return labels[wanted], []
    if wanted in phone.packages():
        return wanted, []
    if wanted in APP_ALIASES:
        return APP_ALIASES[wanted], []
    words = wanted.split()
    for label, pkg in labels.items():
        # "calendar app", "the clock", "note" / "setting", "sett…"
        if (
            label in words
            or wanted.rstrip("s") == label.rstrip("s")
            or (len(wanted) >= 4 and label.startswith(wanted))
        ):
            return pkg, []
    close = difflib.get_close_matches(wanted, list(labels), n=3, cutoff=0.75)
    if len(close) == 1:
        return labels[close[0]], []
    display = {label.lower(): label for label in phone.packages().values()}
    apps = [label for label, pkg in labels.items() if pkg != LAUNCHER_PACKAGE]
    suggestions = difflib.get_close_matches(wanted, apps, n=3, cutoff=0.4)
    return None, [display[s] for s in suggestions]


def execute_action(phone: Controls, action: Action) -> ActionResult:
    w, h = phone.screen_size
    match action:
        case Click(coordinate=(x, y)):
            target = phone.element_at(x, y)
            phone.tap(round(x), round(y))
            return ActionResult.success(f"tapped {_describe(target)} at ({round(x)}, {round(y)})")
        case LongPress(coordinate=(x, y), duration_ms=ms):
            target = phone.element_at(x, y, "long_clickable")
            phone.long_press(round(x), round(y), ms)
            return ActionResult.success(f"long-pressed {_describe(target)} at ({round(x)}, {round(y)})")
        case Swipe(coordinate=(x1, y1), coordinate2=(x2, y2), duration_ms=ms):
            phone.swipe(round(x1), round(y1), round(x2), round(y2), ms)
            return ActionResult.success(f"swiped ({round(x1)}, {round(y1)}) → ({round(x2)}, {round(y2)})")
        case Scroll(pixels=0) | HScroll(pixels=0):
            # A zero-length swipe would be a tap on whatever is under the finger.
            return ActionResult.success("scrolled by 0 notches: nothing to do")
        case Scroll(pixels=notches, coordinate=point):
            cx, cy = point if point is not None else (w / 2, h / 2)
            dist = round(notches * h * _SCROLL_NOTCH_FRACTION)
            # Positive = scroll up = reveal earlier content = finger moves down.
            y2 = min(max(cy + dist, 0), h - 1)
            phone.swipe(round(cx), round(cy), round(cx), round(y2), 300)
            return ActionResult.success(f"scrolled {'up' if notches > 0 else 'down'} by {abs(notches)}")
        case HScroll(pixels=notches, coordinate=point):
            cx, cy = point if point is not None else (w / 2, h / 2)
            dist = round(notches * w * _SCROLL_NOTCH_FRACTION)
            # Positive = scroll right = reveal what is to the right = finger moves left.
            x2 = min(max(cx - dist, 0), w - 1)
            phone.swipe(round(cx), round(cy), round(x2), round(cy), 300)
            return ActionResult.success(
                f"scrolled {'right' if notches > 0 else 'left'} by {abs(notches)}: "
                f"swiped ({round(cx)}, {round(cy)}) → ({round(x2)}, {round(cy)})"
            )
        case Type(text=text, clear=clear, enter=enter):
            if phone.focused_field() is None:
                return ActionResult.failure("no text field is focused; tap a text field first, then type")
            if clear:
                phone.clear_text()
            phone.input_text(text)
            if enter:
                phone.key(ENTER)
            return ActionResult.success(f"typed {text!r}" + (" and pressed Enter" if enter else ""))
        case Key(keys=keys):
            if len(keys) != 1:
                return ActionResult.failure(
                    f"key combinations ({'+'.join(keys)}) are not supported on a phone; press one key"
                )
            if len(keys[0]) == 1:  # a character key types that character, in the case written
                phone.input_text(keys[0])
                return ActionResult.success(f"typed {keys[0]!r}")
            code = key_for(keys[0])
            if code is None:
                return ActionResult.failure(
                    f"unknown key {keys[0]!r}; use a key name such as back, home, enter, del, tab or space"
                )
            phone.key(code)
            return ActionResult.success(f"pressed key {keys[0]}")
        case SystemButton(button=button):
            phone.key(BUTTONS[button])
            return ActionResult.success(f"pressed {button}")
        case OpenApp(text=name):
            package, close = resolve_app(phone, name)
            if package is None:
                known = ", ".join(sorted(v for k, v in phone.packages().items() if k != LAUNCHER_PACKAGE))
                hint = f"did you mean {', '.join(close)}? " if close else ""
                return ActionResult.failure(
                    f"no app named {name!r}; {hint}installed apps: {known}", suggestions=close
                )
            phone.launch(package)
            return ActionResult.success(f"opened {phone.packages()[package]}", package=package)
        case Wait(time=seconds):
            phone.advance_time(seconds)
            return ActionResult.success(f"waited {seconds:g} s (virtual time)")
        case Answer() | Interact() | Terminate():
            return ActionResult.recorded(action)
        case _:
            hint = "use swipe" if isinstance(action, Drag | LeftClickDrag) else "use click or long_press"
            return ActionResult.failure(
                f"'{action.action}' is a desktop action and SimPhone is a phone; {hint}"
            )
