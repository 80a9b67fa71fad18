"""``input``: taps, swipes, key events and typed text, mapped onto the SimPhone primitives.

``input text`` behaves like Android's: only its first argument is typed, ``%s`` becomes a space,
and any character outside the virtual keyboard's charmap (everything but printable ASCII, tab and
newline) makes the whole command fail with the ``NullPointerException`` Android prints — nothing is
typed. Clients type other text through ADB Keyboard (see :mod:`.ime`).
"""

from __future__ import annotations

import time

from agent_runtime.android_keys import ENTER, keycode
from agent_runtime.simphone.adb.context import CommandFn, Context
from agent_runtime.simphone.adb.numbers import COORD_LIMIT, JAVA_INT_MAX, BadNumber, number

SOURCES = frozenset(
    (
        "dpad",
        "gamepad",
        "joystick",
        "keyboard",
        "mouse",
        "rotaryencoder",
        "stylus",
        "touchnavigation",
        "touchpad",
        "touchscreen",
        "trackball",
    )
)
USAGE = """Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]

The commands and default sources are:
      text <string> (Default: keyboard)
      keyevent [--longpress|--duration <duration to hold key down in ms>] [--doubletap]
              <key code number or name> ... (Default: keyboard)
      tap <x> <y> (Default: touchscreen)
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      press (Default: trackball)
      roll <dx> <dy> (Default: trackball)
      motionevent <DOWN|UP|MOVE|CANCEL> <x> <y> (Default: touchscreen)"""

#: Movement below this many pixels between DOWN and UP counts as a tap, as Android's touch slop.
TOUCH_SLOP = 24
#: A gesture's duration really passes, up to this many seconds (the rest is skipped).
MAX_GESTURE_S = 10.0


class _JavaError(Exception):
    def __init__(self, exc_class: str, message: str) -> None:
        super().__init__(message)
        self.exc_class = exc_class


def _numbers(args: list[str], command: str, required: int, optional: int = 0) -> list[float]:
    """Coordinates (``Float.parseFloat``; SimPhone also refuses NaN, infinities and absurd sizes)."""
    if len(args) < required:
        raise _JavaError("java.lang.IllegalArgumentException", f'Argument expected after "{command}"')
    out = []
    for text in args[: required + optional]:
        try:
            out.append(number(text, lo=-COORD_LIMIT, hi=COORD_LIMIT, what="coordinate"))
        except BadNumber:
            raise _JavaError("java.lang.NumberFormatException", f'For input string: "{text}"') from None
    return out


def _duration_ms(text: str) -> int:
    """A duration in ms, within a Java int (Android's ``Integer.parseInt``; a fraction is rounded)."""
    try:
        return round(number(text, lo=-(2**31), hi=JAVA_INT_MAX, what="duration"))
    except BadNumber:
        raise _JavaError("java.lang.NumberFormatException", f'For input string: "{text}"') from None


def _hold(duration_ms: int) -> None:
    """Let a gesture's duration pass (bounded), without holding the phone lock."""
    if duration_ms > 0:
        time.sleep(min(duration_ms / 1000, MAX_GESTURE_S))


def decode_text(text: str) -> str:
    """Android's ``sendText`` escape: ``%s`` is a space (``%%s`` is ``%`` + space); nothing else changes."""
    out: list[str] = []
    escape = False
    for char in text:
        if escape:
            escape = False
            if char == "s":
                out[-1] = " "
                continue
        out.append(char)
        if char == "%":
            escape = True
    return "".join(out)


def typeable(char: str) -> bool:
    """In the virtual keyboard's charmap: printable ASCII, tab and newline."""
    return " " <= char <= "~" or char in "\t\n"


def _text(ctx: Context, args: list[str]) -> None:
    if not args:
        raise _JavaError("java.lang.IllegalArgumentException", 'Argument expected after "text"')
    text = decode_text(args[0])
    if not all(typeable(c) for c in text):
        raise _JavaError("java.lang.NullPointerException", "Attempt to get length of null array")
    phone = ctx.device.phone
    for i, part in enumerate(text.split("\n")):
        if i:
            phone.key(ENTER)
        if part:
            phone.input_text(part.replace("\t", ""))


def _keyevent(ctx: Context, args: list[str]) -> None:
    codes = []
    rest = list(args)
    hold_ms = 0
    while rest and rest[0].startswith("--"):
        flag = rest.pop(0)
        if flag == "--duration":
            if not rest:
                raise _JavaError("java.lang.IllegalArgumentException", 'Argument expected after "--duration"')
            hold_ms = max(0, _duration_ms(rest.pop(0)))
        elif flag == "--longpress":
            hold_ms = 500
    if not rest:
        raise _JavaError("java.lang.IllegalArgumentException", 'Argument expected after "keyevent"')
    for name in rest:
        code = keycode(name)
        if code is None:
            raise _JavaError("java.lang.IllegalArgumentException", f"Unknown keycode: {name}")
        codes.append(code)
    for code in codes:
        _hold(hold_ms)
        ctx.device.phone.key(code)


def _motion(ctx: Context, args: list[str]) -> None:
    """``motionevent DOWN x y`` … ``UP x y``: a tap, a long press (held ≥ 500 ms) or a swipe."""
    if not args:
        raise _JavaError("java.lang.IllegalArgumentException", 'Argument expected after "motionevent"')
    action = args[0].upper()
    shell = ctx.device
    if action == "CANCEL":
        shell.touch_down = None
        return
    x, y = (int(v) for v in _numbers(args[1:], "motionevent", 2))
    if action == "DOWN":
        shell.touch_down = (x, y, time.monotonic())
    elif action == "UP" and shell.touch_down is not None:
        x0, y0, t0 = shell.touch_down
        shell.touch_down = None
        held_ms = int((time.monotonic() - t0) * 1000)
        if abs(x - x0) < TOUCH_SLOP and abs(y - y0) < TOUCH_SLOP:
            if held_ms >= 500:
                shell.phone.long_press(x0, y0, held_ms)
            else:
                shell.phone.tap(x0, y0)
        else:
            shell.phone.swipe(x0, y0, x, y, max(held_ms, 1))
    elif action not in ("MOVE", "UP"):
        raise _JavaError("java.lang.IllegalArgumentException", f"Unknown motionevent action: {args[0]}")


def _swipe(ctx: Context, command: str, params: list[str]) -> None:
    """``swipe X1 Y1 X2 Y2 [ms]``: the gesture lasts ``ms`` (a long press where start == end)."""
    x1, y1, x2, y2 = (int(v) for v in _numbers(params, command, 4))
    duration = _duration_ms(params[4]) if len(params) > 4 else -1
    if duration < 0:
        duration = 300 if command == "swipe" else 1000
    _hold(duration)
    ctx.device.phone.swipe(x1, y1, x2, y2, duration)


def input_cmd(ctx: Context, args: list[str]) -> int:
    """Runs without the shell's lock (gestures take their time); each phone call takes it itself."""
    rest = list(args)
    if rest and rest[0] in SOURCES:
        rest.pop(0)
    if len(rest) >= 2 and rest[0] == "-d":
        rest = rest[2:]
    if not rest:
        ctx.print(USAGE)
        return 1
    command, params = rest[0], rest[1:]
    phone = ctx.device.phone
    try:
        if command == "text":
            with phone.lock:
                _text(ctx, params)
        elif command == "keyevent":
            _keyevent(ctx, params)
        elif command == "tap":
            x, y = _numbers(params, command, 2)
            phone.tap(int(x), int(y))
        elif command in ("swipe", "draganddrop"):
            _swipe(ctx, command, params)
        elif command == "motionevent":
            with phone.lock:
                _motion(ctx, params)
        elif command == "roll":
            _numbers(params, command, 2)
            return 0  # trackball events: SimPhone has no trackball focus to move.
        elif command == "press":
            return 0
        else:
            ctx.error(f"Error: Unknown command: {command}")
            ctx.print(USAGE)
            return 1
    except _JavaError as exc:
        return ctx.java_exception(command, exc.exc_class, str(exc))
    return 0


COMMANDS: dict[str, CommandFn] = {"input": input_cmd}
