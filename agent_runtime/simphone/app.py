"""The base of every SimPhone app: persistent state plus a back stack of screens.

An app keeps two kinds of state apart:

* ``app.state`` — a plain dataclass of what the app *stores* (alarms, contacts, notes…). Tasks
  set it up and check it; each app module documents its fields at the top.
* ``app.stack`` — :class:`Screen` objects: which page is open, what is typed into its fields,
  how far its lists are scrolled, which dialog is up. This is what Back pops and what
  ``force_stop`` resets.

Apps build their UI from both on every frame (``build``); they never draw or hold views.

An app reaches its phone through :class:`AppHost`, the part of
:class:`~agent_runtime.simphone.phone.SimPhone` apps use: the phone installs every app, so the
apps depend on that surface rather than on the phone's module.
"""

from __future__ import annotations

import datetime as dt
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from agent_runtime.simphone.ui.fields import FieldHost, FieldOwner

if TYPE_CHECKING:
    from agent_runtime.simphone.ui.theme import Theme
    from agent_runtime.simphone.ui.view import View
    from agent_runtime.simphone.ui.widgets import UI


@dataclass(eq=False, kw_only=True)
class Dialog(FieldOwner):
    """A modal dialog on top of a screen. ``body`` builds its content; buttons close it."""

    title: str = ""
    body: Callable[[UI], list[View]] | None = None
    buttons: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    on_cancel: Callable[[], None] | None = None
    data: dict[str, Any] = field(default_factory=dict)
    #: The inputs that opened it, as ``(event, view path)`` from the screen below (the phone
    #: records them): how a restored state reopens it, since its closures cannot be saved.
    #: None when it was opened directly (by a task or a shell command).
    opener: tuple[tuple[str, tuple[int, ...]], ...] | None = None


@dataclass(eq=False, kw_only=True)
class Screen(FieldOwner):
    """One page of an app's back stack."""

    name: str = "main"
    params: dict[str, Any] = field(default_factory=dict)
    dialog: Dialog | None = None

    @property
    def owner(self) -> FieldOwner:
        """Where typing and focus go: the dialog when one is open, else the screen."""
        return self.dialog if self.dialog is not None else self


class AppHost(FieldHost, Protocol):
    """What an app may ask of the phone it is installed on."""

    seed: int
    randomize: bool
    battery: int
    wallpaper: int
    #: What a fresh phone's Settings start with (randomized phones vary them).
    dark_default: bool
    font_scale_default: float

    @property
    def now(self) -> dt.datetime: ...

    @property
    def theme(self) -> Theme: ...

    @property
    def apps(self) -> Mapping[str, App]: ...

    def app(self, package: str) -> App: ...

    def packages(self) -> dict[str, str]: ...

    def launch(self, package: str) -> bool: ...

    def force_stop(self, package: str) -> bool: ...

    def show_toast(self, text: str) -> None: ...


class App(ABC):
    """Base class. Subclasses set the class variables and implement ``initial_state`` and ``build``."""

    package: ClassVar[str]
    label: ClassVar[str]
    activity: ClassVar[str]
    #: Paths into ``state`` that merely looking changes (a thread's read mark, browser history),
    #: as footprint globs (``threads[*].unread``): never judged a task's side effect.
    viewing_changes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, phone: AppHost, rng: random.Random) -> None:
        self.phone = phone
        self.state: Any = self.initial_state(rng)
        self.stack: list[Screen] = [Screen(name="main")]

    @abstractmethod
    def initial_state(self, rng: random.Random) -> Any:
        """The app's stored data on a fresh phone (seeded)."""

    @abstractmethod
    def build(self, ui: UI) -> View:
        """The content view of the current screen (everything between status and nav bar)."""

    def activity_name(self) -> str:
        """The Android activity class of the current screen (``dumpsys`` / ``current_focus``)."""
        return self.activity

    @property
    def screen(self) -> Screen:
        return self.stack[-1]

    def push(self, name: str, fields: dict[str, str] | None = None, **params: Any) -> Screen:
        screen = Screen(name=name, params=params, fields=dict(fields or {}))
        self.stack.append(screen)
        return screen

    def replace(self, name: str, fields: dict[str, str] | None = None, **params: Any) -> Screen:
        """Swap the current screen for another (e.g. an editor for the item it just saved)."""
        self.stack.pop()
        return self.push(name, fields, **params)

    def pop(self) -> bool:
        """Close the current screen; False when it is the root."""
        if len(self.stack) > 1:
            self.stack.pop()
            return True
        return False

    def pop_to_root(self) -> None:
        del self.stack[1:]

    def reset_ui(self) -> None:
        """Back to a freshly started app: root screen, no text, no dialog (``am force-stop``)."""
        self.stack = [Screen(name="main")]

    def show(self, dialog: Dialog) -> None:
        self.screen.dialog = dialog

    def close_dialog(self) -> None:
        self.screen.dialog = None

    def toast(self, text: str) -> None:
        self.phone.show_toast(text)

    def handle_back(self) -> bool:
        """Consume Back before the stack pops (e.g. clear a search). True when handled."""
        return False

    def clear_search(self) -> bool:
        """Back on a main screen with a search typed clears the search first, as list apps do;
        True when it did (for :meth:`handle_back`)."""
        if self.screen.name == "main" and self.field("search"):
            self.screen.fields["search"] = ""
            return True
        return False

    def on_swipe(self, x1: int, y1: int, x2: int, y2: int) -> bool:
        """A swipe that no scrollable view took. True when handled."""
        return False

    def field(self, key: str, default: str = "") -> str:
        """Text of a field on the current screen."""
        return self.screen.fields.get(key, default)
