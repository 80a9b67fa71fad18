"""Weather tasks: add, remove and reach cities, set the home city and the units; questions
(tomorrow's high, will it rain on a day, the temperature now, the wettest day, the week's low,
which cities get rain tomorrow).

State and screens are documented in :mod:`agent_runtime.simphone.apps.weather`. ``setup``
writes the forecast numbers a question asks about, so answers come from the task's draw, not
from the phone's seed.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.weather import CITIES, CONDITIONS, RAINY, City, WeatherApp, to_units
from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion, iso

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.weather"
APP = "Weather"
NAMES = tuple(sorted(CITIES))
UNIT_NAMES = {"C": "Celsius", "F": "Fahrenheit"}
#: Day offsets a goal names ("on Thursday" would depend on the seed's date).
WHEN = ("today", "tomorrow", "the day after tomorrow", "in 3 days", "in 4 days")


def weather(phone: SimPhone) -> WeatherApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, WeatherApp)
    return app


def ensure_city(phone: SimPhone, name: str) -> City:
    """``name`` in the list of cities (added when missing)."""
    return weather(phone).add_city(name)


def drop_city(phone: SimPhone, name: str) -> None:
    app = weather(phone)
    app.state.cities = [c for c in app.state.cities if c.name != name]
    if app.state.home == name:
        app.state.home = app.state.cities[0].name if app.state.cities else ""


def open_city(ui: OracleUI, name: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(desc=name, rid="city_item")


def forecast_rows(ui: OracleUI) -> list[tuple[str, dict[str, str]]]:
    """(content-desc — the full date —, texts by resource-id) of the seven forecast rows."""
    rows = [
        (row.content_desc, {el.resource_id.rpartition("/")[2]: el.text for el in ui.children(row)})
        for row in ui.find_all(rid="forecast_item")
    ]
    if len(rows) != 7:
        raise ui.error(f"{len(rows)} forecast rows on screen, expected 7")
    return rows


def forecast_row(ui: OracleUI, offset: int) -> dict[str, str]:
    """The texts of the forecast row ``offset`` days from today (row 0 is "Today")."""
    return forecast_rows(ui)[offset][1]


def shown_number(text: str) -> str:
    """``"H 14° L 6°"`` → the high, ``"12°"`` → ``"12"``."""
    return text.replace("H", "").strip().split("°")[0].strip()


def random_city(rng: random.Random) -> dict[str, Any]:
    return {"city": rng.choice(NAMES)}


class WeatherAddCity(Task):
    template = "Add {city} to my cities in the Weather app."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_city(rng)

    def setup(self, phone: SimPhone) -> None:
        drop_city(phone, self.params["city"])
        #: The list before; the goal appends exactly this city.
        self.before = [c.name for c in weather(phone).state.cities]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        names = [c.name for c in weather(phone).state.cities]
        return 1.0 if names == [*self.before, self.params["city"]] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Add city")
        yield from ui.type_into(None, self.params["city"], rid="search_box")
        yield from ui.tap(self.params["city"], rid="title")


class WeatherRemoveCity(Task):
    template = "Remove {city} from the Weather app."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_city(rng)

    def setup(self, phone: SimPhone) -> None:
        ensure_city(phone, self.params["city"])
        #: The cities that must stay.
        self.keep = [c.name for c in weather(phone).state.cities if c.name != self.params["city"]]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if [c.name for c in weather(phone).state.cities] == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        yield from ui.tap(desc="Remove city")
        yield from ui.dialog_button("Remove")


class WeatherSetUnits(Task):
    template = "Switch the Weather app to {unit_name}, then show me the forecast for {city}."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        unit = rng.choice(("C", "F"))
        return {"unit": unit, "unit_name": UNIT_NAMES[unit], **random_city(rng)}

    def setup(self, phone: SimPhone) -> None:
        weather(phone).state.units = "C" if self.params["unit"] == "F" else "F"
        ensure_city(phone, self.params["city"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = weather(phone).state.units == self.params["unit"] and showing(
            phone, PACKAGE, "city", city=self.params["city"]
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Settings")
        yield from ui.tap(rid=f"units_{self.params['unit'].lower()}")
        yield from ui.tap(desc="Navigate up")
        yield from ui.tap(desc=self.params["city"], rid="city_item")


class WeatherSetHome(Task):
    template = "Make {city} my home city in Weather."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_city(rng)

    def setup(self, phone: SimPhone) -> None:
        ensure_city(phone, self.params["city"])
        app = weather(phone)
        if app.state.home == self.params["city"]:
            app.state.home = next(c.name for c in app.state.cities if c.name != self.params["city"])
        #: The list must not change.
        self.names = [c.name for c in app.state.cities]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        state = weather(phone).state
        ok = state.home == self.params["city"] and [c.name for c in state.cities] == self.names
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        yield from ui.tap(desc="Set as home")


class WeatherReachCity(Task):
    template = "{verb} the weather forecast for {city}."
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_city(rng)}

    def setup(self, phone: SimPhone) -> None:
        ensure_city(phone, self.params["city"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "city", city=self.params["city"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])


class _ForecastQuestion(TypedQuestion):
    """Writes the asked-about numbers into the city's forecast; units as the question says."""

    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        unit = rng.choice(("C", "F"))
        offset = rng.randrange(1, len(WHEN))
        return {
            **random_city(rng),
            "unit": unit,
            "unit_name": UNIT_NAMES[unit],
            "offset": offset,
            "when": WHEN[offset],
            "high": rng.randint(-5, 35),
            "rain": rng.random() < 0.5,
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        app = weather(phone)
        app.state.units = p["unit"]
        city = ensure_city(phone, p["city"])
        day = city.forecast[p["offset"]]
        day.high_c, day.low_c = p["high"], p["high"] - 6
        rainy = sorted(RAINY)
        dry = [c for c in CONDITIONS if c not in RAINY]
        day.condition = self.rng().choice(rainy if p["rain"] else dry)
        day.rain_chance = 80 if p["rain"] else 10
        #: The concrete date the question means.
        self.day = phone.now.date() + dt.timedelta(days=p["offset"])


class WeatherHighQuestion(_ForecastQuestion):
    template = "What will the high be in {city} {when}, in degrees {unit_name}?"
    match = "number"

    def expected_answer(self) -> str:
        return str(to_units(self.params["high"], self.params["unit"]))

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        yield ui.answer(shown_number(forecast_row(ui, self.params["offset"])["high_low"]))


class WeatherRainQuestion(_ForecastQuestion):
    template = "Will it rain in {city} {when}? Answer yes or no."

    def expected_answer(self) -> str:
        return "yes" if self.params["rain"] else "no"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        condition = forecast_row(ui, self.params["offset"])["summary"].split("·")[0].strip()
        yield ui.answer("yes" if condition in RAINY else "no")


class WeatherCurrentTempQuestion(TypedQuestion):
    template = "What is the temperature in {city} right now, in degrees {unit_name}?"
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        unit = rng.choice(("C", "F"))
        return {**random_city(rng), "unit": unit, "unit_name": UNIT_NAMES[unit], "now": rng.randint(-8, 38)}

    def setup(self, phone: SimPhone) -> None:
        weather(phone).state.units = self.params["unit"]
        ensure_city(phone, self.params["city"]).current_c = self.params["now"]

    def expected_answer(self) -> str:
        return str(to_units(self.params["now"], self.params["unit"]))

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        yield ui.answer(shown_number(ui.require(rid="current_temp").text))


class WeatherWettestDayQuestion(TypedQuestion):
    template = "On which date this week is the chance of rain highest in {city}?"
    app_names = (APP,)
    complexity = 1.0
    match = "date"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_city(rng), "offset": rng.randrange(1, 7), "chance": rng.choice((70, 80, 90))}

    def setup(self, phone: SimPhone) -> None:
        city = ensure_city(phone, self.params["city"])
        for i, day in enumerate(city.forecast):
            if i == self.params["offset"]:
                day.rain_chance, day.condition = self.params["chance"], "Rain"
            else:
                day.rain_chance = min(day.rain_chance, self.params["chance"] - 10)
        #: The wettest day.
        self.day = city.forecast[self.params["offset"]].date

    def expected_answer(self) -> str:
        return iso(self.day)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        chances = [
            (int(texts["summary"].rsplit("Rain", 1)[1].strip(" %")), date)
            for date, texts in forecast_rows(ui)
        ]
        yield ui.answer(max(chances)[1])


class WeatherWeekLowQuestion(TypedQuestion):
    template = (
        "What is the lowest temperature forecast in {city} over the next seven days, in degrees {unit_name}?"
    )
    app_names = (APP,)
    complexity = 1.0
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        unit = rng.choice(("C", "F"))
        return {
            **random_city(rng),
            "unit": unit,
            "unit_name": UNIT_NAMES[unit],
            "offset": rng.randrange(7),
            "low": rng.randint(-10, 12),
        }

    def setup(self, phone: SimPhone) -> None:
        weather(phone).state.units = self.params["unit"]
        city = ensure_city(phone, self.params["city"])
        for i, day in enumerate(city.forecast):
            if i == self.params["offset"]:
                day.low_c = self.params["low"]
                day.high_c = max(day.high_c, day.low_c + 4)
            else:
                day.low_c = max(day.low_c, self.params["low"] + 2)
                day.high_c = max(day.high_c, day.low_c + 4)

    def expected_answer(self) -> str:
        return str(to_units(self.params["low"], self.params["unit"]))

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_city(ui, self.params["city"])
        lows = [int(texts["high_low"].split("L")[1].strip(" °")) for _, texts in forecast_rows(ui)]
        yield ui.answer(str(min(lows)))


class WeatherRainTomorrowListQuestion(TypedQuestion):
    template = "Which of my cities in the Weather app will get rain tomorrow? List them."
    app_names = (APP,)
    complexity = 1.4
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        cities = rng.sample(NAMES, 4)
        return {"cities": cities, "rainy": sorted(rng.sample(cities, rng.randint(1, 3)))}

    def setup(self, phone: SimPhone) -> None:
        app = weather(phone)
        app.state.cities = []
        rng = self.rng()
        for name in self.params["cities"]:
            tomorrow = ensure_city(phone, name).forecast[1]
            rainy = name in self.params["rainy"]
            tomorrow.condition = rng.choice(
                sorted(RAINY) if rainy else [c for c in CONDITIONS if c not in RAINY]
            )
            tomorrow.rain_chance = 85 if rainy else 5
        app.state.home = self.params["cities"][0]

    def expected_answer(self) -> str:
        return ", ".join(self.params["rainy"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        names = [el.content_desc for el in ui.find_all(rid="city_item")]
        rainy = []
        for name in names:
            yield from ui.tap(desc=name, rid="city_item")
            condition = forecast_row(ui, 1)["summary"].split("·")[0].strip()
            if condition in RAINY:
                rainy.append(name)
            yield ui.click(ui.require(desc="Navigate up"))
        yield ui.answer(", ".join(rainy))


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    WeatherAddCity,
    WeatherRemoveCity,
    WeatherSetUnits,
    WeatherSetHome,
    WeatherReachCity,
    WeatherHighQuestion,
    WeatherRainQuestion,
    WeatherCurrentTempQuestion,
    WeatherWettestDayQuestion,
    WeatherWeekLowQuestion,
    WeatherRainTomorrowListQuestion,
)
