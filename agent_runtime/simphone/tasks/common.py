"""Pieces several task modules share: phrasings, footprints, page-reaching checks, seek-bar driving."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from agent_runtime.actions import Action, Click
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

#: ReachAgent's page-reaching phrasings (App. B), the imperative ones.
REACH_VERBS = ("Go to", "Navigate to", "Open", "Visit", "Jump to", "Take me to")

# Footprints (:attr:`Task.footprint <agent_runtime.simphone.tasks.base.Task.footprint>`) of the
# writes that templates spanning apps make: only the records the goal adds or edits, never the app
# the facts are read from, nor the rest of the app written to (its settings, its other lists).
#: Texting someone: the conversations and the id of a new one.
TEXT_SENT = ("apps.messages.threads[*]", "apps.messages.next_id")
#: Writing a note.
NOTE_WRITTEN = ("apps.notes.notes[*]", "apps.notes.next_id")
#: Sending an email.
EMAIL_SENT = ("apps.email.emails[*]", "apps.email.next_id")
#: Placing a call (the call in progress included).
CALL_PLACED = ("apps.phone.calls[*]", "apps.phone.next_id", "apps.phone.active")

#: Tolerance of seek-bar targets (percentage points).
SEEK_TOLERANCE = 2


def showing(phone: SimPhone, package: str, screen: str, **params: object) -> bool:
    """True when ``package`` is in front on ``screen`` (matching ``params``) with no dialog open.

    Page-reaching success is read from the app's back stack — the state the screen is built
    from — never from pixels.
    """
    if phone.current_focus()[0] != package:
        return False
    current = phone.app(package).screen
    if current.name != screen or current.dialog is not None:
        return False
    return all(current.params.get(k) == v for k, v in params.items())


def set_seek(ui: OracleUI, target: int, **query: object) -> Iterator[Action]:
    """Tap a SeekBar until its value (the node's text) is within :data:`SEEK_TOLERANCE`.

    The first tap assumes the bar spans its whole node; later taps correct by the error read
    back from the screen, the way a person nudges a slider.
    """
    x: float | None = None
    for _ in range(5):
        bar = ui.require(None, cls="SeekBar", **query)
        value = int(bar.text or 0)
        if abs(value - target) <= SEEK_TOLERANCE - 1:
            return
        b = bar.bounds
        width = b.x2 - b.x1
        x = b.x1 + width * target / 100 if x is None else x + (target - value) * width / 100 * 0.9
        x = min(max(x, b.x1 + 1), b.x2 - 2)
        yield Click(coordinate=(x, (b.y1 + b.y2) // 2))
    raise ui.error(f"the seek bar did not reach {target}")
