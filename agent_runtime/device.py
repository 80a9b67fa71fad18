"""The device contract: anything that can be looked at and acted on.

A device is used by one runtime at a time and is **not** thread-safe. The async variants run the
blocking call in a worker thread (``asyncio.to_thread``); that is the whole thread-offloading rule,
so a backend only ever implements the synchronous methods.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterable
from types import TracebackType
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.actions import Action, ActionResult
from agent_runtime.coords import Size
from agent_runtime.observation import Observation


class DeviceInfo(BaseModel):
    """What a run records about its device."""

    model_config = ConfigDict(frozen=True)

    kind: str
    spec: str
    screen: Size
    details: dict[str, Any] = Field(default_factory=dict)


class AddressBook(BaseModel):
    """Who a message or call addressed by a contact's name reaches: each name the device's
    contacts store, with its phone numbers as stored (a name held by two contacts keeps both).

    A device addresses conversations by name, so the number behind a name is the device's to
    say, not the screen's: the action guard reads it to judge a send by who receives it."""

    model_config = ConfigDict(frozen=True)

    numbers: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: Each contact name's email addresses, as stored.
    emails: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: Who the device's own records hold, by record: ``calls`` (numbers in the call log),
    #: ``texts`` (addresses of conversations with a received message) and ``emails`` (sender
    #: addresses of received mail). A task may name a person by such a role ("the person who
    #: texted me last"); the guard accepts only parties these records held when the run began.
    records: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @classmethod
    def of(cls, entries: Iterable[tuple[str, str]]) -> AddressBook:
        """The book of ``(name, number)`` pairs (blank ones left out, repeats kept once)."""
        numbers: dict[str, list[str]] = {}
        for name, number in entries:
            if name.strip() and number.strip():
                found = numbers.setdefault(name.strip(), [])
                if number.strip() not in found:
                    found.append(number.strip())
        return cls(numbers={name: tuple(found) for name, found in numbers.items()})


class Device(ABC):
    """Observe a screen, execute actions in screen pixels.

    Implementations: SimPhone (``simphone``), Android over adb (``adb``), X11 desktops (``desktop``).
    ``execute`` reports action failures the device itself detected (unknown app, field not
    focused) as ``ActionResult(ok=False)``; a lost connection raises :class:`DeviceError`.
    """

    #: The spec prefix this backend answers to (``simphone``, ``adb``, ``desktop``).
    kind: ClassVar[str]
    #: Which actions the backend supports; the Worker prompt lists only these.
    platform: ClassVar[str] = "mobile"

    @property
    @abstractmethod
    def screen_size(self) -> Size:
        """The screenshot size in pixels — the space every action's coordinates are in."""

    @abstractmethod
    def observe(self) -> Observation:
        """Take a screenshot (and UI tree, where the device has one)."""

    @abstractmethod
    def execute(self, action: Action) -> ActionResult:
        """Perform one screen-pixel action and wait until the UI settles."""

    @abstractmethod
    def info(self) -> DeviceInfo:
        """Identity and screen of the device, for traces."""

    def close(self) -> None:
        """Release connections. Backends without resources keep this default."""
        return None

    def address_book(self) -> AddressBook | None:
        """The contacts as messages and calls reach them now, or None when this device cannot
        say (then the action guard judges a recipient by the name on the screen alone). Asked
        at the start of a run and whenever a send or call is judged."""
        return None

    async def aobserve(self) -> Observation:
        return await asyncio.to_thread(self.observe)

    async def aexecute(self, action: Action) -> ActionResult:
        return await asyncio.to_thread(self.execute, action)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
