"""Music tasks: play a song or a playlist, make and edit playlists, like songs, set shuffle and
repeat; reach an artist or a playlist; questions on artists and playlists.

State and screens are documented in :mod:`agent_runtime.simphone.apps.music`. Tasks add songs
of their own (titles not among the seeded ones), so a goal names exactly one song.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.music import MusicApp, Playlist, Song
from agent_runtime.simphone.tasks.base import QuestionTask, Task, normalise_answer
from agent_runtime.simphone.tasks.common import REACH_VERBS, TEXT_SENT, showing
from agent_runtime.simphone.tasks.contacts import place_contact, random_person
from agent_runtime.simphone.tasks.files import visible_rows
from agent_runtime.simphone.tasks.messages import messages, send_text, start_chat
from agent_runtime.simphone.tasks.notes import open_note, place_note
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.music"
APP = "Music"
#: Songs tasks add: title -> (artist, album).
SONGS = {
    "Velvet Static": ("Nora Quill", "Afterglow"),
    "Tidal Clock": ("Nora Quill", "Afterglow"),
    "Amber Lane": ("The Lowland Choir", "Fieldnotes"),
    "Silver Thread": ("The Lowland Choir", "Fieldnotes"),
    "Paper Planes at Noon": ("Kenji Arai", "Weekday"),
    "Blue Hour": ("Kenji Arai", "Weekday"),
    "Salt Road": ("Odessa Vale", "Crossings"),
    "Midnight Tram": ("Odessa Vale", "Crossings"),
    "Quiet Engines": ("Ruben Sol", "Machines"),
    "Falling Upward": ("Ruben Sol", "Machines"),
}
#: Singles :class:`MusicArtistSongsQuestion` adds to an artist, so the answer varies.
EXTRA_TITLES = ("Open Window", "Lowercase Love", "Parallel Lines", "Static Bloom", "Wild Honey", "Coastline")
PLAYLISTS = ("Road trip", "Focus", "Workout", "Sunday morning", "Dinner party", "Sleep", "Study beats")


def music(phone: SimPhone) -> MusicApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, MusicApp)
    return app


def add_library(phone: SimPhone) -> dict[str, Song]:
    """Add every song of :data:`SONGS` (replacing same-titled ones); title -> song."""
    app = music(phone)
    app.state.songs = [s for s in app.state.songs if s.title not in SONGS]
    return {
        title: app.add_song(title, artist, album, 150 + 7 * i)
        for i, (title, (artist, album)) in enumerate(SONGS.items())
    }


def place_playlist(phone: SimPhone, name: str, song_ids: list[int]) -> Playlist:
    """Make this the only playlist called ``name``."""
    app = music(phone)
    app.state.playlists = [p for p in app.state.playlists if p.name.casefold() != name.casefold()]
    playlist = Playlist(name, list(song_ids))
    app.state.playlists.append(playlist)
    return playlist


def random_song(rng: random.Random) -> dict[str, Any]:
    title = rng.choice(sorted(SONGS))
    return {"song": title, "artist": SONGS[title][0]}


def find_song(ui: OracleUI, title: str) -> Iterator[Action]:
    """Open Music on the Songs tab and search for ``title``."""
    yield ui.open_app(APP)
    yield from ui.tap("Songs")
    yield from ui.type_into(None, title, rid="search_box")


def song_menu(ui: OracleUI, title: str, option: str) -> Iterator[Action]:
    """Pick ``option`` in the "More options" menu of the song row showing ``title``."""
    row = ui.row_of((yield from ui.scroll_to(title, rid="title")), rid="song_item")
    more = next((el for el in ui.children(row) if el.content_desc == "More options"), None)
    if more is None:
        raise ui.error(f"the row of {title!r} has no More options button")
    yield ui.click(more)
    yield from ui.tap(option, rid="title")


def open_playlist(ui: OracleUI, name: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap("Playlists")
    yield from ui.tap(name, rid="title")


def open_player(ui: OracleUI) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(rid="mini_player")


class _WithLibrary(Task):
    """Templates over :data:`SONGS` (set up by :func:`add_library`), with a playlist or two."""

    def setup(self, phone: SimPhone) -> None:
        self.songs = add_library(phone)


class MusicPlaySong(_WithLibrary):
    template = 'Play "{song}" by {artist} in Music.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_song(rng)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        s = music(phone).state
        return 1.0 if s.now_playing == self.songs[self.params["song"]].id and s.playing else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from find_song(ui, self.params["song"])
        yield from ui.tap(self.params["song"], rid="title")


class MusicCreatePlaylist(Task):
    template = 'Create a playlist named "{playlist}" in Music.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"playlist": rng.choice(PLAYLISTS) + rng.choice(("", " mix", " 2025", " vibes"))}

    def setup(self, phone: SimPhone) -> None:
        app = music(phone)
        name = self.params["playlist"].casefold()
        app.state.playlists = [p for p in app.state.playlists if p.name.casefold() != name]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = [
            p for p in music(phone).state.playlists if p.name.casefold() == self.params["playlist"].casefold()
        ]
        return 1.0 if len(found) == 1 and not found[0].song_ids else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Playlists")
        yield from ui.tap(desc="New playlist")
        yield from ui.type_into(None, self.params["playlist"], rid="input")
        yield from ui.dialog_button("Create")


class MusicAddToPlaylist(_WithLibrary):
    template = 'Add the song "{song}" to my playlist "{playlist}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_song(rng), "playlist": rng.choice(PLAYLISTS)}

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        others = [s.id for t, s in sorted(self.songs.items()) if t != self.params["song"]]
        #: The playlist before: the song must be appended, nothing else changed.
        self.before = self.rng().sample(others, 2)
        place_playlist(phone, self.params["playlist"], self.before)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        playlist = music(phone).playlist(self.params["playlist"])
        want = [*self.before, self.songs[self.params["song"]].id]
        return 1.0 if playlist is not None and playlist.song_ids == want else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from find_song(ui, self.params["song"])
        yield from song_menu(ui, self.params["song"], "Add to playlist")
        yield from ui.tap(self.params["playlist"], rid="title")


class MusicRemoveFromPlaylist(_WithLibrary):
    template = 'Remove "{song}" from my playlist "{playlist}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_song(rng), "playlist": rng.choice(PLAYLISTS)}

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        others = [s.id for t, s in sorted(self.songs.items()) if t != self.params["song"]]
        self.keep = self.rng().sample(others, 3)
        ids = [*self.keep[:2], self.songs[self.params["song"]].id, self.keep[2]]
        place_playlist(phone, self.params["playlist"], ids)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        playlist = music(phone).playlist(self.params["playlist"])
        return 1.0 if playlist is not None and playlist.song_ids == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_playlist(ui, self.params["playlist"])
        yield from song_menu(ui, self.params["song"], "Remove from playlist")


class MusicLikeSong(_WithLibrary):
    template = 'Like the song "{song}" in Music.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_song(rng)

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        #: Liked songs before: the target joins them, no other song changes.
        self.liked = {s.id for s in music(phone).state.songs if s.liked}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        liked = {s.id for s in music(phone).state.songs if s.liked}
        return 1.0 if liked == self.liked | {self.songs[self.params["song"]].id} else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from find_song(ui, self.params["song"])
        yield from song_menu(ui, self.params["song"], "Like")


class _Playing(_WithLibrary):
    """Templates on the player: a song is loaded and playing when the episode starts."""

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        s = music(phone).state
        first = self.songs[self.params["song"]]
        music(phone).play(first.id, [x.id for x in self.songs.values()])
        s.shuffle, s.repeat = not self.params.get("shuffle", True), self.params.get("start_repeat", "off")


class MusicSetShuffle(_Playing):
    template = "Turn shuffle {state} in the Music player."
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        state = rng.choice(("on", "off"))
        return {"state": state, "shuffle": state == "on", **random_song(rng)}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if music(phone).state.shuffle == self.params["shuffle"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_player(ui)
        yield from ui.tap(rid="shuffle")


class MusicSetRepeat(_Playing):
    template = 'Set repeat to "{mode}" in the Music player.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        mode = rng.choice(("all", "one", "off"))
        start = rng.choice([m for m in ("off", "all", "one") if m != mode])
        return {"mode": mode, "start_repeat": start, **random_song(rng)}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if music(phone).state.repeat == self.params["mode"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_player(ui)
        for _ in range(3):
            if ui.find(desc=f"Repeat {self.params['mode']}") is not None:
                return
            yield from ui.tap(rid="repeat")
        raise ui.error(f"repeat never showed {self.params['mode']!r}")


class MusicPlayPlaylist(_WithLibrary):
    template = 'Play my playlist "{playlist}" from the start.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"playlist": rng.choice(PLAYLISTS), "size": rng.randint(2, 5)}

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        self.ids = [
            s.id
            for s in self.rng().sample(sorted(self.songs.values(), key=lambda s: s.id), self.params["size"])
        ]
        place_playlist(phone, self.params["playlist"], self.ids)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        s = music(phone).state
        return 1.0 if s.playing and s.now_playing == self.ids[0] and s.queue == self.ids else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_playlist(ui, self.params["playlist"])
        yield from ui.tap(rid="play_all")


class MusicReachArtist(_WithLibrary):
    template = "{verb} the page of the artist {artist} in Music."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "artist": random_song(rng)["artist"]}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "artist", title=self.params["artist"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Artists")
        yield from ui.tap(self.params["artist"], rid="title")


class MusicReachPlaylist(_WithLibrary):
    template = '{verb} my playlist "{playlist}".'
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "playlist": rng.choice(PLAYLISTS)}

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        place_playlist(phone, self.params["playlist"], [s.id for s in list(self.songs.values())[:3]])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "playlist", title=self.params["playlist"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_playlist(ui, self.params["playlist"])


class MusicArtistQuestion(QuestionTask):
    template = 'Who sings "{song}"?'
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_song(rng)

    def setup(self, phone: SimPhone) -> None:
        add_library(phone)

    def expected_answer(self) -> str:
        return str(self.params["artist"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from find_song(ui, self.params["song"])
        row = ui.row_of(ui.require(self.params["song"], rid="title"), rid="song_item")
        summary = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary"))
        yield ui.answer(summary.split(" · ")[0])


class MusicPlaylistCountQuestion(TypedQuestion):
    template = 'How many songs are in my playlist "{playlist}"?'
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"playlist": rng.choice(PLAYLISTS), "size": rng.randint(1, 9)}

    def setup(self, phone: SimPhone) -> None:
        songs = sorted(add_library(phone).values(), key=lambda s: s.id)
        place_playlist(
            phone, self.params["playlist"], [s.id for s in self.rng().sample(songs, self.params["size"])]
        )

    def expected_answer(self) -> str:
        return str(self.params["size"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Playlists")
        row = ui.row_of((yield from ui.scroll_to(self.params["playlist"], rid="title")), rid="playlist_item")
        summary = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary"))
        yield ui.answer(summary.split()[0])


class MusicArtistSongsQuestion(TypedQuestion):
    template = "Which songs by {artist} are in my Music library?"
    app_names = (APP,)
    complexity = 0.8
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        extra = sorted(rng.sample(EXTRA_TITLES, rng.randint(0, 2)))
        return {"artist": random_song(rng)["artist"], "extra": extra}

    def setup(self, phone: SimPhone) -> None:
        add_library(phone)
        app = music(phone)
        app.state.songs = [s for s in app.state.songs if s.title not in EXTRA_TITLES]
        for title in self.params["extra"]:
            app.add_song(title, self.params["artist"], "Singles")

    def expected_answer(self) -> str:
        ours = [t for t, (artist, _) in SONGS.items() if artist == self.params["artist"]]
        return ", ".join(sorted(ours + self.params["extra"]))

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Artists")
        yield from ui.tap(self.params["artist"], rid="title")
        yield ui.answer(", ".join(visible_rows(ui, "song_item")))


# -- across apps ---------------------------------------------------------------------------------
class MusicTextArtist(Task):
    template = 'Text {name} the name of the artist who sings "{song}".'
    app_names = (APP, "Messages")
    footprint = TEXT_SENT
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_song(rng), **random_person(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        add_library(phone)
        place_contact(phone, p["first"], p["last"], p["number"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        thread = messages(phone).thread_with(self.params["name"])
        artist = normalise_answer(self.params["artist"])
        ok = thread is not None and any(
            m.outgoing and artist in normalise_answer(m.text) for m in thread.messages
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from find_song(ui, self.params["song"])
        row = ui.row_of(ui.require(self.params["song"], rid="title"), rid="song_item")
        artist = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary")).split(" · ")[
            0
        ]
        yield from start_chat(ui, self.params["name"])
        yield from send_text(ui, artist)


class MusicPlaylistFromNote(_WithLibrary):
    template = 'Create a playlist "{playlist}" with the songs listed in my note "{title}".'
    app_names = (APP, "Notes")
    footprint = ("apps.music.playlists[*]",)
    complexity = 3.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "playlist": rng.choice(PLAYLISTS),
            "title": rng.choice(("Songs for the party", "Playlist ideas", "Tracks from Sam", "Gym songs")),
            "songs": rng.sample(sorted(SONGS), 2),
        }

    def setup(self, phone: SimPhone) -> None:
        super().setup(phone)
        app = music(phone)
        app.state.playlists = [
            p for p in app.state.playlists if p.name.casefold() != self.params["playlist"].casefold()
        ]
        place_note(phone, self.params["title"], "\n".join(self.params["songs"]))

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        playlist = music(phone).playlist(self.params["playlist"])
        want = sorted(self.songs[t].id for t in self.params["songs"])
        return 1.0 if playlist is not None and sorted(playlist.song_ids) == want else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])
        titles = [line.strip() for line in ui.require(rid="note_body").text.split("\n") if line.strip()]
        yield ui.open_app(APP)
        yield from ui.tap("Playlists")
        yield from ui.tap(desc="New playlist")
        yield from ui.type_into(None, self.params["playlist"], rid="input")
        yield from ui.dialog_button("Create")
        yield from ui.tap("Songs")
        for title in titles:
            yield from ui.type_into(None, title, rid="search_box")
            yield from song_menu(ui, title, "Add to playlist")
            yield from ui.tap(self.params["playlist"], rid="title")


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    MusicPlaySong,
    MusicCreatePlaylist,
    MusicAddToPlaylist,
    MusicRemoveFromPlaylist,
    MusicLikeSong,
    MusicSetShuffle,
    MusicSetRepeat,
    MusicPlayPlaylist,
    MusicReachArtist,
    MusicReachPlaylist,
    MusicArtistQuestion,
    MusicPlaylistCountQuestion,
    MusicArtistSongsQuestion,
    MusicTextArtist,
    MusicPlaylistFromNote,
)
