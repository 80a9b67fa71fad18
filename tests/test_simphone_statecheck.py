"""Free-text goals about the apps issue 37 added: their words name the app, so ``run`` judges a
goal no template expresses by the change in that app's data, and ``open_app`` finds the app by
the names people use for it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TypeVar

import pytest

from agent_runtime.simphone import App, SimPhone
from agent_runtime.simphone.apps import APP_CLASSES
from agent_runtime.simphone.apps.mail import EmailApp
from agent_runtime.simphone.apps.music import Playlist
from agent_runtime.simphone.apps.notes import NotesApp
from agent_runtime.simphone.apps.recorder import RecorderApp
from agent_runtime.simphone.apps.weather import WeatherApp
from agent_runtime.simphone.execute import resolve_app
from agent_runtime.simphone.tasks.statecheck import APP_WORDS, judge, read_intent, snapshot

WHEN = dt.datetime(2025, 6, 1, 9, 0)
A = TypeVar("A", bound=App)


def _app(phone: SimPhone, cls: type[A]) -> A:
    app = phone.app(cls.package)
    assert isinstance(app, cls)
    return app


#: label → (a goal no template expresses, the change that does it, an alias of the app)
GOALS: dict[str, tuple[str, Callable[[SimPhone], object], str]] = {
    "Files": (
        'Make a folder called "Taxes 2024" for my files',
        lambda p: p.app("com.simphone.files").state.folders.append("Taxes 2024"),
        "file manager",
    ),
    "Gallery": (
        'Start a new photo album named "Road trip"',
        lambda p: p.app("com.simphone.gallery").state.albums.append("Road trip"),
        "photos",
    ),
    "Music": (
        'Make me an empty playlist called "Focus"',
        lambda p: p.app("com.simphone.music").state.playlists.append(Playlist("Focus")),
        "music player",
    ),
    "Recorder": (
        'Keep a voice memo titled "Groceries"',
        lambda p: _app(p, RecorderApp).add_recording("Groceries", 12, WHEN),
        "voice recorder",
    ),
    "Phone": (
        'Block calls from "555-0199"',
        lambda p: p.app("com.android.dialer").state.blocked.append("555-0199"),
        "call log",
    ),
    "Email": (
        'Put an email to my inbox from Ana with the subject "Lunch plans"',
        lambda p: _app(p, EmailApp).add_email("Inbox", "Ana", "ana@example.com", "Lunch plans"),
        "inbox",
    ),
    "Maps": (
        'Keep "City Library" among my saved places',
        lambda p: p.app("com.simphone.maps").state.saved.append("City Library"),
        "google maps",
    ),
    "Weather": (
        'Show the weather for "Oslo" too',
        lambda p: _app(p, WeatherApp).add_city("Oslo"),
        "forecast",
    ),
}


def test_every_app_has_words_a_goal_names_it_by() -> None:
    assert set(APP_WORDS) == {cls.label for cls in APP_CLASSES if cls.label != "Launcher"}


@pytest.mark.parametrize("label", GOALS)
def test_a_free_goal_about_a_new_app_is_judged_by_that_apps_change(label: str) -> None:
    goal, change, _ = GOALS[label]
    assert read_intent(goal).apps == (label,), read_intent(goal)
    phone = SimPhone(seed=0)
    before = snapshot(phone)
    assert not judge(goal, before, snapshot(phone)).success  # nothing done yet
    _app(phone, NotesApp).add_note("Elsewhere", "an unrelated note")
    unrelated = judge(goal, before, snapshot(phone))
    assert unrelated.checked and not unrelated.success and "only Notes changed" in unrelated.detail
    change(phone)
    done = judge(goal, before, snapshot(phone))
    assert done.checked and done.success, done
    assert done.detail.startswith(f"{label} changed as the goal asks")


@pytest.mark.parametrize("label", GOALS)
def test_open_app_finds_a_new_app_by_its_everyday_name(label: str) -> None:
    phone = SimPhone(seed=0)
    package = next(pkg for pkg, name in phone.packages().items() if name == label)
    assert resolve_app(phone, GOALS[label][2]) == (package, [])
    assert resolve_app(phone, label.lower()) == (package, [])
