"""Gallery (``com.simphone.gallery``, label ``Gallery``): photos sorted into albums.

State — :class:`GalleryState`:
    ``albums``: album names in creation order; ``photos``: list of :class:`Photo` (``id``,
    ``title``, ``album``, ``taken`` virtual datetime, ``place``, ``favorite``); ``next_id``.
    Helpers: :meth:`GalleryApp.add_photo`, :meth:`GalleryApp.in_album`.

Screens:
    * ``main`` "Gallery": tabs "Albums" and "Favorites". Albums: one row per album
      (resource-id ``album_item``, summary "N photos"), FAB "New album" asks for a name (dialog
      "New album", EditText ``input``, button "Create"). Favorites: every favorite photo.
    * ``album`` (title = album name): its photos newest first (``photo_item``; title = photo
      title, summary = date taken "Mar 14, 2025"; a "Favorite" star on favorites); tap opens it.
    * ``photo`` (title = photo title): rows Date taken, Place, Album (resource-ids ``photo_date``,
      ``photo_place``, ``photo_album``; the value is the row's title); app-bar buttons
      "Favorite"/"Unfavorite", "Share" (dialog "Send via Messages", EditText ``input`` for a name
      or number, button "Send": Messages opens that conversation with "Photo: TITLE" ready to
      send), "Move to album" (a choice of albums) and "Delete" (confirm "Delete").
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.files import format_date, format_datetime
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

MESSAGES_PACKAGE = "com.android.messaging"
_SEED = (
    ("Camera", "Morning coffee", "Lisbon"),
    ("Camera", "Bike ride", "Porto"),
    ("Camera", "Street market", "Lisbon"),
    ("Holidays", "Sunset over the bay", "Nice"),
    ("Holidays", "Old town square", "Prague"),
    ("Family", "Grandma's cake", "Lyon"),
    ("Screenshots", "Boarding pass", "Lisbon"),
)


def share_text(title: str) -> str:
    """What a shared photo reads as in a text message."""
    return f"Photo: {title}"


@dataclass
class Photo:
    id: int
    title: str
    album: str
    taken: dt.datetime = dt.datetime(2025, 1, 1)
    place: str = ""
    favorite: bool = False


@dataclass
class GalleryState:
    albums: list[str] = field(default_factory=list)
    photos: list[Photo] = field(default_factory=list)
    next_id: int = 1


class GalleryApp(App):
    package = "com.simphone.gallery"
    label = "Gallery"
    activity = "com.simphone.gallery.AlbumsActivity"

    def initial_state(self, rng: random.Random) -> GalleryState:
        state = GalleryState()
        now = self.phone.now
        for album, title, place in _SEED:
            if album not in state.albums:
                state.albums.append(album)
            when = now - dt.timedelta(days=rng.randint(2, 200), minutes=rng.randint(0, 700))
            state.photos.append(Photo(state.next_id, title, album, when, place, rng.random() < 0.25))
            state.next_id += 1
        return state

    # -- helpers --------------------------------------------------------------------------------

    def add_photo(
        self, title: str, album: str, taken: dt.datetime, place: str = "", favorite: bool = False
    ) -> Photo:
        """Store a photo (creating its album if needed)."""
        if album not in self.state.albums:
            self.state.albums.append(album)
        photo = Photo(self.state.next_id, title, album, taken, place, favorite)
        self.state.next_id += 1
        self.state.photos.append(photo)
        return photo

    def in_album(self, album: str) -> list[Photo]:
        """The album's photos, newest first (as the album screen lists them)."""
        return sorted(
            (p for p in self.state.photos if p.album == album), key=lambda p: (-p.taken.timestamp(), p.id)
        )

    def _get(self, photo_id: object) -> Photo | None:
        return next((p for p in self.state.photos if p.id == photo_id), None)

    def activity_name(self) -> str:
        return "com.simphone.gallery.PhotoActivity" if self.screen.name == "photo" else self.activity

    # -- screens --------------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        if self.screen.name == "photo":
            photo = self._get(self.screen.params.get("id"))
            if photo is not None:
                return self._photo(ui, photo)
            self.pop()
        if self.screen.name == "album" and self.screen.params.get("album") in self.state.albums:
            return self._album(ui, self.screen.params["album"])
        self.pop_to_root()
        return self._main(ui)

    def _photo_row(self, ui: UI, photo: Photo) -> View:
        star = ui.icon("star", ui.t.primary, 18, desc="Favorite") if photo.favorite else None
        return ui.list_item(
            photo.title,
            format_date(photo.taken),
            lambda: self.push("photo", id=photo.id),
            leading=ui.avatar(photo.title[:1], (15, 157, 88), 48),
            trailing=star,
            rid="photo_item",
            desc=photo.title,
        )

    def _main(self, ui: UI) -> View:
        tab = self.screen.params.get("tab", "Albums")

        def pick(name: str) -> Callable[[], None]:
            return lambda: self.screen.params.__setitem__("tab", name)

        tabs = ui.tabs([(name, name == tab, pick(name)) for name in ("Albums", "Favorites")])
        body: list[View | None] = []
        if tab == "Favorites":
            favorites = sorted(
                (p for p in self.state.photos if p.favorite), key=lambda p: -p.taken.timestamp()
            )
            body += [self._photo_row(ui, p) for p in favorites]
            if not favorites:
                body.append(ui.empty("No favorites yet"))
            return ui.page("Gallery", body, back=False, header=tabs, scroll_key="favorites")
        for album in self.state.albums:
            count = len(self.in_album(album))
            body.append(
                ui.list_item(
                    album,
                    f"{count} photo{'s' if count != 1 else ''}",
                    self._open_album(album),
                    leading=ui.avatar(album[:1], (52, 168, 83), 48),
                    rid="album_item",
                    desc=album,
                )
            )
        fab = ui.fab("New album", self._ask_new_album)
        return ui.page("Gallery", body, back=False, header=tabs, fab=fab, scroll_key="albums")

    def _open_album(self, album: str) -> Callable[[], None]:
        def run() -> None:
            self.push("album", album=album)

        return run

    def _ask_new_album(self) -> None:
        def create(name: str) -> None:
            name = name.strip()
            if not name:
                self.toast("Enter an album name")
            elif name.casefold() in {a.casefold() for a in self.state.albums}:
                self.toast(f"An album named {name} already exists")
            else:
                self.state.albums.append(name)
                self.toast("Album created")

        self.show(dialogs.prompt(self, "New album", "Album name", "", create, ok_label="Create"))

    def _album(self, ui: UI, album: str) -> View:
        photos = self.in_album(album)
        body: list[View | None] = [self._photo_row(ui, p) for p in photos]
        if not photos:
            body.append(ui.empty("No photos in this album"))
        return ui.page(album, body, scroll_key="album")

    def _photo(self, ui: UI, photo: Photo) -> View:
        def favorite() -> None:
            photo.favorite = not photo.favorite
            self.toast("Added to favorites" if photo.favorite else "Removed from favorites")

        def share() -> None:
            def send(to: str) -> None:
                to = to.strip()
                if not to:
                    self.toast("Enter a name or phone number")
                    return
                messages = self.phone.app(MESSAGES_PACKAGE)
                self.phone.launch(MESSAGES_PACKAGE)
                messages.open_conversation(to)  # type: ignore[attr-defined]
                messages.screen.fields["message"] = share_text(photo.title)

            self.show(
                dialogs.prompt(self, "Send via Messages", "Name or phone number", "", send, ok_label="Send")
            )

        def move() -> None:
            def to(album: str) -> None:
                if album != photo.album:
                    photo.album = album
                    self.toast(f"Moved to {album}")

            self.show(dialogs.choice(self, "Move to album", list(self.state.albums), photo.album, to))

        def delete() -> None:
            def really() -> None:
                self.state.photos = [p for p in self.state.photos if p.id != photo.id]
                self.pop()
                self.toast("Photo deleted")

            self.show(
                dialogs.confirm(self, "Delete photo?", f"“{photo.title}” will be deleted.", "Delete", really)
            )

        when = format_datetime(photo.taken)
        rows = (
            ("Date taken", when, "photo_date"),
            ("Place", photo.place or "Unknown location", "photo_place"),
            ("Album", photo.album, "photo_album"),
        )
        picture = View(
            cls="android.widget.ImageView", desc=photo.title, rid="photo_view", h=ui.dp(280), bg=(52, 120, 90)
        )
        body: list[View | None] = [
            picture,
            *(ui.list_item(v, label, None, rid=rid) for label, v, rid in rows),
        ]
        actions = [
            ui.icon_button(
                "star" if photo.favorite else "star_outline",
                "Unfavorite" if photo.favorite else "Favorite",
                favorite,
                rid="favorite",
            ),
            ui.icon_button("send", "Share", share, rid="share"),
            ui.icon_button("chevron_right", "Move to album", move, rid="move"),
            ui.icon_button("delete", "Delete", delete, rid="delete"),
        ]
        return ui.page(photo.title, body, actions=actions, scroll_key="photo")
