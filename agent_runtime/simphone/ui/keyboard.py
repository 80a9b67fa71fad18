"""The soft keyboard shown while a text field has focus.

Each key is a clickable node (package ``com.google.android.inputmethod.latin``) whose
content-desc is what it types or does: ``q`` … ``m``, ``Shift``, ``Delete``, ``Symbols``,
``Letters``, ``Space``, ``Enter``, ``,`` and ``.``. Tapping a key is exactly
``input_text``/``key`` on the phone, so agents that type by tapping keys and agents that use the
type action reach the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_runtime.android_keys import DEL, ENTER
from agent_runtime.simphone.ui.theme import Theme
from agent_runtime.simphone.ui.view import View

IME_PACKAGE = "com.google.android.inputmethod.latin"

_LETTERS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_SYMBOLS = ("1234567890", "@#$%&-+()/", "*\"':;!?")


@dataclass
class KeyboardState:
    """Which layer is up and whether the next letter is upper case."""

    layer: str = "letters"  # letters | symbols
    shift: bool = False


def keyboard_height(theme: Theme) -> int:
    return theme.dp(4 * 52 + 5 * 6 + 8)


def build_keyboard(
    theme: Theme,
    state: KeyboardState,
    *,
    type_text: Callable[[str], None],
    press: Callable[[int], None],
) -> View:
    """The keyboard view; ``type_text`` and ``press`` are the phone's primitives."""
    t = theme
    kb = View(
        cls="android.widget.FrameLayout",
        rid="keyboard_view",
        package=IME_PACKAGE,
        direction="col",
        bg=t.keyboard_bg,
        pad=(t.dp(4), t.dp(6), t.dp(4), t.dp(8)),
        gap=t.dp(6),
        h=keyboard_height(t),
    )
    rows = _SYMBOLS if state.layer == "symbols" else _LETTERS
    upper = state.shift and state.layer == "letters"

    def key(
        label: str,
        desc: str,
        action: Callable[[], None],
        *,
        weight: float = 1.0,
        special: bool = False,
        shape: str = "",
    ) -> View:
        return View(
            kind="icon" if shape else "text",
            cls="android.view.View",
            text="",
            desc=desc,
            shape=shape,
            size=0 if shape else t.sp(20 if len(label) == 1 else 14),
            fg=t.on_bg,
            bg=t.key_special if special else t.key_bg,
            radius=t.dp(6),
            weight=weight,
            pad=(t.dp(3), t.dp(12), t.dp(3), t.dp(12)) if shape else (0, 0, 0, 0),
            align="center",
            clickable=True,
            on_click=action,
            rid="key_pos",
        )

    def char_key(ch: str) -> View:
        shown = ch.upper() if upper else ch
        v = key(shown, shown, lambda: type_text(shown))
        v.text = shown  # drawn label; the XML keeps it too (Gboard exposes key labels)
        return v

    def row(children: list[View], side_pad: int = 0) -> View:
        return View(
            cls="android.widget.LinearLayout",
            direction="row",
            h=t.dp(52),
            gap=t.dp(6),
            pad=(side_pad, 0, side_pad, 0),
            children=children,
        )

    def toggle_shift() -> None:
        state.shift = not state.shift

    def set_layer(layer: str) -> Callable[[], None]:
        def run() -> None:
            state.layer = layer
            state.shift = False

        return run

    kb.add(row([char_key(c) for c in rows[0]]))
    kb.add(row([char_key(c) for c in rows[1]], t.dp(18) if state.layer == "letters" else 0))
    third = [char_key(c) for c in rows[2]]
    if state.layer == "letters":
        shift = key("⇧", "Shift", toggle_shift, weight=1.5, special=not upper, shape="shift")
        shift.selected = upper
        third = [shift, *third]
    third.append(key("⌫", "Delete", lambda: press(DEL), weight=1.5, special=True, shape="backspace"))
    kb.add(row(third))
    layer_key = (
        key("?123", "Symbols", set_layer("symbols"), weight=1.5, special=True)
        if state.layer == "letters"
        else key("ABC", "Letters", set_layer("letters"), weight=1.5, special=True)
    )
    layer_key.text = "?123" if state.layer == "letters" else "ABC"
    comma = char_key(",")
    space = key("", "Space", lambda: type_text(" "), weight=5.0)
    period = char_key(".")
    enter = key("⏎", "Enter", lambda: press(ENTER), weight=1.5, special=True, shape="enter")
    enter.bg = t.primary
    enter.fg = t.on_primary
    kb.add(row([layer_key, comma, space, period, enter]))
    return kb
