"""Music (``com.simphone.music``, label ``Music``): a song library, playlists and a player.

State — :class:`MusicState`:
    ``songs``: list of :class:`Song` (``id``, ``title``, ``artist``, ``album``, ``seconds``,
    ``liked``); ``playlists``: list of :class:`Playlist` (``name``, ``song_ids`` in order);
    the player: ``now_playing`` (a song id or None), ``playing``, ``queue`` (song ids),
    ``shuffle``, ``repeat`` (``off`` | ``all`` | ``one``); ``next_id``. Helpers:
    :meth:`MusicApp.add_song`, :meth:`MusicApp.playlist`, :meth:`MusicApp.play`.

Screens:
    * ``main`` "Music": tabs "Songs", "Artists", "Playlists". Songs: EditText "Search songs"
      (resource-id ``search_box``) and the songs by title (``song_item``; title = song title,
      summary = "artist · album"; a trailing "More options" button opens a menu "Play", "Add to
      playlist", "Like"/"Unlike"). Artists: one row per artist (``artist_item``). Playlists: one
      row per playlist (``playlist_item``, summary "N songs"), FAB "New playlist" (dialog
      "New playlist", EditText ``input``, button "Create"). A mini player (``mini_player``,
      content-desc "Now playing TITLE") opens the player while a song is loaded.
    * ``artist`` / ``playlist`` (title = the name): their songs (``song_item`` rows with the same
      "More options" menu; in a playlist it also has "Remove from playlist"); a playlist page
      has a "Play" button (``play_all``).
    * ``player`` "Now playing": ``song_title``, ``song_artist``; buttons "Previous", "Play" /
      "Pause", "Next", "Shuffle on"/"Shuffle off" (a checkable toggle), "Repeat off" /
      "Repeat all" / "Repeat one" (each tap moves to the next mode), "Like"/"Unlike" and
      "Add to playlist".
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

REPEAT_MODES = ("off", "all", "one")
_SEED_SONGS = (
    ("Harbor Lights", "The Wandering Owls", "Night Ferry", 214),
    ("Paper Moons", "The Wandering Owls", "Night Ferry", 187),
    ("Slow Orbit", "Mira Castell", "Satellites", 242),
    ("Glass Garden", "Mira Castell", "Satellites", 199),
    ("Copper Sky", "Dune Radio", "Mirage", 226),
    ("Northbound", "Dune Radio", "Mirage", 251),
    ("Lanterns", "Ivo Brandt", "Small Hours", 176),
)
_SEED_PLAYLISTS = (("Morning run", (5, 6, 1)), ("Chill", (3, 4)))


@dataclass
class Song:
    id: int
    title: str
    artist: str
    album: str = ""
    seconds: int = 200
    liked: bool = False


@dataclass
class Playlist:
    name: str
    song_ids: list[int] = field(default_factory=list)


@dataclass
class MusicState:
    songs: list[Song] = field(default_factory=list)
    playlists: list[Playlist] = field(default_factory=list)
    now_playing: int | None = None
    playing: bool = False
    queue: list[int] = field(default_factory=list)
    shuffle: bool = False
    repeat: str = "off"
    next_id: int = 1


class MusicApp(App):
    package = "com.simphone.music"
    label = "Music"
    activity = "com.simphone.music.LibraryActivity"

    def initial_state(self, rng: random.Random) -> MusicState:
        state = MusicState()
        for title, artist, album, seconds in _SEED_SONGS:
            state.songs.append(Song(state.next_id, title, artist, album, seconds, rng.random() < 0.2))
            state.next_id += 1
        state.playlists = [Playlist(name, list(ids)) for name, ids in _SEED_PLAYLISTS]
        return state

    # -- helpers --------------------------------------------------------------------------------

    def add_song(self, title: str, artist: str, album: str = "", seconds: int = 200) -> Song:
        song = Song(self.state.next_id, title, artist, album, seconds)
        self.state.next_id += 1
        self.state.songs.append(song)
        return song

    def song(self, song_id: object) -> Song | None:
        return next((s for s in self.state.songs if s.id == song_id), None)

    def playlist(self, name: str) -> Playlist | None:
        return next((p for p in self.state.playlists if p.name.casefold() == name.strip().casefold()), None)

    def play(self, song_id: int, queue: list[int] | None = None) -> None:
        """Load ``song_id`` (with ``queue`` as what plays next) and start playing."""
        self.state.now_playing, self.state.playing = song_id, True
        self.state.queue = list(queue) if queue else [song_id]

    def activity_name(self) -> str:
        return "com.simphone.music.PlayerActivity" if self.screen.name == "player" else self.activity

    def handle_back(self) -> bool:
        return self.clear_search()

    # -- screens --------------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name, params = self.screen.name, self.screen.params
        if name == "player" and self.song(self.state.now_playing) is not None:
            return self._player(ui)
        if name == "playlist" and self.playlist(params.get("title", "")) is not None:
            return self._songs_page(ui, params["title"], playlist=True)
        if name == "artist" and any(s.artist == params.get("title") for s in self.state.songs):
            return self._songs_page(ui, params["title"], playlist=False)
        self.pop_to_root()
        return self._main(ui)

    def _song_row(self, ui: UI, song: Song, playlist: str | None = None) -> View:
        more = ui.icon_button("more", "More options", self._menu(song.id, playlist), rid="more")
        item = ui.list_item(
            song.title,
            f"{song.artist} · {song.album}" if song.album else song.artist,
            self._play_from(song.id, None),
            leading=ui.avatar(song.title[:1], (171, 71, 188)),
            trailing=more,
            rid="song_item",
            desc=song.title,
            selected=song.id == self.state.now_playing,
        )
        return item

    def _play_from(self, song_id: int, queue: list[int] | None) -> Callable[[], None]:
        def run() -> None:
            self.play(song_id, queue)
            self.push("player")

        return run

    def _menu(self, song_id: int, playlist: str | None) -> Callable[[], None]:
        def run() -> None:
            song = self.song(song_id)
            if song is None:
                return
            options = ["Play", "Add to playlist", "Unlike" if song.liked else "Like"]
            if playlist is not None:
                options.append("Remove from playlist")

            def pick(option: str) -> None:
                if option == "Play":
                    self._play_from(song_id, None)()
                elif option == "Add to playlist":
                    self._ask_playlist(song_id)
                elif option == "Remove from playlist":
                    target = self.playlist(playlist or "")
                    if target is not None and song_id in target.song_ids:
                        target.song_ids.remove(song_id)
                        self.toast(f"Removed from {target.name}")
                else:
                    self._toggle_like(song_id)

            self.show(dialogs.choice(self, song.title, options, None, pick))

        return run

    def _toggle_like(self, song_id: object) -> None:
        song = self.song(song_id)
        if song is not None:
            song.liked = not song.liked
            self.toast("Added to Liked songs" if song.liked else "Removed from Liked songs")

    def _ask_playlist(self, song_id: object) -> None:
        def add(name: str) -> None:
            target = self.playlist(name)
            if target is None:
                return
            if song_id in target.song_ids:
                self.toast(f"Already in {target.name}")
            elif isinstance(song_id, int):
                target.song_ids.append(song_id)
                self.toast(f"Added to {target.name}")

        names = [p.name for p in self.state.playlists]
        self.show(dialogs.choice(self, "Add to playlist", names, None, add))

    def _mini_player(self, ui: UI) -> View | None:
        song = self.song(self.state.now_playing)
        if song is None:
            return None
        bar = ui.list_item(
            song.title,
            song.artist,
            lambda: self.push("player"),
            leading=ui.icon("chevron_right" if not self.state.playing else "ring", ui.t.primary),
            rid="mini_player",
            desc=f"Now playing {song.title}",
        )
        bar.bg = ui.t.primary_soft
        return bar

    def _main(self, ui: UI) -> View:
        tab = self.screen.params.get("tab", "Songs")

        def pick(name: str) -> Callable[[], None]:
            return lambda: self.screen.params.__setitem__("tab", name)

        tabs = ui.tabs([(name, name == tab, pick(name)) for name in ("Songs", "Artists", "Playlists")])
        body: list[View | None] = []
        fab = None
        if tab == "Artists":
            for artist in sorted({s.artist for s in self.state.songs}, key=str.lower):
                count = sum(s.artist == artist for s in self.state.songs)
                body.append(
                    ui.list_item(
                        artist,
                        f"{count} song{'s' if count != 1 else ''}",
                        self._open("artist", artist),
                        leading=ui.avatar(artist[:1], (3, 155, 229)),
                        rid="artist_item",
                        desc=artist,
                    )
                )
        elif tab == "Playlists":
            for p in self.state.playlists:
                n = len(p.song_ids)
                body.append(
                    ui.list_item(
                        p.name,
                        f"{n} song{'s' if n != 1 else ''}",
                        self._open("playlist", p.name),
                        leading=ui.avatar(p.name[:1], (255, 112, 67)),
                        rid="playlist_item",
                        desc=p.name,
                    )
                )
            if not self.state.playlists:
                body.append(ui.empty("No playlists yet"))
            fab = ui.fab("New playlist", self._ask_new_playlist)
        else:
            query = self.field("search").strip().lower()
            search = ui.edit("search", "Search songs", rid="search_box")
            search.radius = ui.dp(28)
            body.append(ui.col(search, pad=(16, 4, 16, 8)))
            songs = sorted(self.state.songs, key=lambda s: s.title.lower())
            if query:
                songs = [s for s in songs if query in s.title.lower() or query in s.artist.lower()]
            body += [self._song_row(ui, s) for s in songs]
            if not songs:
                body.append(ui.empty("No matching songs"))
        header = ui.col(tabs)
        return ui.page(
            "Music", body, back=False, header=header, footer=self._mini_player(ui), fab=fab, scroll_key=tab
        )

    def _open(self, page: str, name: str) -> Callable[[], None]:
        def run() -> None:
            self.push(page, title=name)

        return run

    def _ask_new_playlist(self) -> None:
        def create(name: str) -> None:
            name = name.strip()
            if not name:
                self.toast("Enter a playlist name")
            elif self.playlist(name) is not None:
                self.toast(f"A playlist named {name} already exists")
            else:
                self.state.playlists.append(Playlist(name))
                self.toast("Playlist created")

        self.show(dialogs.prompt(self, "New playlist", "Playlist name", "", create, ok_label="Create"))

    def _songs_page(self, ui: UI, name: str, *, playlist: bool) -> View:
        if playlist:
            target = self.playlist(name)
            ids = list(target.song_ids) if target else []
            songs = [s for s in (self.song(i) for i in ids) if s is not None]
        else:
            songs = sorted((s for s in self.state.songs if s.artist == name), key=lambda s: s.title.lower())
        body: list[View | None] = [self._song_row(ui, s, name if playlist else None) for s in songs]
        if not songs:
            body.append(ui.empty("This playlist is empty" if playlist else "No songs"))
        actions = []
        if playlist and songs:
            ids = [s.id for s in songs]
            actions.append(ui.button("Play", self._play_from(ids[0], ids), rid="play_all", style="tonal"))
        return ui.page(name, body, actions=actions, footer=self._mini_player(ui), scroll_key="songs")

    def _player(self, ui: UI) -> View:
        s = self.state
        song = self.song(s.now_playing)
        assert song is not None  # build() checked

        def step(delta: int) -> Callable[[], None]:
            def run() -> None:
                queue = s.queue or [song.id]
                at = queue.index(song.id) if song.id in queue else 0
                s.now_playing = queue[(at + delta) % len(queue)]

            return run

        def toggle_play() -> None:
            s.playing = not s.playing

        def toggle_shuffle() -> None:
            s.shuffle = not s.shuffle

        def cycle_repeat() -> None:
            s.repeat = REPEAT_MODES[(REPEAT_MODES.index(s.repeat) + 1) % len(REPEAT_MODES)]

        art = View(
            cls="android.widget.ImageView",
            desc=f"{song.album or song.title} cover",
            rid="album_art",
            h=ui.dp(280),
            bg=(120, 70, 160),
        )
        info = ui.col(
            ui.text(song.title, 24, bold=True, rid="song_title", align="center"),
            ui.text(song.artist, 16, muted=True, rid="song_artist", align="center"),
            gap=4,
            pad=(16, 16, 16, 8),
        )
        shuffle = ui.icon_button(
            "chevron_right", "Shuffle on" if s.shuffle else "Shuffle off", toggle_shuffle, rid="shuffle"
        )
        shuffle.checkable, shuffle.checked = True, s.shuffle
        if s.shuffle:
            shuffle.bg = ui.t.primary_soft
        controls = ui.row(
            shuffle,
            ui.icon_button("chevron_left", "Previous", step(-1), rid="previous"),
            ui.icon_button(
                "ring" if s.playing else "circle",
                "Pause" if s.playing else "Play",
                toggle_play,
                rid="play_pause",
                size=64,
                color=ui.t.on_primary,
                bg=ui.t.primary,
            ),
            ui.icon_button("chevron_right", "Next", step(1), rid="next"),
            ui.icon_button("more", f"Repeat {s.repeat}", cycle_repeat, rid="repeat"),
            gap=8,
            pad=(16, 8, 16, 8),
            justify="center",
        )
        extras = ui.row(
            ui.button(
                "Unlike" if song.liked else "Like",
                lambda: self._toggle_like(song.id),
                rid="like",
                style="tonal",
            ),
            ui.button(
                "Add to playlist", lambda: self._ask_playlist(song.id), rid="add_to_playlist", style="tonal"
            ),
            gap=8,
            pad=(16, 8, 16, 8),
            justify="center",
        )
        extras.h = ui.dp(64)
        return ui.page("Now playing", [art, info, controls, extras], scroll_key="player")
