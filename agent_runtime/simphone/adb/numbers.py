"""Numbers from shell arguments, checked once for every command: finite, in range, integral if asked.

A command that parses its numbers with :func:`number` never meets ``nan``, ``inf`` or ``1e300``
(which Python's ``float()`` accepts): the shell turns :class:`BadNumber` into an error line on
stderr and exit status 1, unless the command reports it in its own words (``input`` as a Java
exception, as Android's does).
"""

from __future__ import annotations

import math

#: Java's ``int``: what Android's ``Integer.parseInt`` accepts (durations, counts).
JAVA_INT_MAX = 2**31 - 1
#: Screen coordinates beyond this are not a gesture any phone could receive.
COORD_LIMIT = 1_000_000


class BadNumber(ValueError):
    """An argument that is not a usable number; the message names it (``bad number 'inf'``)."""


def number(
    text: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    integer: bool = False,
    what: str = "number",
) -> float:
    """``text`` as a finite number in ``[lo, hi]`` (an integer with ``integer=True``), else BadNumber.

    >>> number("1.5"), number("7", integer=True)
    (1.5, 7)
    >>> number("nan")
    Traceback (most recent call last):
    ...
    agent_runtime.simphone.adb.numbers.BadNumber: bad number 'nan'
    >>> number("1e9", hi=3600, what="duration")
    Traceback (most recent call last):
    ...
    agent_runtime.simphone.adb.numbers.BadNumber: duration '1e9' out of range (at most 3600)
    """
    raw = text.strip()
    if "_" in raw:  # Python reads "1_000"; no shell tool does
        raise BadNumber(f"bad {what} '{text}'")
    try:
        value: float = int(raw, 10) if integer else float(raw)
    except ValueError:
        raise BadNumber(f"bad {what} '{text}'") from None
    if not math.isfinite(value):
        raise BadNumber(f"bad {what} '{text}'")
    if lo is not None and value < lo:
        raise BadNumber(f"{what} '{text}' out of range (at least {_show(lo)})")
    if hi is not None and value > hi:
        raise BadNumber(f"{what} '{text}' out of range (at most {_show(hi)})")
    return value


def integer(text: str, *, lo: int | None = None, hi: int | None = JAVA_INT_MAX, what: str = "number") -> int:
    """``text`` as an int in ``[lo, hi]`` (default: at most Java's ``Integer.MAX_VALUE``).

    >>> integer("-3"), integer("3000000000", hi=None)
    (-3, 3000000000)
    """
    return int(number(text, lo=lo, hi=hi, integer=True, what=what))


def _show(limit: float) -> str:
    return str(int(limit)) if float(limit).is_integer() else str(limit)
