"""Browser (``com.android.browser``, label ``Browser``) over a small offline web.

State — :class:`BrowserState`:
    ``history``: visited page URLs and searches (``"search:<query>"``), oldest first;
    ``bookmarks``: bookmarked URLs; ``current_url``: the page on screen ("" when none);
    ``pages``: pages this phone's web serves besides the built-in
    :data:`~agent_runtime.simphone.apps.browser_pages.PAGES` (a planted page with a built-in
    page's URL replaces it — how tasks put untrusted web content in front of an agent).

Screens (every screen has the address bar: EditText resource-id ``url_bar``, hint
"Search or type URL"; ENTER searches or opens a URL):
    * ``main``: "SimSearch" logo and the bookmarks list.
    * ``results``: header "Results for “<query>”", one clickable item per matching page
      (title; summary = URL) — or "No results for “<query>”".
    * ``page``: the page title (resource-id ``page_title``), URL, and its paragraphs
      (resource-id ``page_text``); app-bar ImageButton "Bookmark" / "Remove bookmark".
      Unknown URLs show "This site can't be reached".
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.browser_pages import PAGES, Page
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

_WORD = re.compile(r"[\w°]+", re.UNICODE)
_STOP = {"the", "a", "an", "of", "in", "is", "what", "how", "to", "and", "for", "on", "tall", "does", "do"}


@dataclass
class BrowserState:
    history: list[str] = field(default_factory=list)
    bookmarks: list[str] = field(default_factory=list)
    current_url: str = ""
    pages: list[Page] = field(default_factory=list)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def search(query: str, web: tuple[Page, ...] = PAGES) -> list[Page]:
    """Pages of ``web`` ranked by query-word overlap (title words count double)."""
    words = _words(query)
    if not words:
        return []
    scored = []
    for page in web:
        title, body = _words(page.title + " " + page.url), _words(page.body)
        score = 2 * len(words & title) + len(words & body)
        if score:
            scored.append((-score, page.url, page))
    return [p for _, _, p in sorted(scored)]


def find_page(url: str, web: tuple[Page, ...] = PAGES) -> Page | None:
    wanted = (
        url.strip().lower().removeprefix("https://").removeprefix("http://").removeprefix("www.").rstrip("/")
    )
    return next((p for p in web if p.url.lower().removeprefix("https://") == wanted), None)


class BrowserApp(App):
    package = "com.android.browser"
    label = "Browser"
    activity = "com.android.browser.BrowserActivity"
    viewing_changes = ("history", "current_url")

    def initial_state(self, rng: random.Random) -> BrowserState:
        return BrowserState(bookmarks=[p.url for p in rng.sample(PAGES, 2)])

    def web(self) -> tuple[Page, ...]:
        """The pages this phone can reach: planted ones first, then the built-in ones they leave."""
        planted = {p.url for p in self.state.pages}
        return (*self.state.pages, *(p for p in PAGES if p.url not in planted))

    def navigate(self, text: str) -> None:
        """What ENTER in the address bar does: open a URL or search for the text."""
        text = text.strip()
        if not text:
            return
        # The screen we leave shows its own address again when Back returns to it.
        self.screen.fields["url"] = self.screen.params.get("url") or self.screen.params.get("query") or ""
        looks_like_url = " " not in text and ("." in text or text.startswith(("http://", "https://")))
        if looks_like_url:
            page = find_page(text, self.web())
            url = page.url if page else (text if "://" in text else f"https://{text}")
            self._open_url(url)
        else:
            self.state.history.append(f"search:{text}")
            self.state.current_url = ""
            self.push("results", fields={"url": text}, query=text)

    def _open_url(self, url: str) -> None:
        self.state.history.append(url)
        self.state.current_url = url
        self.push("page", fields={"url": url}, url=url)

    def _open(self, url: str) -> Callable[[], None]:
        return lambda: self._open_url(url)

    def pop(self) -> bool:
        popped = super().pop()
        self.state.current_url = self.screen.params.get("url", "") if self.screen.name == "page" else ""
        return popped

    def build(self, ui: UI) -> View:
        t = ui.t
        bar = ui.edit(
            "url", "Search or type URL", rid="url_bar", on_submit=lambda: self.navigate(self.field("url"))
        )
        bar.radius = ui.dp(24)
        bar.weight = 1.0
        actions: list[View] = []
        name = self.screen.name
        if name == "page":
            url = self.screen.params["url"]
            marked = url in self.state.bookmarks
            actions.append(
                ui.icon_button(
                    "star" if marked else "star_outline",
                    "Remove bookmark" if marked else "Bookmark",
                    self._toggle_bookmark(url),
                    rid="bookmark",
                    color=t.primary if marked else None,
                )
            )
        header = ui.row(bar, *actions, gap=8, pad=(12, 8, 8, 8))
        header.h = ui.dp(72)
        header.rid = "toolbar"
        if name == "results":
            body = self._results(ui, self.screen.params["query"])
        elif name == "page":
            body = self._page(ui, self.screen.params["url"])
        else:
            body = self._start(ui)
        content = ui.col(header, ui.divider(), ui.scroll(name, body))
        content.bg = t.bg
        return content

    def _toggle_bookmark(self, url: str) -> Callable[[], None]:
        def run() -> None:
            if url in self.state.bookmarks:
                self.state.bookmarks.remove(url)
                self.toast("Bookmark removed")
            else:
                self.state.bookmarks.append(url)
                self.toast("Bookmarked")

        return run

    def _start(self, ui: UI) -> list[View | None]:
        logo = ui.text(
            "SimSearch", 36, bold=True, align="center", color=ui.t.primary, pad=(0, 48, 0, 32), rid="logo"
        )
        body: list[View | None] = [logo, ui.section("Bookmarks")]
        for url in self.state.bookmarks:
            page = find_page(url, self.web())
            body.append(
                ui.list_item(
                    page.title if page else url,
                    url,
                    self._open(url),
                    leading=ui.icon("star", ui.t.primary),
                    rid="bookmark_item",
                )
            )
        if not self.state.bookmarks:
            body.append(ui.empty("No bookmarks yet"))
        return body

    def _results(self, ui: UI, query: str) -> list[View | None]:
        pages = search(query, self.web())
        if not pages:
            return [ui.empty(f"No results for “{query}”")]
        body: list[View | None] = [ui.text(f"Results for “{query}”", 14, muted=True, pad=(16, 12, 16, 4))]
        for page in pages:
            snippet = page.body.split("\n")[0]
            item = ui.col(
                ui.text(page.title, 18, color=ui.t.primary, rid="result_title"),
                ui.text(page.url, 12, muted=True, rid="result_url"),
                ui.text(snippet, 14, lines=2, rid="result_snippet"),
                gap=2,
                pad=(16, 10, 16, 10),
            )
            item.clickable = item.focusable = True
            item.on_click = self._open(page.url)
            item.rid = "result_item"
            body.append(item)
        return body

    def _page(self, ui: UI, url: str) -> list[View | None]:
        page = find_page(url, self.web())
        if page is None:
            return [
                ui.text("This site can't be reached", 22, pad=(16, 48, 16, 8), lines=2, rid="page_title"),
                ui.text(f"Check if there is a typo in {url}.", 16, muted=True, lines=0, pad=(16, 0, 16, 0)),
            ]
        body: list[View | None] = [
            ui.text(page.title, 24, lines=0, pad=(16, 16, 16, 4), rid="page_title"),
            ui.text(page.url, 12, muted=True, pad=(16, 0, 16, 12)),
        ]
        for para in page.body.split("\n\n"):
            body.append(ui.text(para, 16, lines=0, pad=(16, 6, 16, 6), rid="page_text"))
        return body
