"""Gallery tasks: favourite, move and delete photos; make albums; reach an album or a photo;
questions on counts, dates and favourites.

State and screens are documented in :mod:`agent_runtime.simphone.apps.gallery`. Tasks place
photos of their own (titles not among the seeded ones), so a goal names exactly one photo.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.files import format_date
from agent_runtime.simphone.apps.gallery import GalleryApp, Photo, share_text
from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.common import NOTE_WRITTEN, REACH_VERBS, TEXT_SENT, showing
from agent_runtime.simphone.tasks.contacts import place_contact, random_person
from agent_runtime.simphone.tasks.files import (
    folder_rows,
    mentions_number,
    row_value,
    visible_rows,
)
from agent_runtime.simphone.tasks.messages import sent
from agent_runtime.simphone.tasks.notes import notes_app
from agent_runtime.simphone.tasks.notes import titled as note_titled
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.gallery"
APP = "Gallery"
ALBUMS = ("Camera", "Holidays", "Family", "Screenshots")
NEW_ALBUMS = ("Road trip", "Wedding", "Pets", "Hiking", "Birthday party", "Recipes", "Garden", "Concerts")
TITLES = (
    "Lighthouse at dusk", "Snowy cabin", "Kids at the beach", "Cherry blossoms", "Mountain lake",
    "Birthday candles", "Harbor boats", "City skyline", "Puppy nap", "Autumn forest",
    "Street musician", "Desert road",
)  # fmt: skip
PLACES = ("Lisbon", "Kyoto", "Oslo", "Cape Town", "Montreal", "Valparaíso", "Tbilisi", "Hanoi")


def gallery(phone: SimPhone) -> GalleryApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, GalleryApp)
    return app


def random_photo(rng: random.Random) -> dict[str, Any]:
    return {
        "photo": rng.choice(TITLES),
        "album": rng.choice(ALBUMS),
        "place": rng.choice(PLACES),
        "days_ago": rng.randint(3, 300),
    }


def place_photo(phone: SimPhone, p: dict[str, Any], favorite: bool = False) -> Photo:
    """Make the photo of params ``p`` the only one with its title."""
    app = gallery(phone)
    app.state.photos = [x for x in app.state.photos if x.title.casefold() != p["photo"].casefold()]
    taken = phone.now - dt.timedelta(days=p["days_ago"], hours=3)
    return app.add_photo(p["photo"], p["album"], taken, p["place"], favorite)


def fill_album(phone: SimPhone, album: str, rng: random.Random, count: int) -> list[Photo]:
    """Replace the album's photos with ``count`` of distinct titles, places and dates."""
    app = gallery(phone)
    app.state.photos = [x for x in app.state.photos if x.album != album]
    if album not in app.state.albums:
        app.state.albums.append(album)
    titles = set(rng.sample(TITLES, count))
    app.state.photos = [x for x in app.state.photos if x.title not in titles]
    out = []
    for title in sorted(titles):
        taken = phone.now - dt.timedelta(days=rng.randint(3, 300), minutes=rng.randint(0, 900))
        out.append(app.add_photo(title, album, taken, rng.choice(PLACES[:4]), rng.random() < 0.4))
    return out


def titled(phone: SimPhone, title: str) -> list[Photo]:
    return [x for x in gallery(phone).state.photos if x.title.casefold() == title.casefold()]


def open_album(ui: OracleUI, album: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(album, rid="title")


def open_photo(ui: OracleUI, album: str, title: str) -> Iterator[Action]:
    yield from open_album(ui, album)
    yield from ui.tap(title, rid="title")


class GalleryFavoritePhoto(Task):
    template = 'Mark the photo "{photo}" in my {album} album as a favorite.'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_photo(rng)

    def setup(self, phone: SimPhone) -> None:
        place_photo(phone, self.params, favorite=False)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = titled(phone, self.params["photo"])
        return 1.0 if len(found) == 1 and found[0].favorite else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_photo(ui, self.params["album"], self.params["photo"])
        yield from ui.tap(desc="Favorite")


class GalleryUnfavoritePhoto(Task):
    template = 'Remove the photo "{photo}" from my favorites in Gallery.'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_photo(rng)

    def setup(self, phone: SimPhone) -> None:
        self.photo_id = place_photo(phone, self.params, favorite=True).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = titled(phone, self.params["photo"])
        return 1.0 if [(x.id, x.favorite) for x in found] == [(self.photo_id, False)] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Favorites")
        yield from ui.tap(self.params["photo"], rid="title")
        yield from ui.tap(desc="Unfavorite")


class GalleryDeletePhoto(Task):
    template = 'Delete the photo "{photo}" from my {album} album.'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_photo(rng)

    def setup(self, phone: SimPhone) -> None:
        target = place_photo(phone, self.params)
        #: Every other photo must survive.
        self.keep = {x.id for x in gallery(phone).state.photos} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {x.id for x in gallery(phone).state.photos} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_photo(ui, self.params["album"], self.params["photo"])
        yield from ui.tap(desc="Delete")
        yield from ui.dialog_button("Delete")


class GalleryMovePhoto(Task):
    template = 'Move the photo "{photo}" from {album} to my {target} album.'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        p = random_photo(rng)
        return {**p, "target": rng.choice([a for a in ALBUMS if a != p["album"]])}

    def setup(self, phone: SimPhone) -> None:
        self.photo_id = place_photo(phone, self.params).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = titled(phone, self.params["photo"])
        return 1.0 if [(x.id, x.album) for x in found] == [(self.photo_id, self.params["target"])] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_photo(ui, self.params["album"], self.params["photo"])
        yield from ui.tap(desc="Move to album")
        yield from ui.tap(self.params["target"], rid="title")


class GalleryCreateAlbum(Task):
    template = 'Create a new album called "{album}" in Gallery.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"album": rng.choice(NEW_ALBUMS) + rng.choice(("", " 2025", " with Sam"))}

    def setup(self, phone: SimPhone) -> None:
        app = gallery(phone)
        app.state.albums = [a for a in app.state.albums if a.casefold() != self.params["album"].casefold()]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        albums = [a.casefold() for a in gallery(phone).state.albums]
        return 1.0 if albums.count(self.params["album"].casefold()) == 1 else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="New album")
        yield from ui.type_into(None, self.params["album"], rid="input")
        yield from ui.dialog_button("Create")


class GalleryNewAlbumWithPhoto(Task):
    template = 'Create an album "{target}" and move the photo "{photo}" from {album} into it.'
    app_names = (APP,)
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_photo(rng), "target": rng.choice(NEW_ALBUMS)}

    def setup(self, phone: SimPhone) -> None:
        app = gallery(phone)
        app.state.albums = [a for a in app.state.albums if a.casefold() != self.params["target"].casefold()]
        self.photo_id = place_photo(phone, self.params).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = titled(phone, self.params["photo"])
        return 1.0 if [(x.id, x.album) for x in found] == [(self.photo_id, self.params["target"])] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="New album")
        yield from ui.type_into(None, self.params["target"], rid="input")
        yield from ui.dialog_button("Create")
        yield from ui.tap(self.params["album"], rid="title")
        yield from ui.tap(self.params["photo"], rid="title")
        yield from ui.tap(desc="Move to album")
        yield from ui.tap(self.params["target"], rid="title")


class GalleryReachAlbum(Task):
    template = "{verb} my {album} album in Gallery."
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "album": rng.choice(ALBUMS + NEW_ALBUMS)}

    def setup(self, phone: SimPhone) -> None:
        app = gallery(phone)
        if self.params["album"] not in app.state.albums:
            app.state.albums.append(self.params["album"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "album", album=self.params["album"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_album(ui, self.params["album"])


class GalleryReachPhoto(Task):
    template = '{verb} the photo "{photo}" in my {album} album.'
    app_names = (APP,)
    complexity = 0.8
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_photo(rng)}

    def setup(self, phone: SimPhone) -> None:
        self.photo_id = place_photo(phone, self.params).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "photo", id=self.photo_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_photo(ui, self.params["album"], self.params["photo"])


class GalleryAlbumCountQuestion(TypedQuestion):
    template = "How many photos are in my {album} album?"
    app_names = (APP,)
    complexity = 0.5
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"album": rng.choice(ALBUMS + NEW_ALBUMS[:4]), "count": rng.randint(2, 9)}

    def setup(self, phone: SimPhone) -> None:
        fill_album(phone, self.params["album"], self.rng(), self.params["count"])

    def expected_answer(self) -> str:
        return str(self.params["count"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        row = ui.row_of(ui.require(self.params["album"], rid="title"), rid="album_item")
        summary = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary"))
        yield ui.answer(summary.split()[0])


class GalleryPhotoDateQuestion(TypedQuestion):
    template = 'On what date did I take the photo "{photo}" in my {album} album?'
    app_names = (APP,)
    complexity = 0.8
    match = "date"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_photo(rng)

    def setup(self, phone: SimPhone) -> None:
        self.taken = place_photo(phone, self.params).taken

    def expected_answer(self) -> str:
        return format_date(self.taken)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_album(ui, self.params["album"])
        el = yield from ui.scroll_to(self.params["photo"], rid="title")
        yield ui.answer(visible_rows(ui, "photo_item")[el.text])


class GalleryPlaceCountQuestion(TypedQuestion):
    template = "How many photos in my {album} album were taken in {place}?"
    app_names = (APP,)
    complexity = 1.5
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"album": rng.choice(ALBUMS), "place": rng.choice(PLACES[:4]), "count": rng.randint(3, 5)}

    def setup(self, phone: SimPhone) -> None:
        photos = fill_album(phone, self.params["album"], self.rng(), self.params["count"])
        self.matching = sum(x.place == self.params["place"] for x in photos)

    def expected_answer(self) -> str:
        return str(self.matching)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_album(ui, self.params["album"])
        titles = list(visible_rows(ui, "photo_item"))
        count = 0
        for title in titles:
            yield from ui.tap(title, rid="title")
            count += row_value(ui, "photo_place") == self.params["place"]
            yield from ui.tap(desc="Navigate up")
        yield ui.answer(str(count))


class GalleryFavoritesQuestion(TypedQuestion):
    template = "Which photos in my {album} album are marked as favorites?"
    app_names = (APP,)
    complexity = 0.8
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"album": rng.choice(ALBUMS + NEW_ALBUMS[:4]), "count": rng.randint(3, 6)}

    def setup(self, phone: SimPhone) -> None:
        photos = fill_album(phone, self.params["album"], self.rng(), self.params["count"])
        if not any(x.favorite for x in photos):  # the answer is never an empty list
            photos[0].favorite = True
        self.favorites = sorted(x.title for x in photos if x.favorite)

    def expected_answer(self) -> str:
        return ", ".join(self.favorites)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_album(ui, self.params["album"])
        favorites: set[str] = set()

        def read() -> None:
            for row in ui.find_all(rid="photo_item"):
                parts = ui.children(row)
                if any(el.content_desc == "Favorite" for el in parts):
                    favorites.update(el.text for el in parts if el.resource_id.endswith("title"))

        read()
        for action in folder_rows(ui):
            yield action
            read()
        yield ui.answer(", ".join(sorted(favorites)))


# -- across apps ---------------------------------------------------------------------------------
class GallerySharePhoto(Task):
    template = 'Share the photo "{photo}" from my {album} album with {name} in Messages.'
    app_names = (APP, "Messages")
    footprint = TEXT_SENT
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_photo(rng), **random_person(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        place_photo(phone, p)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if sent(phone, share_text(self.params["photo"]), address=self.params["name"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_photo(ui, self.params["album"], self.params["photo"])
        yield from ui.tap(desc="Share")
        yield from ui.type_into(None, self.params["name"], rid="input")
        yield from ui.dialog_button("Send")
        yield from ui.tap(desc="Send SMS")


class GalleryAlbumCountToNote(Task):
    template = 'Create a note titled "{title}" that says how many photos are in my {album} album.'
    app_names = (APP, "Notes")
    footprint = NOTE_WRITTEN
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "album": rng.choice(ALBUMS + NEW_ALBUMS[:4]),
            "count": rng.randint(2, 9),
            "title": rng.choice(("Photo count", "Album size", "Gallery stats", "For the slideshow")),
        }

    def setup(self, phone: SimPhone) -> None:
        notes = notes_app(phone)
        notes.state.notes = [
            n for n in notes.state.notes if n.title.casefold() != self.params["title"].casefold()
        ]
        fill_album(phone, self.params["album"], self.rng(), self.params["count"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        want = str(self.params["count"])
        ok = [mentions_number(n.body, want) for n in note_titled(phone, self.params["title"])]
        return 1.0 if ok == [True] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        row = ui.row_of((yield from ui.scroll_to(self.params["album"], rid="title")), rid="album_item")
        count = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary")).split()[0]
        yield ui.open_app("Notes")
        yield from ui.tap(desc="New note")
        yield from ui.type_into(None, self.params["title"], rid="note_title")
        yield from ui.type_into(None, f"{count} photos", rid="note_body")
        yield from ui.tap(desc="Save")


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    GalleryFavoritePhoto,
    GalleryUnfavoritePhoto,
    GalleryDeletePhoto,
    GalleryMovePhoto,
    GalleryCreateAlbum,
    GalleryNewAlbumWithPhoto,
    GalleryReachAlbum,
    GalleryReachPhoto,
    GalleryAlbumCountQuestion,
    GalleryPhotoDateQuestion,
    GalleryPlaceCountQuestion,
    GalleryFavoritesQuestion,
    GallerySharePhoto,
    GalleryAlbumCountToNote,
)
