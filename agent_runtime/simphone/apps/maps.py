"""Maps (``com.simphone.maps``, label ``Maps``).

State — :class:`MapsState`:
    ``places``: the places the map knows, list of :class:`Place` (``name``, ``address``,
    ``category``, ``km`` road distance from the current location); ``saved``: names of saved
    places, in the order they were saved; ``home`` and ``work``: addresses ("" when unset);
    ``traffic``: how much slower than free flow driving is today (1.0 = none); ``recent``:
    recent searches, newest first. Travel times come from :func:`minutes` (distance, mode and
    traffic). Helpers: :meth:`MapsApp.place`, :meth:`MapsApp.travel_minutes`.

Screens:
    * ``main`` "Maps": EditText "Search here" (``search_box``); with a query, matching places by
      name, category or address, nearest first (item ``place_item``: title = name, summary =
      ``category · km · address``). Without one: items "Home" and "Work" (``home``/``work``;
      summary = the address or "Set once and go"; tap shows driving directions once set) each
      with an ImageButton "Edit home"/"Edit work" (prompt dialog "Set home address"), an item
      "Saved" (opens ``saved``) and the recent searches.
    * ``place`` (title = name): address (``address``), category, distance; buttons
      "Directions", "Save"/"Saved" (``save``; tap again to unsave), "Set as home", "Set as work".
    * ``directions`` "Directions": from "Your location" to the place (``destination``); mode
      chips "Drive", "Transit", "Walk", "Bike" (``mode_chip``); the selected mode's time
      (``duration``, e.g. ``14 min``) and distance (``distance``).
    * ``saved`` "Saved": one item per saved place (tap opens it).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

#: Mode key -> chip label.
MODES = {"drive": "Drive", "transit": "Transit", "walk": "Walk", "bike": "Bike"}
#: Minutes per km and fixed minutes per mode (driving's per-km part scales with traffic).
_PACE = {"drive": (1.6, 3), "transit": (3.2, 6), "walk": (12.0, 0), "bike": (4.0, 1)}

CATALOGUE = (
    ("Cafe Luna", "12 Harbor Street", "Cafe", 1.2),
    ("Bean There", "48 Elm Avenue", "Cafe", 3.4),
    ("The Daily Grind", "7 Market Square", "Cafe", 5.1),
    ("City Library", "200 Main Street", "Library", 2.3),
    ("Riverside Park", "1 River Road", "Park", 4.0),
    ("Hilltop Park", "90 Summit Drive", "Park", 8.7),
    ("Central Station", "5 Station Plaza", "Train station", 3.1),
    ("Main Street Clinic", "310 Main Street", "Clinic", 2.8),
    ("St. Mary's Hospital", "77 Oak Boulevard", "Hospital", 6.5),
    ("Sunrise Bakery", "23 Baker Lane", "Bakery", 1.9),
    ("Golden Dragon", "61 Lantern Street", "Restaurant", 4.6),
    ("Trattoria Roma", "15 Vine Street", "Restaurant", 2.2),
    ("Sakura Sushi", "102 Cherry Lane", "Restaurant", 7.3),
    ("FreshMart", "400 Commerce Way", "Supermarket", 3.8),
    ("Green Grocer", "9 Orchard Road", "Supermarket", 1.5),
    ("Northside Gym", "55 Fitness Avenue", "Gym", 5.9),
    ("Town Hall", "1 Civic Center", "Government office", 2.6),
    ("Museum of Art", "250 Gallery Row", "Museum", 4.9),
    ("Lakeside Cinema", "33 Shore Drive", "Cinema", 6.1),
    ("Airport Terminal 1", "1 Airport Road", "Airport", 18.4),
)


@dataclass
class Place:
    name: str
    address: str
    category: str
    km: float


@dataclass
class MapsState:
    places: list[Place] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    home: str = ""
    work: str = ""
    traffic: float = 1.0
    recent: list[str] = field(default_factory=list)


def minutes(km: float, mode: str, traffic: float = 1.0) -> int:
    """Travel time in whole minutes (at least 1).

    >>> minutes(5.0, "drive", 1.5), minutes(5.0, "walk")
    (15, 60)
    """
    per_km, fixed = _PACE[mode]
    scale = traffic if mode == "drive" else 1.0
    return max(1, round(km * per_km * scale + fixed))


class MapsApp(App):
    package = "com.simphone.maps"
    label = "Maps"
    activity = "com.simphone.maps.MapsActivity"
    #: Searching remembers the query.
    viewing_changes = ("recent",)

    def initial_state(self, rng: random.Random) -> MapsState:
        state = MapsState(places=[Place(*row) for row in CATALOGUE])
        state.saved = [p.name for p in rng.sample(state.places, 3)]
        state.traffic = rng.choice((1.0, 1.2, 1.5))
        return state

    # -- helpers for tasks and other apps ------------------------------------------------------

    def place(self, name: str) -> Place | None:
        """A place by name or address (case-insensitive)."""
        wanted = name.strip().casefold()
        return next(
            (p for p in self.state.places if wanted in (p.name.casefold(), p.address.casefold())), None
        )

    def travel_minutes(self, place: Place, mode: str) -> int:
        return minutes(place.km, mode, self.state.traffic)

    def activity_name(self) -> str:
        if self.screen.name == "directions":
            return "com.simphone.maps.DirectionsActivity"
        return self.activity

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name == "saved":
            return self._saved(ui)
        if name in ("place", "directions"):
            place = self.place(str(self.screen.params.get("place", "")))
            if place is not None:
                return self._place(ui, place) if name == "place" else self._directions(ui, place)
            self.pop_to_root()
        return self._main(ui)

    def _main(self, ui: UI) -> View:
        query = self.field("search").strip().lower()
        search = ui.edit("search", "Search here", rid="search_box", on_submit=self._remember)
        search.radius = ui.dp(28)
        body: list[View | None] = [ui.col(search, pad=(16, 4, 16, 8))]
        if query:
            found = sorted(
                (p for p in self.state.places if query in f"{p.name} {p.category} {p.address}".lower()),
                key=lambda p: p.km,
            )
            for p in found:
                body.append(
                    ui.list_item(
                        p.name,
                        f"{p.category} · {p.km:g} km · {p.address}",
                        self._open(p.name),
                        leading=ui.icon("dot", ui.t.danger, 20),
                        rid="place_item",
                    )
                )
            if not found:
                body.append(ui.empty("No results"))
            return ui.page("Maps", body, back=False, scroll_key="results")
        for key, label in (("home", "Home"), ("work", "Work")):
            address = str(getattr(self.state, key))
            body.append(
                ui.list_item(
                    label,
                    address or "Set once and go",
                    self._go_to_address(key),
                    leading=ui.icon("home" if key == "home" else "apps", ui.t.primary),
                    trailing=ui.icon_button("more", f"Edit {key}", self._ask_address(key), rid=f"edit_{key}"),
                    rid=key,
                )
            )
        body.append(
            ui.list_item(
                "Saved",
                f"{len(self.state.saved)} places",
                lambda: self.push("saved"),
                leading=ui.icon("star", ui.t.primary),
                rid="saved",
            )
        )
        if self.state.recent:
            body.append(ui.section("Recent"))
            for text in self.state.recent[:5]:
                body.append(
                    ui.list_item(
                        text, "", self._search_again(text), leading=ui.icon("search"), rid="recent_item"
                    )
                )
        return ui.page("Maps", body, back=False, scroll_key="maps")

    def handle_back(self) -> bool:
        return self.clear_search()

    def _remember(self) -> None:
        text = self.field("search").strip()
        if text:
            self.state.recent = [text] + [r for r in self.state.recent if r.casefold() != text.casefold()][:9]

    def _search_again(self, text: str) -> Callable[[], None]:
        def run() -> None:
            self.screen.fields["search"] = text

        return run

    def _open(self, name: str) -> Callable[[], None]:
        def run() -> None:
            self._remember()
            self.push("place", place=name)

        return run

    def _go_to_address(self, key: str) -> Callable[[], None]:
        def run() -> None:
            place = self.place(str(getattr(self.state, key)))
            if place is None:
                self._ask_address(key)()
                return
            self.push("directions", place=place.name, mode="drive")

        return run

    def _ask_address(self, key: str) -> Callable[[], None]:
        def run() -> None:
            def apply(text: str) -> None:
                place = self.place(text)
                if text.strip() and place is None:
                    self.toast("Address not found")
                    return
                setattr(self.state, key, place.address if place is not None else "")
                self.toast(
                    f"{key.capitalize()} saved" if place is not None else f"{key.capitalize()} removed"
                )

            current = str(getattr(self.state, key))
            self.show(dialogs.prompt(self, f"Set {key} address", "Address", current, apply, ok_label="Save"))

        return run

    def _place(self, ui: UI, place: Place) -> View:
        saved = place.name in self.state.saved

        def toggle_save() -> None:
            if place.name in self.state.saved:
                self.state.saved.remove(place.name)
                self.toast("Removed from Saved")
            else:
                self.state.saved.append(place.name)
                self.toast("Saved")

        def set_as(key: str) -> Callable[[], None]:
            def run() -> None:
                setattr(self.state, key, place.address)
                self.toast(f"{key.capitalize()} set to {place.address}")

            return run

        row1 = ui.row(
            ui.button(
                "Directions",
                lambda: self.push("directions", place=place.name, mode="drive"),
                rid="directions",
            ),
            ui.button(
                "Saved" if saved else "Save", toggle_save, style="tonal" if saved else "outlined", rid="save"
            ),
            gap=8,
            pad=(16, 8, 16, 8),
        )
        row2 = ui.row(
            ui.button("Set as home", set_as("home"), style="text", rid="set_home"),
            ui.button("Set as work", set_as("work"), style="text", rid="set_work"),
            gap=8,
            pad=(16, 0, 16, 8),
        )
        row1.h = row2.h = ui.dp(64)
        body: list[View | None] = [
            _map_view(ui, place.name),
            ui.list_item(place.address, "Address", None, rid="address"),
            ui.list_item(place.category, "Category", None, rid="category"),
            ui.list_item(f"{place.km:g} km", "Distance", None, rid="distance"),
            row1,
            row2,
        ]
        return ui.page(place.name, body, scroll_key="place")

    def _directions(self, ui: UI, place: Place) -> View:
        mode = str(self.screen.params.get("mode", "drive"))

        def pick(key: str) -> Callable[[], None]:
            def run() -> None:
                self.screen.params["mode"] = key

            return run

        chips = [ui.chip(label, key == mode, pick(key), rid="mode_chip") for key, label in MODES.items()]
        body: list[View | None] = [
            ui.list_item(
                "Your location", "From", None, leading=ui.icon("dot", ui.t.primary, 16), rid="origin"
            ),
            ui.list_item(
                place.name,
                f"To · {place.address}",
                None,
                leading=ui.icon("dot", ui.t.danger, 16),
                rid="destination",
            ),
            ui.row(*chips, gap=8, pad=(16, 8, 16, 8)),
            _map_view(ui, f"Route to {place.name}"),
            ui.text(
                f"{self.travel_minutes(place, mode)} min", 28, bold=True, rid="duration", pad=(16, 8, 16, 0)
            ),
            ui.text(f"{place.km:g} km · {MODES[mode]}", 16, muted=True, rid="distance", pad=(16, 0, 16, 8)),
        ]
        return ui.page("Directions", body, scroll_key="directions")

    def _saved(self, ui: UI) -> View:
        body: list[View | None] = []
        for name in self.state.saved:
            place = self.place(name)
            if place is not None:
                body.append(
                    ui.list_item(
                        place.name,
                        place.address,
                        self._open(place.name),
                        leading=ui.icon("star", ui.t.primary),
                        rid="saved_item",
                    )
                )
        if not self.state.saved:
            body.append(ui.empty("No saved places yet"))
        return ui.page("Saved", body, scroll_key="saved")


def _map_view(ui: UI, desc: str) -> View:
    """The map canvas: a tinted block (the simulator draws no tiles)."""
    canvas = ui.text("", 12, desc=desc)
    canvas.cls, canvas.h, canvas.bg = "android.view.View", ui.dp(160), (220, 235, 220)
    return canvas
