"""Files tasks: make folders; rename, move and delete files; reach a folder or a file; questions on
sizes, counts and dates. Also the screen readers the Gallery, Music and Recorder tasks share.

State and screens are documented in :mod:`agent_runtime.simphone.apps.files`. Tasks place files
of their own (names not among the seeded ones), so a goal names exactly one file.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.files import FileItem, FilesApp, format_date, format_size
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.common import NOTE_WRITTEN, REACH_VERBS, showing
from agent_runtime.simphone.tasks.notes import notes_app
from agent_runtime.simphone.tasks.notes import titled as note_titled
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion, parse_dates

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.files"
APP = "Files"

# -- helpers the media apps' tasks share ----------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")


def mentions_number(text: str, value: str) -> bool:
    """Whether ``text`` writes the number in ``value`` (``"1.5 MB"`` → 1.5) as a number of its own:
    a note may say more ("budget-2025.pdf: 1.5 MB"), it must say this.

    >>> mentions_number("budget-2025.pdf: 1.5 MB", "1.5 MB"), mentions_number("15 MB", "1.5 MB")
    (True, False)
    """
    want = float(_NUMBER.findall(value)[0])
    return any(abs(float(n) - want) < 0.005 for n in _NUMBER.findall(text))


def row_value(ui: OracleUI, rid: str) -> str:
    """The value of a details row (the row's title), e.g. ``file_size`` → ``"2.4 MB"``."""
    row = ui.require(rid=rid)
    title = next((el.text for el in ui.children(row) if el.resource_id.endswith("title")), None)
    if not title:
        raise ui.error(f"the {rid} row shows no value")
    return title


# -- Files -------------------------------------------------------------------------------------
FOLDERS = ("Documents", "Download", "Pictures", "Music")
NEW_FOLDERS = ("Receipts", "Travel", "Work", "School", "Taxes", "Recipes", "Projects", "Archive")
STEMS = (
    "invoice-march", "trip-itinerary", "meeting-minutes", "floor-plan", "insurance-card",
    "budget-2025", "concert-tickets", "lab-report", "recipe-book", "warranty",
)  # fmt: skip
EXTENSIONS = ("pdf", "jpg", "docx", "mp3", "png")
KIND_WORDS = {"pdf": "PDF", "jpg": "JPG", "docx": "Word", "mp3": "MP3", "png": "PNG"}


def files_app(phone: SimPhone) -> FilesApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, FilesApp)
    return app


def random_file(rng: random.Random) -> dict[str, Any]:
    return {
        "name": f"{rng.choice(STEMS)}.{rng.choice(EXTENSIONS)}",
        "folder": rng.choice(FOLDERS),
        "size_kb": rng.choice((rng.randint(20, 1000), rng.randint(1100, 25000))),
    }


def place_file(phone: SimPhone, name: str, folder: str, size_kb: int, days_ago: float = 2) -> FileItem:
    """Make this the only file called ``name`` anywhere."""
    app = files_app(phone)
    app.state.files = [f for f in app.state.files if f.name.casefold() != name.casefold()]
    return app.add_file(name, folder, size_kb, phone.now - dt.timedelta(days=days_ago))


def fill_folder(phone: SimPhone, folder: str, rng: random.Random, count: int) -> list[FileItem]:
    """Replace the folder's files with ``count`` distinct ones (sizes and dates from ``rng``)."""
    app = files_app(phone)
    app.state.files = [f for f in app.state.files if f.folder != folder]
    if folder not in app.state.folders:
        app.state.folders.append(folder)
    names = rng.sample([f"{s}.{e}" for s in STEMS for e in EXTENSIONS], count)
    out = []
    for name in names:
        when = phone.now - dt.timedelta(days=rng.randint(1, 120), minutes=rng.randint(0, 900))
        out.append(
            app.add_file(name, folder, rng.choice((rng.randint(20, 1000), rng.randint(1100, 9000))), when)
        )
    return out


def named_files(phone: SimPhone, name: str) -> list[FileItem]:
    return [f for f in files_app(phone).state.files if f.name.casefold() == name.casefold()]


def open_folder(ui: OracleUI, folder: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(folder, rid="title")


def open_file(ui: OracleUI, name: str) -> Iterator[Action]:
    """Open Files, search for ``name`` and open its details."""
    yield ui.open_app(APP)
    yield from ui.type_into(None, name, rid="search_box")
    yield from ui.tap(name, rid="title")


class FilesCreateFolder(Task):
    template = 'Create a folder named "{folder}" in Files.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"folder": rng.choice(NEW_FOLDERS) + rng.choice(("", " 2025", " old", " backup"))}

    def setup(self, phone: SimPhone) -> None:
        app = files_app(phone)
        app.state.folders = [f for f in app.state.folders if f.casefold() != self.params["folder"].casefold()]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        folders = [f.casefold() for f in files_app(phone).state.folders]
        return 1.0 if folders.count(self.params["folder"].casefold()) == 1 else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="New folder")
        yield from ui.type_into(None, self.params["folder"], rid="input")
        yield from ui.dialog_button("Create")


class FilesRenameFile(Task):
    template = 'Rename the file "{name}" in my {folder} folder to "{new_name}".'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        p = random_file(rng)
        stem = rng.choice([s for s in STEMS if not p["name"].startswith(s)])
        return {**p, "new_name": f"{stem}-final.{p['name'].rpartition('.')[2]}"}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        #: The file that must carry the new name.
        self.file_id = place_file(phone, p["name"], p["folder"], p["size_kb"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        renamed = named_files(phone, self.params["new_name"])
        ok = [f.id for f in renamed] == [self.file_id] and not named_files(phone, self.params["name"])
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])
        yield from ui.tap(self.params["name"], rid="title")
        yield from ui.tap(desc="Rename")
        yield from ui.type_into(None, self.params["new_name"], rid="input")
        yield from ui.dialog_button("Rename")


class FilesDeleteFile(Task):
    template = 'Delete the file "{name}" from my {folder} folder.'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_file(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        target = place_file(phone, p["name"], p["folder"], p["size_kb"])
        #: Every other file must survive.
        self.keep = {f.id for f in files_app(phone).state.files} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {f.id for f in files_app(phone).state.files} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])
        yield from ui.tap(self.params["name"], rid="title")
        yield from ui.tap(desc="Delete")
        yield from ui.dialog_button("Delete")


class FilesMoveFile(Task):
    template = 'Move the file "{name}" from {folder} to {target}.'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        p = random_file(rng)
        return {**p, "target": rng.choice([f for f in FOLDERS if f != p["folder"]])}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        self.file_id = place_file(phone, p["name"], p["folder"], p["size_kb"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = named_files(phone, self.params["name"])
        ok = [(f.id, f.folder) for f in found] == [(self.file_id, self.params["target"])]
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])
        yield from ui.tap(self.params["name"], rid="title")
        yield from ui.tap(desc="Move")
        yield from ui.tap(self.params["target"], rid="title")


class FilesNewFolderAndMove(Task):
    template = 'Make a new folder "{target}" in Files and move "{name}" from {folder} into it.'
    app_names = (APP,)
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_file(rng), "target": rng.choice(NEW_FOLDERS)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        app = files_app(phone)
        app.state.folders = [f for f in app.state.folders if f.casefold() != p["target"].casefold()]
        self.file_id = place_file(phone, p["name"], p["folder"], p["size_kb"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = named_files(phone, self.params["name"])
        ok = [(f.id, f.folder) for f in found] == [(self.file_id, self.params["target"])]
        return 1.0 if ok and self.params["target"] in files_app(phone).state.folders else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="New folder")
        yield from ui.type_into(None, self.params["target"], rid="input")
        yield from ui.dialog_button("Create")
        yield from ui.tap(self.params["folder"], rid="title")
        yield from ui.tap(self.params["name"], rid="title")
        yield from ui.tap(desc="Move")
        yield from ui.tap(self.params["target"], rid="title")


class FilesReachFolder(Task):
    template = "{verb} my {folder} folder in Files."
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "folder": rng.choice(FOLDERS + NEW_FOLDERS)}

    def setup(self, phone: SimPhone) -> None:
        app = files_app(phone)
        if self.params["folder"] not in app.state.folders:
            app.state.folders.append(self.params["folder"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "folder", folder=self.params["folder"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])


class FilesReachFile(Task):
    template = '{verb} the details of the file "{name}" in Files.'
    app_names = (APP,)
    complexity = 0.8
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_file(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        self.file_id = place_file(phone, p["name"], p["folder"], p["size_kb"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "details", id=self.file_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_file(ui, self.params["name"])


class FilesSizeQuestion(TypedQuestion):
    template = 'How big is the file "{name}"? Answer with the size Files shows.'
    app_names = (APP,)
    complexity = 0.8
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_file(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_file(phone, p["name"], p["folder"], p["size_kb"])

    def expected_answer(self) -> str:
        return format_size(self.params["size_kb"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_file(ui, self.params["name"])
        yield ui.answer(row_value(ui, "file_size"))


class FilesCountQuestion(TypedQuestion):
    template = "How many {kind_word} files are in my {folder} folder?"
    app_names = (APP,)
    complexity = 0.8
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        ext = rng.choice(EXTENSIONS)
        return {
            "ext": ext,
            "kind_word": KIND_WORDS[ext],
            "folder": rng.choice(FOLDERS),
            "total": rng.randint(4, 8),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        files = fill_folder(phone, p["folder"], self.rng(), p["total"])
        #: The number of matching files ``setup`` left (it may be 0).
        self.count = sum(f.extension == p["ext"] for f in files)

    def expected_answer(self) -> str:
        return str(self.count)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])
        rows = visible_rows(ui, "file_item")
        for action in folder_rows(ui):
            yield action
            rows |= visible_rows(ui, "file_item")
        yield ui.answer(str(sum(name.lower().endswith("." + self.params["ext"]) for name in rows)))


def folder_rows(ui: OracleUI) -> Iterator[Action]:
    """Scroll through an open folder; afterwards ``ui.screen`` has been read top to bottom.

    Yields the swipes; callers read rows between them with :func:`visible_rows`.
    """
    for _ in range(6):
        before = ui.labels()
        yield ui.swipe(1)
        if ui.labels() == before:
            return


def visible_rows(ui: OracleUI, rid: str) -> dict[str, str]:
    """``title -> summary`` of the list rows (resource-id ``rid``) on screen."""
    out = {}
    for row in ui.find_all(rid=rid):
        texts = {el.resource_id.rpartition("/")[2]: el.text for el in ui.children(row)}
        if texts.get("title"):
            out[texts["title"]] = texts.get("summary", "")
    return out


class FilesNewestDateQuestion(TypedQuestion):
    template = "On what date was the most recently modified file in my {folder} folder changed?"
    app_names = (APP,)
    complexity = 1.0
    match = "date"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"folder": rng.choice(FOLDERS + NEW_FOLDERS[:3]), "total": rng.randint(3, 6)}

    def setup(self, phone: SimPhone) -> None:
        files = fill_folder(phone, self.params["folder"], self.rng(), self.params["total"])
        self.newest = max(f.modified for f in files)

    def expected_answer(self) -> str:
        return format_date(self.newest)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])
        rows = visible_rows(ui, "file_item")
        for action in folder_rows(ui):
            yield action
            rows |= visible_rows(ui, "file_item")
        dates = [dt.datetime(y, m, d) for summary in rows.values() for y, m, d in parse_dates(summary) if y]
        if not dates:
            raise ui.error("the folder shows no dated files")
        yield ui.answer(format_date(max(dates)))


class FilesLargeFilesQuestion(TypedQuestion):
    template = "Which files in my {folder} folder are larger than {mb} MB?"
    app_names = (APP,)
    complexity = 1.0
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"folder": rng.choice(FOLDERS), "mb": rng.choice((1, 2, 3, 5)), "total": rng.randint(4, 7)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        files = fill_folder(phone, p["folder"], self.rng(), p["total"])
        limit = p["mb"] * 1024
        big = [f for f in files if f.size_kb > limit]
        if not big:  # the answer is never an empty list
            files[0].size_kb = limit + 600
            big = [files[0]]
        for f in files:  # no size that reads as exactly the limit
            if round(f.size_kb / 1024, 1) == p["mb"]:
                f.size_kb += 200
        self.big = sorted(f.name for f in files if f.size_kb > limit)

    def expected_answer(self) -> str:
        return ", ".join(self.big)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_folder(ui, self.params["folder"])
        rows = visible_rows(ui, "file_item")
        for action in folder_rows(ui):
            yield action
            rows |= visible_rows(ui, "file_item")
        big = []
        for name, summary in rows.items():
            size = summary.split(" · ")[0]
            value = float(size.split()[0])
            if size.endswith("MB") and value > self.params["mb"]:
                big.append(name)
        yield ui.answer(", ".join(sorted(big)))


class FilesLocationQuestion(QuestionTask):
    template = 'Which folder is the file "{name}" in?'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_file(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_file(phone, p["name"], p["folder"], p["size_kb"])

    def expected_answer(self) -> str:
        return str(self.params["folder"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_file(ui, self.params["name"])
        yield ui.answer(row_value(ui, "file_location").rpartition("/")[2])


# -- across apps ---------------------------------------------------------------------------------
class FilesSizeToNote(Task):
    template = 'Look up the size of the file "{name}" in Files and save it in a new note titled "{title}".'
    app_names = (APP, "Notes")
    footprint = NOTE_WRITTEN
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            **random_file(rng),
            "title": rng.choice(("File size", "Upload limits", "Storage check", "Sizes")),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        notes = notes_app(phone)
        notes.state.notes = [n for n in notes.state.notes if n.title.casefold() != p["title"].casefold()]
        place_file(phone, p["name"], p["folder"], p["size_kb"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        want = format_size(self.params["size_kb"])
        ok = [mentions_number(n.body, want) for n in note_titled(phone, self.params["title"])]
        return 1.0 if ok == [True] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_file(ui, self.params["name"])
        size = row_value(ui, "file_size")
        yield ui.open_app("Notes")
        yield from ui.tap(desc="New note")
        yield from ui.type_into(None, self.params["title"], rid="note_title")
        yield from ui.type_into(None, f"{self.params['name']}: {size}", rid="note_body")
        yield from ui.tap(desc="Save")


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    FilesCreateFolder,
    FilesRenameFile,
    FilesDeleteFile,
    FilesMoveFile,
    FilesNewFolderAndMove,
    FilesReachFolder,
    FilesReachFile,
    FilesSizeQuestion,
    FilesCountQuestion,
    FilesNewestDateQuestion,
    FilesLargeFilesQuestion,
    FilesLocationQuestion,
    FilesSizeToNote,
)
