"""Notes (``com.simphone.notes``, label ``Notes``).

State — :class:`NotesState`:
    ``notes``: list of :class:`Note` (``id``, ``title``, ``body``, ``pinned``, ``updated``
    virtual datetime); ``next_id``. Helpers: :meth:`NotesApp.add_note`, :meth:`NotesApp.find`.

Screens:
    * ``main`` "Notes": EditText "Search notes" (resource-id ``search_box``), pinned notes first
      then newest first (item title = note title or "Untitled", summary = first body line);
      tap opens the editor, long-press asks "Delete note?" (button "Delete"); FAB "New note".
    * ``edit`` "Edit note" / "New note": EditText "Title" (``note_title``), multi-line
      EditText "Note" (``note_body``; ENTER inserts a new line); app-bar buttons "Pin"/"Unpin",
      "Delete" and "Save" (content-desc). Back also saves; an empty new note is discarded.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

_SEED_NOTES = (
    ("Shopping list", "Milk\nEggs\nBread\nApples"),
    ("Ideas", "Weekend hike to the lake\nTry the new ramen place"),
    ("Books to read", "The Left Hand of Darkness\nPiranesi\nProject Hail Mary"),
    ("Wi-Fi password", "Guest network: sunflower42"),
    ("Meeting notes", "Q3 planning: ship the beta by Friday.\nOwner: Priya"),
    ("Packing", "Passport\nCharger\nSunscreen"),
)


@dataclass
class Note:
    id: int
    title: str
    body: str = ""
    pinned: bool = False
    updated: dt.datetime = dt.datetime(2025, 1, 1)


@dataclass
class NotesState:
    notes: list[Note] = field(default_factory=list)
    next_id: int = 1


class NotesApp(App):
    package = "com.simphone.notes"
    label = "Notes"
    activity = "com.simphone.notes.MainActivity"

    def initial_state(self, rng: random.Random) -> NotesState:
        state = NotesState()
        now = self.phone.now
        for i, (title, body) in enumerate(rng.sample(_SEED_NOTES, 3)):
            state.notes.append(
                Note(
                    state.next_id, title, body, False, now - dt.timedelta(days=i + 1, hours=rng.randint(0, 9))
                )
            )
            state.next_id += 1
        return state

    def add_note(self, title: str, body: str = "", pinned: bool = False) -> Note:
        note = Note(self.state.next_id, title, body, pinned, self.phone.now)
        self.state.next_id += 1
        self.state.notes.append(note)
        return note

    def find(self, title: str) -> Note | None:
        wanted = title.strip().lower()
        return next((n for n in self.state.notes if n.title.strip().lower() == wanted), None)

    def _get(self, note_id: int | None) -> Note | None:
        return next((n for n in self.state.notes if n.id == note_id), None)

    def activity_name(self) -> str:
        return "com.simphone.notes.EditorActivity" if self.screen.name == "edit" else self.activity

    def build(self, ui: UI) -> View:
        if self.screen.name == "edit":
            return self._edit(ui)
        return self._main(ui)

    def _main(self, ui: UI) -> View:
        query = self.field("search").strip().lower()
        notes = sorted(self.state.notes, key=lambda n: (not n.pinned, -n.updated.timestamp(), -n.id))
        if query:
            notes = [n for n in notes if query in n.title.lower() or query in n.body.lower()]
        search = ui.edit("search", "Search notes", rid="search_box")
        search.radius = ui.dp(28)
        body: list[View | None] = [ui.col(search, pad=(16, 4, 16, 8))]
        for n in notes:
            first = n.body.split("\n", 1)[0]
            item = ui.list_item(
                n.title or "Untitled",
                first,
                self._open(n.id),
                rid="note_item",
                on_long_click=self._ask_delete(n.id),
                trailing=ui.icon("star", ui.t.primary, 18, desc="Pinned") if n.pinned else None,
            )
            item.border, item.radius = ui.t.divider, ui.dp(12)
            body.append(ui.col(item, pad=(12, 4, 12, 4)))
        if not notes:
            body.append(ui.empty("No notes" if not query else "No matching notes"))
        return ui.page("Notes", body, back=False, fab=ui.fab("New note", self._new), scroll_key="notes")

    def handle_back(self) -> bool:
        if self.screen.name == "edit":
            self._save()
            return False
        if self.field("search"):
            self.screen.fields["search"] = ""
            return True
        return False

    def _open(self, note_id: int) -> Callable[[], None]:
        def run() -> None:
            note = self._get(note_id)
            if note is not None:
                self.push("edit", fields={"title": note.title, "body": note.body}, id=note_id)

        return run

    def _new(self) -> None:
        screen = self.push("edit", fields={"title": "", "body": ""}, id=None)
        self.phone.focus_field(screen, "body")

    def _ask_delete(self, note_id: int) -> Callable[[], None]:
        def run() -> None:
            note = self._get(note_id)
            name = note.title if note and note.title else "This note"
            self.show(
                dialogs.confirm(
                    self,
                    "Delete note?",
                    f"“{name}” will be deleted.",
                    "Delete",
                    lambda: self._delete(note_id),
                )
            )

        return run

    def _delete(self, note_id: int | None) -> None:
        self.state.notes = [n for n in self.state.notes if n.id != note_id]
        self.toast("Note deleted")

    def _save(self) -> None:
        """Store the editor's fields (new notes get an id on first save)."""
        title, body = self.field("title").strip(), self.field("body").rstrip()
        note = self._get(self.screen.params.get("id"))
        if note is None:
            if not title and not body:
                return
            note = self.add_note(title, body)
            self.screen.params["id"] = note.id
        elif (note.title, note.body) != (title, body):
            note.title, note.body, note.updated = title, body, self.phone.now

    def _edit(self, ui: UI) -> View:
        note = self._get(self.screen.params.get("id"))

        def save_and_close() -> None:
            self._save()
            self.pop()

        def pin() -> None:
            self._save()
            target = self._get(self.screen.params.get("id"))
            if target is not None:
                target.pinned = not target.pinned

        def delete() -> None:
            note_id = self.screen.params.get("id")
            self.pop()
            self._delete(note_id)

        pinned = note is not None and note.pinned
        actions = [
            ui.icon_button(
                "star" if pinned else "star_outline", "Unpin" if pinned else "Pin", pin, rid="pin"
            ),
            ui.icon_button("delete", "Delete", delete, rid="delete"),
            ui.icon_button("check", "Save", save_and_close, rid="save"),
        ]
        title = ui.edit("title", "Title", rid="note_title", size=22, boxed=False)
        body_field = ui.edit("body", "Note", rid="note_body", multiline=True, boxed=False)
        body_field.h = ui.dp(360)
        body: list[View | None] = [ui.col(title, body_field, pad=(4, 0, 4, 0))]
        return ui.page(
            "Edit note" if note is not None else "New note", body, actions=actions, scroll_key="edit"
        )
