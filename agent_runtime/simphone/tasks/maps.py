"""Maps tasks: save and unsave places, set home and work; reach a place or directions; questions
(travel time, distance, a saved place's address, the nearest place of a kind, the saved list).

State and screens are documented in :mod:`agent_runtime.simphone.apps.maps`. Places come from
the app's fixed catalogue; travel times depend on the phone's traffic factor, so ``setup``
fixes it for questions that ask for a time.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.maps import CATALOGUE, MODES, MapsApp, Place, minutes
from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.maps"
APP = "Maps"
PLACES = tuple(row[0] for row in CATALOGUE)
#: Mode -> how a goal says it ("walking directions", "walk to").
MODE_ADJ = {"drive": "driving", "transit": "transit", "walk": "walking", "bike": "cycling"}
MODE_VERB = {"drive": "drive", "transit": "take transit", "walk": "walk", "bike": "cycle"}
#: Categories with at least two places, so "the nearest" means something.
CATEGORIES = ("Cafe", "Park", "Restaurant", "Supermarket")


def maps(phone: SimPhone) -> MapsApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, MapsApp)
    return app


def place(phone: SimPhone, name: str) -> Place:
    found = maps(phone).place(name)
    assert found is not None, name
    return found


def address_of(name: str) -> str:
    return next(row[1] for row in CATALOGUE if row[0] == name)


def search(ui: OracleUI, text: str) -> Iterator[Action]:
    """Open Maps and type ``text`` into the search box."""
    yield ui.open_app(APP)
    yield from ui.type_into(None, text, rid="search_box")


def open_place(ui: OracleUI, name: str) -> Iterator[Action]:
    yield from search(ui, name)
    yield from ui.tap(name, rid="title")


def item_title(ui: OracleUI, rid: str) -> str:
    row = ui.require(rid=rid)
    return next(el.text for el in ui.children(row) if el.resource_id.endswith("title"))


def directions(ui: OracleUI, name: str, mode: str) -> Iterator[Action]:
    """Directions to ``name`` with ``mode`` selected."""
    yield from open_place(ui, name)
    yield from ui.tap("Directions", rid="directions")
    if mode != "drive":
        yield from ui.tap(MODES[mode], rid="mode_chip")


class MapsSavePlace(Task):
    template = "Save {place} to my saved places in Maps."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"place": rng.choice(PLACES)}

    def setup(self, phone: SimPhone) -> None:
        app = maps(phone)
        app.state.saved = [n for n in app.state.saved if n != self.params["place"]]
        #: Saved before; the goal adds exactly this place.
        self.before = list(app.state.saved)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if maps(phone).state.saved == [*self.before, self.params["place"]] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_place(ui, self.params["place"])
        yield from ui.tap("Save", rid="save")


class MapsUnsavePlace(Task):
    template = "Remove {place} from my saved places."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"place": rng.choice(PLACES)}

    def setup(self, phone: SimPhone) -> None:
        app = maps(phone)
        if self.params["place"] not in app.state.saved:
            app.state.saved.insert(self.rng().randint(0, len(app.state.saved)), self.params["place"])
        #: What must stay saved.
        self.keep = [n for n in app.state.saved if n != self.params["place"]]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if maps(phone).state.saved == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Saved", rid="title")
        yield from ui.tap(self.params["place"], rid="title")
        yield from ui.tap("Saved", rid="save")


class _SetAddress(Task):
    """Set home or work to a catalogue address; the other one must not change."""

    app_names = (APP,)
    complexity = 1.0
    key = "home"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        name = rng.choice(PLACES)
        return {"place": name, "address": address_of(name)}

    def setup(self, phone: SimPhone) -> None:
        app = maps(phone)
        other = "work" if self.key == "home" else "home"
        rng = self.rng()
        setattr(app.state, self.key, rng.choice(("", address_of(rng.choice(PLACES)))))
        if getattr(app.state, self.key) == self.params["address"]:
            setattr(app.state, self.key, "")
        setattr(app.state, other, address_of(rng.choice(PLACES)))
        #: The other label's address, which must survive.
        self.other = (other, getattr(app.state, other))

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        state = maps(phone).state
        ok = (
            getattr(state, self.key) == self.params["address"]
            and getattr(state, self.other[0]) == self.other[1]
        )
        return 1.0 if ok else 0.0


class MapsSetHome(_SetAddress):
    template = "Set my home address in Maps to {address}."

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Edit home")
        yield from ui.type_into(None, self.params["address"], rid="input")
        yield from ui.dialog_button("Save")


class MapsSetWork(_SetAddress):
    template = "My office is at {place} now: make it my work address in Maps."
    key = "work"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_place(ui, self.params["place"])
        yield from ui.tap("Set as work", rid="set_work")


class MapsReachDirections(Task):
    template = "{verb} {mode_adj} directions to {place}."
    app_names = (APP,)
    complexity = 0.8
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        mode = rng.choice(sorted(MODES))
        verb = rng.choice(("Show me", "Get", "Open", "Find"))
        return {"verb": verb, "mode": mode, "mode_adj": MODE_ADJ[mode], "place": rng.choice(PLACES)}

    def setup(self, phone: SimPhone) -> None:
        pass

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        return 1.0 if showing(phone, PACKAGE, "directions", place=p["place"], mode=p["mode"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from directions(ui, self.params["place"], self.params["mode"])


class MapsReachPlace(Task):
    template = "{verb} {place} in Maps."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "place": rng.choice(PLACES)}

    def setup(self, phone: SimPhone) -> None:
        pass

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "place", place=self.params["place"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_place(ui, self.params["place"])


class MapsDirectionsHome(Task):
    template = "Show me {mode_adj} directions home."
    app_names = (APP,)
    complexity = 0.8
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        mode = rng.choice(sorted(MODES))
        return {"mode": mode, "mode_adj": MODE_ADJ[mode], "home": rng.choice(PLACES)}

    def setup(self, phone: SimPhone) -> None:
        maps(phone).state.home = address_of(self.params["home"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        return 1.0 if showing(phone, PACKAGE, "directions", place=p["home"], mode=p["mode"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Home", rid="title")
        if self.params["mode"] != "drive":
            yield from ui.tap(MODES[self.params["mode"]], rid="mode_chip")


class _TravelQuestion(TypedQuestion):
    app_names = (APP,)
    complexity = 1.0
    match = "number"

    def setup(self, phone: SimPhone) -> None:
        maps(phone).state.traffic = self.params.get("traffic", 1.0)
        #: The place the question is about, as the app knows it.
        self.place = place(phone, self.params["place"])


class MapsTravelTimeQuestion(_TravelQuestion):
    template = "How many minutes does it take to {mode_verb} to {place}?"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        mode = rng.choice(sorted(MODES))
        return {
            "mode": mode,
            "mode_verb": MODE_VERB[mode],
            "place": rng.choice(PLACES),
            "traffic": rng.choice((1.0, 1.2, 1.5)),
        }

    def expected_answer(self) -> str:
        return str(minutes(self.place.km, self.params["mode"], self.params["traffic"]))

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from directions(ui, self.params["place"], self.params["mode"])
        yield ui.answer(ui.require(rid="duration").text.split()[0])


class MapsDistanceQuestion(_TravelQuestion):
    template = "How far away is {place}, in kilometres?"
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"place": rng.choice(PLACES)}

    def expected_answer(self) -> str:
        return f"{self.place.km:g}"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_place(ui, self.params["place"])
        yield ui.answer(item_title(ui, "distance").split()[0])


class MapsSavedAddressQuestion(TypedQuestion):
    template = "What is the address of {place}, one of my saved places?"
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"place": rng.choice(PLACES)}

    def setup(self, phone: SimPhone) -> None:
        app = maps(phone)
        if self.params["place"] not in app.state.saved:
            app.state.saved.append(self.params["place"])

    def expected_answer(self) -> str:
        return address_of(self.params["place"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Saved", rid="title")
        yield from ui.tap(self.params["place"], rid="title")
        yield ui.answer(item_title(ui, "address"))


class MapsNearestQuestion(TypedQuestion):
    template = "What is the nearest {category_lower} to me?"
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        category = rng.choice(CATEGORIES)
        return {"category": category, "category_lower": category.lower()}

    def setup(self, phone: SimPhone) -> None:
        app = maps(phone)
        mine = [p for p in app.state.places if p.category == self.params["category"]]
        # Distances of this kind shuffled per seed, so the answer is not always the same place.
        kms = [p.km for p in mine]
        self.rng().shuffle(kms)
        for p, km in zip(mine, kms, strict=True):
            p.km = km
        #: The nearest of them.
        self.nearest = min(mine, key=lambda p: p.km).name

    def expected_answer(self) -> str:
        return self.nearest

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from search(ui, self.params["category"])
        first = ui.require(rid="place_item")
        yield ui.answer(next(el.text for el in ui.children(first) if el.resource_id.endswith("title")))


class MapsSavedListQuestion(TypedQuestion):
    template = "Which places have I saved in Maps?"
    app_names = (APP,)
    complexity = 0.6
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"saved": rng.sample(PLACES, rng.randint(1, 4))}

    def setup(self, phone: SimPhone) -> None:
        maps(phone).state.saved = list(self.params["saved"])

    def expected_answer(self) -> str:
        return "; ".join(self.params["saved"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Saved", rid="title")
        names = [
            next(el.text for el in ui.children(item) if el.resource_id.endswith("title"))
            for item in ui.find_all(rid="saved_item")
        ]
        yield ui.answer("; ".join(names))


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    MapsSavePlace,
    MapsUnsavePlace,
    MapsSetHome,
    MapsSetWork,
    MapsReachDirections,
    MapsReachPlace,
    MapsDirectionsHome,
    MapsTravelTimeQuestion,
    MapsDistanceQuestion,
    MapsSavedAddressQuestion,
    MapsNearestQuestion,
    MapsSavedListQuestion,
)
