"""The per-run note store: what the Notetaker found, carried to the Manager and the Worker.

The Notetaker answers with its full notes each time; models restate, reorder and re-bullet old
notes, and occasionally drop one. The store keeps notes the way Algorithm 1 defines them
(``N_{t+1} = N_t ∪ N_t'``): ordered by first appearance, de-duplicated on a normalised form, each
remembering the step it came from — so a note a model forgot to repeat is not lost. It is
plain data (``to_state``/``from_state``) so it lives in the checkpointed graph state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

from agent_runtime.roles.lists import split_items

#: Oldest notes are dropped past this many, keeping prompts bounded on very long runs.
MAX_ITEMS = 50


class NoteItem(BaseModel):
    """One note and the step whose screen it was read from."""

    text: str
    step: int


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip(" .;,:")


class NoteStore:
    """Ordered, de-duplicated notes. Not thread-safe; the graph updates it from one node."""

    def __init__(self, items: Iterable[NoteItem] = (), max_items: int = MAX_ITEMS) -> None:
        self.max_items = max_items
        self._items: list[NoteItem] = []
        self._keys: set[str] = set()
        for item in items:
            self._add(item)

    @property
    def items(self) -> list[NoteItem]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def _add(self, item: NoteItem) -> bool:
        key = _key(item.text)
        if not key or key in self._keys:
            return False
        self._items.append(item)
        self._keys.add(key)
        if len(self._items) > self.max_items:
            dropped = self._items.pop(0)
            self._keys.discard(_key(dropped.text))
        return True

    def merge(self, notes: str, step: int) -> list[NoteItem]:
        """Add the notes in a Notetaker reply; return the ones that were new.

        >>> s = NoteStore()
        >>> [i.text for i in s.merge("- Code: 7731\\n- Seat 4B", step=2)]
        ['Code: 7731', 'Seat 4B']
        >>> [i.text for i in s.merge("1. code: 7731.\\n2. Gate 12", step=5)]
        ['Gate 12']
        >>> s.render()
        '- Code: 7731\\n- Seat 4B\\n- Gate 12'
        """
        added = []
        for text in split_items(notes):
            item = NoteItem(text=text, step=step)
            if self._add(item):
                added.append(item)
        return added

    def render(self) -> str:
        """The notes as prompts show them: one ``- note`` line each (empty when there are none)."""
        return "\n".join(f"- {item.text}" for item in self._items)

    def to_state(self) -> list[dict[str, object]]:
        return [item.model_dump() for item in self._items]

    @classmethod
    def from_state(cls, data: Iterable[dict[str, object]] | None) -> NoteStore:
        return cls(NoteItem.model_validate(d) for d in (data or ()))
