"""Files (``com.simphone.files``, label ``Files``): a file manager over one storage volume.

State — :class:`FilesState`:
    ``folders``: folder names under "Internal storage", in creation order; ``files``: list of
    :class:`FileItem` (``id``, ``name`` with extension, ``folder``, ``size_kb``, ``modified``
    virtual datetime); ``next_id``. Helpers: :meth:`FilesApp.add_file`, :meth:`FilesApp.in_folder`.

Screens:
    * ``main`` "Files": EditText "Search files" (resource-id ``search_box``); without a query,
      one row per folder (resource-id ``folder_item``, summary "N items"); with a query, the
      matching files of every folder (``file_item``, summary = folder). FAB "New folder" asks
      for a name (dialog "New folder", EditText ``input``, button "Create").
    * ``folder`` (title = folder name): its files by name (``file_item``; title = file name,
      summary = "2.4 MB · Mar 14, 2025"); tap opens the details.
    * ``details`` (title = file name): rows Name, Size, Modified, Location (resource-ids
      ``file_name``, ``file_size``, ``file_modified``, ``file_location``, the value is the row's
      title); app-bar buttons "Rename" (dialog with ``input``), "Move" (a choice of folders) and
      "Delete" (confirm "Delete").

Sizes show as Android's Files app shows them: ``512 KB`` below a megabyte, else ``2.4 MB``.
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

_SEED_FOLDERS = ("Documents", "Download", "Pictures", "Music")
_SEED_FILES = (
    ("Documents", "Lease agreement.pdf", 842),
    ("Documents", "Tax return 2024.pdf", 1530),
    ("Documents", "CV.docx", 96),
    ("Download", "boarding-pass.pdf", 210),
    ("Download", "podcast-episode.mp3", 48200),
    ("Download", "setup-guide.pdf", 3380),
    ("Pictures", "Screenshot_0412.png", 1240),
    ("Pictures", "wallpaper.jpg", 2860),
    ("Music", "voice-demo.m4a", 3120),
)
_COLORS = {"pdf": (219, 68, 55), "jpg": (15, 157, 88), "png": (15, 157, 88), "mp3": (171, 71, 188)}


def format_size(size_kb: int) -> str:
    """``512 KB`` or ``2.4 MB`` (one decimal), as the details page shows a size.

    >>> format_size(512), format_size(2458), format_size(10240)
    ('512 KB', '2.4 MB', '10.0 MB')
    """
    return f"{size_kb} KB" if size_kb < 1024 else f"{size_kb / 1024:.1f} MB"


def format_date(when: dt.datetime) -> str:
    """``Mar 14, 2025`` — the date format of the Files, Gallery and Recorder apps."""
    return f"{when:%b} {when.day}, {when.year}"


def format_datetime(when: dt.datetime) -> str:
    """``Mar 14, 2025, 7:05 PM`` — a date with its time, as details pages show it."""
    return f"{format_date(when)}, {dialogs.format_time(when.hour, when.minute)}"


@dataclass
class FileItem:
    id: int
    name: str
    folder: str
    size_kb: int
    modified: dt.datetime = dt.datetime(2025, 1, 1)

    @property
    def extension(self) -> str:
        return self.name.rpartition(".")[2].lower() if "." in self.name else ""


@dataclass
class FilesState:
    folders: list[str] = field(default_factory=list)
    files: list[FileItem] = field(default_factory=list)
    next_id: int = 1


class FilesApp(App):
    package = "com.simphone.files"
    label = "Files"
    activity = "com.simphone.files.BrowseActivity"

    def initial_state(self, rng: random.Random) -> FilesState:
        state = FilesState(folders=list(_SEED_FOLDERS))
        now = self.phone.now
        for folder, name, size in _SEED_FILES:
            when = now - dt.timedelta(days=rng.randint(1, 90), minutes=rng.randint(0, 600))
            state.files.append(FileItem(state.next_id, name, folder, size, when))
            state.next_id += 1
        return state

    # -- helpers --------------------------------------------------------------------------------

    def add_file(self, name: str, folder: str, size_kb: int, modified: dt.datetime) -> FileItem:
        """Store a file (creating its folder if needed)."""
        if folder not in self.state.folders:
            self.state.folders.append(folder)
        item = FileItem(self.state.next_id, name, folder, size_kb, modified)
        self.state.next_id += 1
        self.state.files.append(item)
        return item

    def in_folder(self, folder: str) -> list[FileItem]:
        return sorted((f for f in self.state.files if f.folder == folder), key=lambda f: f.name.lower())

    def _get(self, file_id: object) -> FileItem | None:
        return next((f for f in self.state.files if f.id == file_id), None)

    def activity_name(self) -> str:
        return "com.simphone.files.DetailsActivity" if self.screen.name == "details" else self.activity

    def handle_back(self) -> bool:
        return self.clear_search()

    # -- screens --------------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name == "details":
            item = self._get(self.screen.params.get("id"))
            if item is not None:
                return self._details(ui, item)
            self.pop()
        if self.screen.name == "folder" and self.screen.params.get("folder") in self.state.folders:
            return self._folder(ui, self.screen.params["folder"])
        self.pop_to_root()
        return self._main(ui)

    def _file_row(self, ui: UI, item: FileItem, summary: str) -> View:
        color = _COLORS.get(item.extension, (66, 133, 244))
        return ui.list_item(
            item.name,
            summary,
            lambda: self.push("details", id=item.id),
            leading=ui.avatar(item.extension[:1] or "?", color),
            rid="file_item",
            desc=item.name,
        )

    def _main(self, ui: UI) -> View:
        query = self.field("search").strip().lower()
        search = ui.edit("search", "Search files", rid="search_box")
        search.radius = ui.dp(28)
        body: list[View | None] = [ui.col(search, pad=(16, 4, 16, 8))]
        if query:
            found = sorted(
                (f for f in self.state.files if query in f.name.lower()), key=lambda f: f.name.lower()
            )
            body += [self._file_row(ui, f, f.folder) for f in found]
            if not found:
                body.append(ui.empty("No matching files"))
        else:
            body.append(ui.section("Internal storage"))
            for folder in sorted(self.state.folders, key=str.lower):
                count = len(self.in_folder(folder))
                body.append(
                    ui.list_item(
                        folder,
                        f"{count} item{'s' if count != 1 else ''}",
                        self._open_folder(folder),
                        leading=ui.avatar(folder[:1], (66, 133, 244)),
                        rid="folder_item",
                        desc=folder,
                    )
                )
        fab = ui.fab("New folder", self._ask_new_folder)
        return ui.page("Files", body, back=False, fab=fab, scroll_key="browse")

    def _open_folder(self, folder: str) -> Callable[[], None]:
        def run() -> None:
            self.push("folder", folder=folder)

        return run

    def _ask_new_folder(self) -> None:
        def create(name: str) -> None:
            name = name.strip()
            if not name or "/" in name:
                self.toast("Enter a folder name")
            elif name.casefold() in {f.casefold() for f in self.state.folders}:
                self.toast(f"A folder named {name} already exists")
            else:
                self.state.folders.append(name)
                self.toast("Folder created")

        self.show(dialogs.prompt(self, "New folder", "Folder name", "", create, ok_label="Create"))

    def _folder(self, ui: UI, folder: str) -> View:
        items = self.in_folder(folder)
        body: list[View | None] = [
            self._file_row(ui, f, f"{format_size(f.size_kb)} · {format_date(f.modified)}") for f in items
        ]
        if not items:
            body.append(ui.empty("This folder is empty"))
        return ui.page(folder, body, scroll_key="folder")

    def _details(self, ui: UI, item: FileItem) -> View:
        def rename() -> None:
            def done(name: str) -> None:
                name = name.strip()
                if not name or "/" in name:
                    self.toast("Enter a file name")
                elif any(
                    f.name == name and f.folder == item.folder and f.id != item.id for f in self.state.files
                ):
                    self.toast(f"{name} already exists in {item.folder}")
                else:
                    item.name = name

            self.show(dialogs.prompt(self, "Rename", "File name", item.name, done, ok_label="Rename"))

        def move() -> None:
            def to(folder: str) -> None:
                if folder != item.folder:
                    item.folder = folder
                    self.toast(f"Moved to {folder}")

            self.show(
                dialogs.choice(self, "Move to", sorted(self.state.folders, key=str.lower), item.folder, to)
            )

        def delete() -> None:
            def really() -> None:
                self.state.files = [f for f in self.state.files if f.id != item.id]
                self.pop()
                self.toast("File deleted")

            self.show(
                dialogs.confirm(self, "Delete file?", f"“{item.name}” will be deleted.", "Delete", really)
            )

        rows = (
            ("Name", item.name, "file_name"),
            ("Size", format_size(item.size_kb), "file_size"),
            (
                "Modified",
                format_datetime(item.modified),
                "file_modified",
            ),
            ("Location", f"Internal storage/{item.folder}", "file_location"),
        )
        body: list[View | None] = [ui.list_item(value, label, None, rid=rid) for label, value, rid in rows]
        actions = [
            ui.icon_button("more", "Rename", rename, rid="rename"),
            ui.icon_button("chevron_right", "Move", move, rid="move"),
            ui.icon_button("delete", "Delete", delete, rid="delete"),
        ]
        return ui.page(item.name, body, actions=actions, scroll_key="details")
