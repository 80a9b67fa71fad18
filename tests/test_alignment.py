"""Element-index actions (ReachAgent §4.1): parsing, resolving to screen pixels, errors."""

from __future__ import annotations

import pytest

from agent_runtime.actions import Click, LongPress, OpenApp, Scroll, Swipe, Type, parse_action
from agent_runtime.alignment import check_index, resolve_index, screen_actions, shown_indices
from agent_runtime.errors import ActionParseError
from agent_runtime.roles.worker import parse_worker
from agent_runtime.simphone import SimPhone
from tests.doubles import worker_reply


def contacts_screen():
    phone = SimPhone(seed=0)
    phone.execute(OpenApp(text="Contacts"))
    return phone, phone.observe()


def index_of(obs, label, cls=None):
    for i in shown_indices(obs):
        el = obs.elements[i]
        if el.label == label and (cls is None or el.class_name.endswith(cls)):
            return i
    raise AssertionError(f"{label!r} not in\n{obs.compressed_tree(with_index=True)}")


# -- parsing ----------------------------------------------------------------------------------------
def test_index_actions_parse_and_keep_their_json_form():
    click = parse_action({"action": "click", "index": 12})
    assert isinstance(click, Click) and click.index == 12 and click.coordinate is None and click.by_index
    assert click.to_json() == {"action": "click", "index": 12}
    assert parse_action(click.to_json()) == click
    swipe = parse_action('{"action": "swipe", "index": 7, "direction": "up"}')
    assert isinstance(swipe, Swipe) and swipe.direction == "up"
    assert swipe.to_json() == {"action": "swipe", "index": 7, "direction": "up", "duration_ms": 500}
    typed = parse_action({"action": "type", "index": 3, "text": "hi"})
    assert isinstance(typed, Type) and typed.index == 3
    assert isinstance(parse_action({"action": "long_press", "index": 4}), LongPress)
    assert parse_action({"action": "scroll", "index": 5, "pixels": -2}).index == 5
    # Coordinate actions are unchanged: no index key in their JSON, same repr.
    old = parse_action({"action": "click", "coordinate": [5, 9]})
    assert old.to_json() == {"action": "click", "coordinate": [5.0, 9.0]} and not old.by_index
    assert repr(old) == "Click(action='click', coordinate=(5.0, 9.0))"
    assert "index" not in parse_action({"action": "type", "text": "x"}).to_json()


@pytest.mark.parametrize(
    ("obj", "field", "words"),
    [
        ({"action": "click"}, "coordinate", "coordinate"),
        ({"action": "click", "index": 3, "coordinate": [1, 2]}, "index", "not both"),
        ({"action": "long_press"}, "coordinate", "index"),
        ({"action": "swipe", "index": 3}, "direction", "direction"),
        (
            {"action": "swipe", "index": 3, "direction": "up", "coordinate2": [1, 2]},
            "coordinate2",
            "direction",
        ),
        ({"action": "swipe", "coordinate": [1, 2]}, "coordinate2", "coordinate2"),
        (
            {"action": "swipe", "coordinate": [1, 2], "coordinate2": [3, 4], "direction": "up"},
            "direction",
            "index",
        ),
        ({"action": "swipe", "index": 3, "direction": "sideways"}, "direction", "up"),
        ({"action": "click", "index": -1}, "index", "greater than"),
        ({"action": "click", "index": "twelve"}, "index", "not a number"),
        ({"action": "scroll", "pixels": 1, "index": 2, "coordinate": [1, 1]}, "index", "not both"),
    ],
)
def test_bad_index_actions_name_the_field(obj, field, words):
    with pytest.raises(ActionParseError) as info:
        parse_action(obj)
    assert info.value.field == field
    assert words in info.value.message


# -- resolving ----------------------------------------------------------------------------------------
def test_click_resolves_to_the_element_centre():
    phone, obs = contacts_screen()
    i = index_of(obs, "Nina Dubois", "LinearLayout")
    screen = resolve_index(Click(index=i), obs)
    assert screen == Click(coordinate=obs.elements[i].bounds.center)
    # A row's label is not clickable itself but sits inside the clickable row: tapping it is fine.
    label = index_of(obs, "Nina Dubois", "TextView")
    assert resolve_index(LongPress(index=label), obs).coordinate == obs.elements[label].bounds.center
    result = phone.execute(screen)
    assert result.ok and "Nina Dubois" in {e.label for e in phone.observe().elements}


def test_swipe_runs_along_the_scrollable_axis_and_scrolls_the_list():
    phone, obs = contacts_screen()
    row = index_of(obs, "Carlos Evans", "LinearLayout")
    lst = obs.elements[row].parent
    assert obs.elements[lst].has("scrollable")
    b = obs.elements[lst].bounds
    up = resolve_index(Swipe(index=row, direction="up"), obs)  # a row → its scrollable list
    assert up.index is None and up.direction is None
    assert up.coordinate == (b.center[0], b.y1 + round((b.y2 - b.y1) * 3 / 4))
    assert up.coordinate2 == (b.center[0], b.y1 + round((b.y2 - b.y1) / 4))
    down = resolve_index(Swipe(index=lst, direction="down"), obs)
    assert (down.coordinate, down.coordinate2) == (up.coordinate2, up.coordinate)
    left = resolve_index(Swipe(index=lst, direction="left"), obs)
    assert (
        left.coordinate[1] == left.coordinate2[1] == b.center[1] and left.coordinate[0] > left.coordinate2[0]
    )
    assert resolve_index(Scroll(index=row, pixels=-2), obs).coordinate == b.center
    assert phone.execute(up).ok
    after = {e.label for e in phone.observe().elements if e.label}
    assert "Carlos Evans" not in after  # the list moved


def test_type_by_index_focuses_the_field_then_types():
    phone, obs = contacts_screen()
    field = index_of(obs, "Search contacts", "EditText")
    actions = screen_actions(Type(index=field, text="Nina"), obs)
    assert actions == [Click(coordinate=obs.elements[field].bounds.center), Type(text="Nina")]
    for a in actions:
        assert phone.execute(a).ok
    assert phone.focused_field() is not None


def test_actions_without_index_pass_through():
    _, obs = contacts_screen()
    a = Click(coordinate=(10, 20))
    assert resolve_index(a, obs) is a and screen_actions(a, obs) == [a]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda obs: Click(index=9999), "not in the UI tree"),
        (lambda obs: Click(index=index_of(obs, "Contacts", "TextView")), "cannot be acted on"),
        (lambda obs: Swipe(index=index_of(obs, "Create contact"), direction="up"), "not scrollable"),
        (lambda obs: Click(index=min(set(range(60)) - set(shown_indices(obs)))), "not in the UI tree"),
    ],
)
def test_unusable_indices_are_parse_errors_listing_the_choices(make, words):
    _, obs = contacts_screen()
    with pytest.raises(ActionParseError) as info:
        resolve_index(make(obs), obs)
    assert info.value.field == "index" and words in info.value.message
    assert info.value.hint and any(ch.isdigit() for ch in info.value.hint)


def test_worker_parser_checks_indices_against_the_screen():
    _, obs = contacts_screen()
    row = index_of(obs, "Nina Dubois", "LinearLayout")
    out = parse_worker(worker_reply({"action": "click", "index": row}), screen=obs)
    assert out.action == Click(index=row) and out.raw_action == {"action": "click", "index": row}
    with pytest.raises(ActionParseError, match="not in the UI tree"):
        parse_worker(worker_reply({"action": "click", "index": 4242}), screen=obs)
    # A role shown screenshots only has no indices to name.
    with pytest.raises(ActionParseError, match="screenshots only"):
        parse_worker(worker_reply({"action": "click", "index": row}), indices=False)
    with pytest.raises(ActionParseError, match="screenshots only"):
        check_index(Click(index=row), None)
    # Without a screen (offline parsing) the index form is accepted as written.
    assert parse_worker(worker_reply({"action": "click", "index": 4242})).action.index == 4242


def test_screens_without_a_tree_refuse_indices():
    _, obs = contacts_screen()
    bare = obs.model_copy(update={"ui_xml": None, "ui_error": "no accessibility tree"})
    with pytest.raises(ActionParseError, match="no UI tree"):
        resolve_index(Click(index=3), bare)
