"""SimPhone's state as JSON: round trips over every installed app, fork, the typed codec."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from pathlib import Path

import pytest

from agent_runtime.actions import Answer, Terminate
from agent_runtime.evaluation.episode import tree_observation
from agent_runtime.resume import SIMPHONE_SNAPSHOT, load_simphone, restore_device, save_simphone
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.app import App, Dialog
from agent_runtime.simphone.apps import APP_CLASSES
from agent_runtime.simphone.state import StateError, app_key, decode, encode
from agent_runtime.simphone.tasks import make_task, registry
from agent_runtime.simphone.tasks.oracle import OraclePolicy
from agent_runtime.tracing import Redactor


def _same(phone: SimPhone, state: dict) -> SimPhone:
    """``from_state`` of ``state`` after a trip through JSON text, checked against ``phone``."""
    copy = SimPhone.from_state(json.loads(json.dumps(state)))
    assert copy.state() == state
    assert copy.ui_xml() == phone.ui_xml()
    return copy


def test_every_app_has_a_distinct_key() -> None:
    keys = [app_key(cls.label) for cls in APP_CLASSES]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("app_cls", APP_CLASSES, ids=lambda c: c.label)
def test_each_app_round_trips_to_the_same_screen_and_state(app_cls: type[App]) -> None:
    phone = SimPhone(seed=11, randomize=True)
    phone.launch(app_cls.package)
    state = phone.state()
    assert list(state) == ["format", "device", "os", "apps", "ui"]
    assert json.dumps(state) == json.dumps(phone.state())  # stable: same phone, same text
    assert state["os"]["foreground"] == app_cls.package
    copy = _same(phone, state)
    assert copy.screenshot_png() == phone.screenshot_png()
    assert copy.now == phone.now and copy.current_focus() == phone.current_focus()


def _first_template(label: str) -> str | None:
    return next((n for n, c in registry().items() if c.app_names[0] == label), None)


@pytest.mark.parametrize("app_cls", APP_CLASSES, ids=lambda c: c.label)
def test_each_app_round_trips_at_every_step_of_its_expert(app_cls: type[App]) -> None:
    """Mid-task screens — typed text, scrolled lists, open pickers and dialogs — come back."""
    name = _first_template(app_cls.label)
    if name is None:
        pytest.skip(f"no template starts in {app_cls.label}")
    task = make_task(name, 0)
    phone = SimPhone(seed=0)
    task.setup(phone)
    policy = OraclePolicy(task)
    for _ in range(task.max_steps):
        action = policy(tree_observation(phone))
        if isinstance(action, Terminate):
            break
        if not isinstance(action, Answer):
            phone.execute(action)
        _same(phone, phone.state())


def test_an_open_dialog_is_reopened_with_its_typed_values() -> None:
    phone = SimPhone(seed=2)
    phone.launch("com.android.deskclock")
    phone.tap_on("Add alarm")
    phone.tap_on("Increase minute")
    phone.tap_on("minute", cls="EditText")
    phone.input_text("7")
    state = phone.state()
    (dialog,) = [s["dialog"] for s in state["ui"]["clock"]["stack"] if s["dialog"]]
    assert dialog["title"] == "Set alarm" and dialog["opener"]
    copy = _same(phone, state)
    assert copy.screenshot_png() == phone.screenshot_png()
    copy.tap_on("OK")
    phone.tap_on("OK")
    assert copy.state()["apps"] == phone.state()["apps"]  # the reopened dialog's OK acts alike


def test_a_dialog_no_input_opened_cannot_be_restored_and_says_so() -> None:
    phone = SimPhone(seed=0)
    phone.app("com.simphone.notes").show(Dialog(title="Planted"))
    with pytest.raises(StateError, match="Planted.*not opened by an input"):
        SimPhone.from_state(phone.state())


def test_fork_is_an_independent_copy() -> None:
    phone = SimPhone(seed=4)
    phone.launch("com.android.contacts")
    fork = phone.fork()
    assert fork.state() == phone.state() and fork is not phone
    for cls in APP_CLASSES:
        assert fork.app(cls.package).state is not phone.app(cls.package).state
    fork.app("com.android.contacts").state.contacts.pop()
    fork.home()
    fork.advance_time(60)
    assert phone.state() != fork.state()
    assert phone.current_focus()[0] == "com.android.contacts"
    assert (
        len(phone.app("com.android.contacts").state.contacts)
        == len(fork.app("com.android.contacts").state.contacts) + 1
    )


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass(frozen=True)
class Inner:
    at: dt.datetime
    tags: frozenset[str] = frozenset()


@dataclasses.dataclass
class Outer:
    color: Color
    day: dt.date
    span: tuple[int, int]
    inner: Inner
    by_id: dict[int, Inner] = dataclasses.field(default_factory=dict)
    maybe: Inner | None = None
    either: int | str = 0
    loose: dict[object, object] = dataclasses.field(default_factory=dict)
    added_later: int = 7


def test_the_codec_rebuilds_declared_types() -> None:
    inner = Inner(dt.datetime(2025, 3, 3, 8, 5), frozenset({"b", "a"}))
    value = Outer(
        Color.BLUE,
        dt.date(2025, 1, 2),
        (9, 30),
        inner,
        {4: inner},
        None,
        "x",
        {"when": dt.date(2025, 5, 6), "pair": (1, 2), "set": {3}, "nested": {"$odd": 1}, 2: None},
    )
    data = encode(value, Outer)
    assert data["color"] == "blue" and data["day"] == "2025-01-02" and data["span"] == [9, 30]
    assert data["inner"]["tags"] == ["a", "b"] and list(data["by_id"]) == ["4"]
    back = decode(json.loads(json.dumps(data)), Outer)
    assert back == value
    del data["added_later"]
    assert decode(data, Outer).added_later == 7  # a field added after the state was written


def test_bad_states_are_named_errors_with_the_path() -> None:
    state = SimPhone(seed=0).state()
    broken = json.loads(json.dumps(state))
    broken["apps"]["notes"]["notes"][0]["pinned"] = "yes"
    with pytest.raises(StateError, match=r"apps\.notes\.notes\[0\]\.pinned: expected true or false"):
        SimPhone.from_state(broken)
    with pytest.raises(StateError, match="does not have: nope"):
        SimPhone.from_state({**state, "apps": {**state["apps"], "nope": {}}})
    with pytest.raises(StateError, match="format"):
        SimPhone.from_state({**state, "format": "other/9"})
    with pytest.raises(StateError, match="device"):
        SimPhone.from_state({"format": "simphone-state/1"})
    with pytest.raises(StateError, match="a class of agent_runtime"):
        decode({"$dataclass": "os:system", "fields": {}})
    with pytest.raises(StateError, match="NaN|nan"):
        encode(float("nan"), float)


def test_resume_restores_the_phone_from_the_runs_snapshot(tmp_path: Path) -> None:
    phone = SimPhone(seed=3)
    phone.launch("com.android.deskclock")
    phone.tap_on("Add alarm")  # a dialog is open when the step commits
    assert save_simphone(phone, tmp_path, 4, Redactor())
    fresh = SimPhone(seed=3)
    notices = restore_device(
        fresh, owned=True, run_dir=tmp_path, run_id="r", started_on="simphone:3", written=set(),
        steps=[], values={},
    )  # fmt: skip
    assert fresh.state() == phone.state()
    assert fresh.screenshot_png() == phone.screenshot_png()
    assert [n.message for n in notices] == [
        "SimPhone restored from its snapshot after step 4, then 0 steps replayed"
    ]


def test_a_snapshot_of_another_phone_or_a_secret_is_not_used(tmp_path: Path) -> None:
    other = SimPhone(seed=5)
    other.launch("com.simphone.notes")
    assert save_simphone(other, tmp_path, 0, Redactor())
    fresh = SimPhone(seed=3)
    assert load_simphone(fresh, tmp_path) is None and fresh.state() == SimPhone(seed=3).state()
    notes = other.app("com.simphone.notes").state.notes
    notes[0].body = "the PIN is 4711"
    assert not save_simphone(other, tmp_path, 1, Redactor(["4711"]))
    assert not (tmp_path / SIMPHONE_SNAPSHOT).exists()  # the older snapshot goes too
