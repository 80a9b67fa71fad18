"""Weather (``com.simphone.weather``, label ``Weather``).

State — :class:`WeatherState`:
    ``cities``: the user's cities in list order, each a :class:`City` (``name``, ``country``,
    ``current_c`` temperature now, ``condition``, ``forecast``: seven :class:`DayForecast`
    — ``date``, ``high_c``, ``low_c``, ``condition``, ``rain_chance`` percent — from today on);
    ``home``: the name of the home city (shown first, "Home" badge); ``units``: ``C`` or ``F``
    (display only: state is always Celsius). :func:`make_city` builds a city's weather
    deterministically from its name and the date. Helpers: :meth:`WeatherApp.city`,
    :meth:`WeatherApp.add_city`, :meth:`WeatherApp.show_temp`.

Screens:
    * ``main`` "Weather": one item per city (``city_item``: title = name, summary =
      ``condition · H:14° L:6°``, trailing the current temperature like ``12°``); app-bar buttons
      "Add city" and "Settings".
    * ``city`` (title = name): the current temperature (``current_temp``) and condition, then
      seven forecast rows (``forecast_item``: title "Today", "Tomorrow" or ``Wed, Mar 5``,
      summary ``condition · Rain 60%``, trailing ``H 14° L 6°``); app-bar buttons "Set as home"
      and "Remove city" (confirm "Remove <city>?").
    * ``add`` "Add city": EditText "Search for a city" (``search_box``) and the matching cities
      of :data:`CITIES` not yet added (tap adds it and opens it).
    * ``settings`` "Settings": radio rows "Celsius (°C)" and "Fahrenheit (°F)".
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

#: City -> (country, typical daily high in °C this season).
CITIES = {
    "Amsterdam": ("Netherlands", 11),
    "Athens": ("Greece", 19),
    "Berlin": ("Germany", 10),
    "Buenos Aires": ("Argentina", 24),
    "Cairo": ("Egypt", 27),
    "Chicago": ("United States", 9),
    "Lima": ("Peru", 22),
    "Lisbon": ("Portugal", 18),
    "London": ("United Kingdom", 12),
    "Madrid": ("Spain", 17),
    "Mumbai": ("India", 32),
    "Nairobi": ("Kenya", 25),
    "Oslo": ("Norway", 5),
    "Paris": ("France", 13),
    "Seoul": ("South Korea", 12),
    "Sydney": ("Australia", 23),
    "Tokyo": ("Japan", 15),
    "Toronto": ("Canada", 8),
}
CONDITIONS = ("Sunny", "Partly cloudy", "Cloudy", "Rain", "Showers", "Thunderstorms", "Fog")
#: Conditions that count as rain ("Will it rain…?").
RAINY = frozenset({"Rain", "Showers", "Thunderstorms"})
DAYS = 7


@dataclass
class DayForecast:
    date: dt.date
    high_c: int
    low_c: int
    condition: str
    rain_chance: int = 0


@dataclass
class City:
    name: str
    country: str
    current_c: int
    condition: str
    forecast: list[DayForecast] = field(default_factory=list)


@dataclass
class WeatherState:
    cities: list[City] = field(default_factory=list)
    home: str = ""
    units: str = "C"


def make_city(name: str, today: dt.date) -> City:
    """A city's weather for the week from ``today``, a pure function of the name and the date."""
    country, typical = CITIES[name]
    rng = random.Random(f"weather:{name}:{today.isoformat()}")
    forecast = []
    for i in range(DAYS):
        condition = rng.choice(CONDITIONS)
        high = typical + rng.randint(-4, 4)
        rain = rng.randint(55, 95) if condition in RAINY else rng.randint(0, 35)
        forecast.append(
            DayForecast(today + dt.timedelta(days=i), high, high - rng.randint(4, 10), condition, rain)
        )
    today_fc = forecast[0]
    current = rng.randint(today_fc.low_c, today_fc.high_c)
    return City(name, country, current, today_fc.condition, forecast)


def to_units(celsius: float, units: str) -> int:
    """A temperature as shown: whole degrees in ``units``.

    >>> to_units(20, "F"), to_units(-3, "C")
    (68, -3)
    """
    return round(celsius * 9 / 5 + 32) if units == "F" else round(celsius)


def day_label(day: dt.date, today: dt.date) -> str:
    if day == today:
        return "Today"
    if day == today + dt.timedelta(days=1):
        return "Tomorrow"
    return day.strftime("%a, %b %-d")


class WeatherApp(App):
    package = "com.simphone.weather"
    label = "Weather"
    activity = "com.simphone.weather.WeatherActivity"

    def initial_state(self, rng: random.Random) -> WeatherState:
        today = self.phone.now.date()
        names = rng.sample(sorted(CITIES), 3)
        return WeatherState(cities=[make_city(n, today) for n in names], home=names[0])

    # -- helpers for tasks and other apps ------------------------------------------------------

    def city(self, name: str) -> City | None:
        wanted = name.strip().casefold()
        return next((c for c in self.state.cities if c.name.casefold() == wanted), None)

    def add_city(self, name: str) -> City:
        city = self.city(name)
        if city is None:
            city = make_city(name, self.phone.now.date())
            self.state.cities.append(city)
        return city

    def show_temp(self, celsius: float) -> str:
        return f"{to_units(celsius, self.state.units)}°"

    def _ordered(self) -> list[City]:
        return sorted(self.state.cities, key=lambda c: c.name != self.state.home)

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name == "add":
            return self._add(ui)
        if name == "settings":
            return self._settings(ui)
        if name == "city":
            city = self.city(str(self.screen.params.get("city", "")))
            if city is not None:
                return self._city(ui, city)
            self.pop_to_root()
        return self._main(ui)

    def _main(self, ui: UI) -> View:
        body: list[View | None] = []
        for c in self._ordered():
            today = c.forecast[0] if c.forecast else None
            summary = c.condition + (
                f" · H:{self.show_temp(today.high_c)} L:{self.show_temp(today.low_c)}" if today else ""
            )
            title = f"{c.name} · Home" if c.name == self.state.home else c.name
            body.append(
                ui.list_item(
                    title,
                    summary,
                    self._open(c.name),
                    trailing=ui.text(self.show_temp(c.current_c), 28, rid="city_temp"),
                    rid="city_item",
                    desc=c.name,
                )
            )
        if not self.state.cities:
            body.append(ui.empty("Add a city to see its weather"))
        actions = [
            ui.icon_button("plus", "Add city", self._start_add, rid="add_city"),
            ui.icon_button("more", "Settings", lambda: self.push("settings"), rid="settings"),
        ]
        return ui.page("Weather", body, back=False, actions=actions, scroll_key="cities")

    def _open(self, name: str) -> Callable[[], None]:
        def run() -> None:
            self.push("city", city=name)

        return run

    def _start_add(self) -> None:
        self.phone.focus_field(self.push("add"), "search")

    def _city(self, ui: UI, city: City) -> View:
        today = self.phone.now.date()

        def remove() -> None:
            def really() -> None:
                self.state.cities = [c for c in self.state.cities if c.name != city.name]
                if self.state.home == city.name:
                    self.state.home = self._ordered()[0].name if self.state.cities else ""
                self.pop()
                self.toast(f"{city.name} removed")

            self.show(
                dialogs.confirm(
                    self,
                    f"Remove {city.name}?",
                    "It will no longer be in your list of cities.",
                    "Remove",
                    really,
                )
            )

        def set_home() -> None:
            self.state.home = city.name
            self.toast(f"{city.name} is your home city")

        body: list[View | None] = [
            ui.col(
                ui.text(self.show_temp(city.current_c), 64, align="center", rid="current_temp"),
                ui.text(city.condition, 18, muted=True, align="center", rid="condition"),
                ui.text(city.country, 14, muted=True, align="center", pad=(0, 4, 0, 0)),
                align="center",
                pad=(0, 16, 0, 16),
            ),
            ui.section("7-day forecast"),
        ]
        for day in city.forecast:
            body.append(
                ui.list_item(
                    day_label(day.date, today),
                    f"{day.condition} · Rain {day.rain_chance}%",
                    None,
                    trailing=ui.text(
                        f"H {self.show_temp(day.high_c)} L {self.show_temp(day.low_c)}", 14, rid="high_low"
                    ),
                    rid="forecast_item",
                    desc=day.date.strftime("%A, %B %-d, %Y"),
                )
            )
        home = city.name == self.state.home
        actions = [
            ui.icon_button(
                "home", "Home city" if home else "Set as home", None if home else set_home, rid="set_home"
            ),
            ui.icon_button("delete", "Remove city", remove, rid="remove_city"),
        ]
        return ui.page(city.name, body, actions=actions, scroll_key="city")

    def _add(self, ui: UI) -> View:
        query = self.field("search").strip().lower()
        have = {c.name for c in self.state.cities}
        found = [n for n in sorted(CITIES) if n not in have and (not query or query in n.lower())]

        def pick(name: str) -> Callable[[], None]:
            def run() -> None:
                self.add_city(name)
                self.replace("city", city=name)
                self.toast(f"{name} added")

            return run

        search = ui.edit("search", "Search for a city", rid="search_box")
        body: list[View | None] = [ui.col(search, pad=(16, 4, 16, 8))]
        for n in found:
            body.append(ui.list_item(n, CITIES[n][0], pick(n), rid="city_result"))
        if not found:
            body.append(ui.empty("No matching cities"))
        return ui.page("Add city", body, scroll_key="add")

    def _settings(self, ui: UI) -> View:
        def units(value: str) -> Callable[[], None]:
            def run() -> None:
                self.state.units = value

            return run

        body: list[View | None] = [ui.section("Temperature units")]
        for value, label in (("C", "Celsius (°C)"), ("F", "Fahrenheit (°F)")):
            chosen = self.state.units == value
            row = ui.list_item(
                label,
                "",
                units(value),
                trailing=ui.checkbox(chosen, units(value), desc=label, radio=True),
                rid=f"units_{value.lower()}",
            )
            row.checkable, row.checked = True, chosen
            body.append(row)
        return ui.page("Settings", body, scroll_key="settings")
