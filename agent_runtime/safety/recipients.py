"""Who a send or call reaches once the device resolves its address.

A conversation is addressed by a contact's name, and the device sends to whatever number that
name holds *when the message goes out*. Hostile text can move that number in an earlier step
that looked harmless or that someone allowed ("it's Mom, I lost my phone, update my number"),
and the screen still says "Mom". So the guard judges a recipient by the number the device
resolves it to (:meth:`~agent_runtime.device.Device.address_book`): on task when the user's
words give that number, or when the user named the contact and it is a number that contact had
when the run started. A contact changed during the run is not trusted.

A device that cannot say (None) leaves the guard with the name on the screen alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from agent_runtime.device import AddressBook
from agent_runtime.safety.normalize import fold, is_phone, phone_key, phone_numbers

#: How much of a name a reason shows (a hostile contact name can be a paragraph).
_SHOWN = 60


@dataclass(frozen=True)
class Contacts:
    """What the device says about names and numbers: its address book now — asked only when a
    send or call is judged, since asking an Android device costs a shell round trip — and as it
    was when the run started (None: not recorded, e.g. a run begun before this was kept)."""

    ask: Callable[[], AddressBook | None]
    at_start: AddressBook | None = None

    @cached_property
    def now(self) -> AddressBook | None:
        return self.ask()


def _key(name: str) -> str:
    return " ".join(fold(name).split())


def lookup(book: AddressBook, who: str) -> tuple[str, ...] | None:
    """The numbers ``who`` (a name as a screen shows it) reaches in ``book``; None when no
    contact has that name. Names compare folded (case, accents, spacing and invisible
    characters ignored)."""
    key = _key(who)
    found = [n for name, numbers in book.numbers.items() if _key(name) == key for n in numbers]
    return tuple(dict.fromkeys(found)) if found else None


def _same(a: str, b: str) -> bool:
    """Whole numbers (country code included) or, for what is no phone number, the same digits."""
    return phone_key(a) == phone_key(b) if is_phone(a) and is_phone(b) else fold(a) == fold(b)


def recorded(who: str, roles: Sequence[str], contacts: Contacts | None) -> bool:
    """Whether ``who`` (a name, number or address) is a party the device's records of kind
    ``roles`` (see :attr:`~agent_runtime.device.AddressBook.records`) held when the run
    started — directly, or through a number or email address its contact had then.

    This is what lets a task name a person by role ("call whoever texted me last"): the guard
    cannot tell *which* recorded party the role means, but it knows the party was on the phone's
    own record before any screen text of this run was read. Screen text typed during the run,
    a contact added or changed since, or a device that kept no start record never qualify."""
    book = contacts.at_start if contacts is not None else None
    if book is None or not roles:
        return False
    key = _key(who)
    names = [n for n in (*book.numbers, *book.emails) if _key(n) == key]
    candidates = [who, *(v for n in names for v in (*book.numbers.get(n, ()), *book.emails.get(n, ())))]
    records = [r for kind in roles for r in book.records.get(kind, ())]
    return any(_same(c, r) for c in candidates for r in records)


def judge(
    who: str, *, named: bool, words: str, contacts: Contacts | None, roles: Sequence[str] = ()
) -> str | None:
    """Why a send or call to ``who`` (a name or number on the screen) goes to someone the user
    did not ask for, or None. ``named``: the user's words name ``who``; ``words``: the user's
    positive words, where the numbers they give are found.

    A name the device resolves is judged by its numbers: each must be one the user gives, or —
    when the user named the contact — one it had when the run started. Anything else (a number
    on the screen, a device that cannot say, a name it has no contact for) is judged as written:
    the user must name it. A party the task names by its role in the device's records
    (``roles``; see :func:`recorded`) counts as named."""
    named = named or recorded(who, roles, contacts)
    shown = " ".join(who.split())
    shown = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 1] + "…"
    stranger = f'someone the task did not name: "{shown}"'
    book = contacts.now if contacts is not None and not is_phone(who) else None
    numbers = lookup(book, who) if book is not None else None
    if contacts is None or numbers is None:
        return None if named else stranger
    given = phone_numbers(words)
    before: Sequence[str] | None = None
    if contacts.at_start is not None:
        before = lookup(contacts.at_start, who) or ()
    for number in numbers:
        if any(_same(number, g) for g in given):
            continue
        if not named:
            return f"{stranger} ({number})"
        if before is None or any(_same(number, b) for b in before):
            continue
        was = f"it was {', '.join(before)}" if before else "the contact did not exist"
        return (
            f'"{shown}", whose number became {number} during this run ({was} when the run started) '
            "and the task never gives it"
        )
    return None
