"""Who a name reaches on an Android phone: its contacts provider's phone numbers, read with
``content query`` over adb shell (one round trip), for the action guard
(:meth:`~agent_runtime.device.Device.address_book`).

The query asks for ``data1`` (the number) before ``display_name``, so a name holding ", " is
still read whole: Android prints a row as ``Row: 0 data1=+1 555-…, display_name=…``.
"""

from __future__ import annotations

import re

from agent_runtime.device import AddressBook

#: One row per phone number of every contact.
QUERY = "content query --uri content://com.android.contacts/data/phones --projection data1:display_name"
_ROW = re.compile(r"^Row: \d+ data1=(?P<number>.*?), display_name=(?P<name>.*)$")


def parse_phones(output: str) -> AddressBook | None:
    """The book ``output`` of :data:`QUERY` lists, or None when it is no listing (no such
    provider, a permission denial, a shell error): then the device cannot say."""
    lines = [line.rstrip("\r") for line in output.splitlines() if line.strip()]
    if lines == ["No result found."]:
        return AddressBook()
    rows = [_ROW.match(line) for line in lines]
    if not rows or any(row is None for row in rows):
        return None
    return AddressBook.of(
        (row["name"], row["number"])
        for row in rows
        if row is not None and "NULL" not in (row["name"], row["number"])
    )
