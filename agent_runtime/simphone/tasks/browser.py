"""Browser tasks over SimPhone's offline web: search-and-answer, open a URL, search, bookmarks.

State and screens are documented in :mod:`agent_runtime.simphone.apps.browser`; the pages
in :mod:`agent_runtime.simphone.apps.browser_pages`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.browser import BrowserApp
from agent_runtime.simphone.apps.browser_pages import PAGES
from agent_runtime.simphone.tasks.base import QuestionTask, Task, normalise_answer
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.browser"
APP = "Browser"


@dataclass(frozen=True)
class Fact:
    """A question one page answers: what to search, the page, the answer, how to read it off."""

    query: str
    url: str
    question: str
    answer: str
    match: str
    pattern: str  # group 1 is the answer, searched in the page's paragraphs


WIKI, RECIPES, WEATHER = "https://simwiki.org/wiki/", "https://recipes.sim/", "https://weather.sim/"
FACTS: dict[str, Fact] = {
    "eiffel_height": Fact(
        "Eiffel Tower",
        WIKI + "Eiffel_Tower",
        "How tall is the Eiffel Tower, in metres?",
        "330",
        "number",
        r"is (\d+) metres tall",
    ),
    "eiffel_year": Fact(
        "Eiffel Tower",
        WIKI + "Eiffel_Tower",
        "In which year was the Eiffel Tower completed?",
        "1889",
        "number",
        r"completed in (\d{4})",
    ),
    "everest_height": Fact(
        "Mount Everest",
        WIKI + "Mount_Everest",
        "How high is Mount Everest, in metres?",
        "8849",
        "number",
        r"height is ([\d,]+) metres",
    ),
    "everest_ascent": Fact(
        "Mount Everest",
        WIKI + "Mount_Everest",
        "In which year was Mount Everest first climbed?",
        "1953",
        "number",
        r"ascent was by .+? in (\d{4})",
    ),
    "python_creator": Fact(
        "Python programming language",
        WIKI + "Python_(programming_language)",
        "Who created the Python programming language?",
        "Guido van Rossum",
        "text",
        r"created by (.+?) and first",
    ),
    "python_year": Fact(
        "Python programming language",
        WIKI + "Python_(programming_language)",
        "In which year was Python first released?",
        "1991",
        "number",
        r"released in (\d{4})",
    ),
    "wall_length": Fact(
        "Great Wall of China",
        WIKI + "Great_Wall_of_China",
        "How long is the Great Wall of China, in kilometres?",
        "21196",
        "number",
        r"about ([\d,]+) kilometres",
    ),
    "largest_planet": Fact(
        "Solar System",
        WIKI + "Solar_System",
        "Which is the largest planet of the Solar System?",
        "Jupiter",
        "text",
        r"(\w+) is the largest planet",
    ),
    "closest_planet": Fact(
        "Solar System",
        WIKI + "Solar_System",
        "Which planet is closest to the Sun?",
        "Mercury",
        "text",
        r"(\w+) is the closest planet",
    ),
    "pancake_eggs": Fact(
        "pancakes recipe",
        RECIPES + "pancakes",
        "How many eggs does the SimRecipes pancake recipe use?",
        "2",
        "number",
        r"(\d+) eggs",
    ),
    "soup_serves": Fact(
        "tomato soup recipe",
        RECIPES + "tomato-soup",
        "How many people does the SimRecipes tomato soup serve?",
        "4",
        "number",
        r"Serves (\d+)",
    ),
    "london_high": Fact(
        "London weather",
        WEATHER + "london",
        "What is today's high temperature in London, in °C?",
        "14",
        "number",
        r"high of (\d+)°C",
    ),
    "tokyo_humidity": Fact(
        "Tokyo weather",
        WEATHER + "tokyo",
        "What is the humidity in Tokyo today, in percent?",
        "55",
        "number",
        r"Humidity (\d+)%",
    ),
    "marathon_runners": Fact(
        "city marathon",
        "https://news.sim/city-marathon",
        "How many runners took part in the city marathon?",
        "42000",
        "number",
        r"record ([\d,]+) runners",
    ),
}
TITLES = {p.url: p.title for p in PAGES}
SEARCHES = (
    "weather in Tokyo",
    "pancake recipe",
    "highest mountain",
    "Python language",
    "tallest tower",
    "planets",
)


def browser(phone: SimPhone) -> BrowserApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, BrowserApp)
    return app


def search_and_open(ui: OracleUI, query: str, url: str) -> Iterator[Action]:
    """Open the Browser, search ``query`` and open the result for ``url``."""
    yield ui.open_app(APP)
    yield from ui.type_into(None, query, rid="url_bar", enter=True)
    yield from ui.tap(TITLES[url], rid="result_title")


def random_page(rng: random.Random) -> dict[str, Any]:
    fact = FACTS[rng.choice(sorted(FACTS))]
    return {"url": fact.url, "title": TITLES[fact.url], "query": fact.query}


class BrowserSearchQuestion(QuestionTask):
    template = "Use the Browser to find out: {question}"
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        key = rng.choice(sorted(FACTS))
        return {"fact": key, "question": FACTS[key].question}

    @property
    def fact(self) -> Fact:
        return FACTS[self.params["fact"]]

    @property
    def match(self) -> str:  # type: ignore[override]
        return self.fact.match

    def setup(self, phone: SimPhone) -> None:
        browser(phone).state.current_url = ""

    def expected_answer(self) -> str:
        return self.fact.answer

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        pattern = re.compile(self.fact.pattern)
        yield from search_and_open(ui, self.fact.query, self.fact.url)
        para = yield from ui.scroll_to(rid="page_text", where=lambda el: pattern.search(el.text) is not None)
        m = pattern.search(para.text)
        assert m is not None
        yield ui.answer(m[1])


class BrowserOpenUrl(Task):
    template = "{verb} {url} in the Browser."
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_page(rng)}

    def setup(self, phone: SimPhone) -> None:
        browser(phone).state.current_url = ""

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "page", url=self.params["url"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.type_into(None, self.params["url"], rid="url_bar", enter=True)


class BrowserSearch(Task):
    template = 'Search the web for "{query}" in the Browser.'
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"query": rng.choice(SEARCHES)}

    def setup(self, phone: SimPhone) -> None:
        browser(phone).state.history = [
            h for h in browser(phone).state.history if not h.startswith("search:")
        ]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        if not showing(phone, PACKAGE, "results"):
            return 0.0
        shown = str(browser(phone).screen.params.get("query", ""))
        return 1.0 if normalise_answer(shown) == normalise_answer(self.params["query"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.type_into(None, self.params["query"], rid="url_bar", enter=True)


class BrowserBookmarkPage(Task):
    template = 'Find the page "{title}" in the Browser and bookmark it.'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_page(rng)

    def setup(self, phone: SimPhone) -> None:
        state = browser(phone).state
        state.bookmarks = [u for u in state.bookmarks if u != self.params["url"]]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if self.params["url"] in browser(phone).state.bookmarks else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from search_and_open(ui, self.params["query"], self.params["url"])
        yield from ui.tap(desc="Bookmark")


class BrowserRemoveBookmark(Task):
    template = 'Remove "{title}" from my Browser bookmarks.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_page(rng)

    def setup(self, phone: SimPhone) -> None:
        others = [p.url for p in self.rng().sample(PAGES, 3) if p.url != self.params["url"]][:2]
        #: Bookmarks that must stay.
        self.keep = others
        browser(phone).state.bookmarks = [*others, self.params["url"]]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if browser(phone).state.bookmarks == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(self.params["title"], rid="title")
        yield from ui.tap(desc="Remove bookmark")


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    BrowserSearchQuestion,
    BrowserOpenUrl,
    BrowserSearch,
    BrowserBookmarkPage,
    BrowserRemoveBookmark,
)
