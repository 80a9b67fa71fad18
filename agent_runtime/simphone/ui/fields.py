"""Where typed text lives, and what a text field asks of the phone.

A :class:`FieldOwner` (a screen or a dialog) holds its fields' text, scroll offsets and focus;
the widgets read and change it while apps build on top of both. It sits below the widgets and
the app base class so that neither has to import the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(eq=False, kw_only=True)
class FieldOwner:
    """Something that holds text fields, scroll offsets and the input focus: a screen or a dialog."""

    fields: dict[str, str] = field(default_factory=dict)
    scroll: dict[str, int] = field(default_factory=dict)
    focus: str | None = None


class FieldHost(Protocol):
    """What widgets ask of the phone: focus a field (opening the keyboard), and go back (an app
    bar's up arrow)."""

    def focus_field(self, owner: FieldOwner, key: str, input_type: str = "text") -> None: ...

    def back(self) -> None: ...
