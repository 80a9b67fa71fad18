"""The action schema: parsing both model forms, aliases, clear errors, coordinate mapping."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_runtime.actions import (
    ACTION_TYPES,
    Answer,
    Click,
    Drag,
    HScroll,
    Interact,
    Key,
    LeftClickDrag,
    LongPress,
    Scroll,
    Swipe,
    SystemButton,
    Terminate,
    Type,
    parse_action,
    to_screen,
)
from agent_runtime.coords import CoordMapper, CoordSpace, Size
from agent_runtime.errors import ActionParseError


def test_all_seed_actions_exist():
    assert set(ACTION_TYPES) == {
        "click",
        "long_press",
        "swipe",
        "type",
        "key",
        "system_button",
        "open_app",
        "wait",
        "answer",
        "terminate",
        "scroll",
        "drag",
        "double_click",
        "right_click",
        "middle_click",
        "mouse_move",
        # GUI-Owl's, beyond Mobile-Agent-v3's seed set
        "interact",
        "hscroll",
        "left_click_drag",
        "triple_click",
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"action": "click", "coordinate": [10, 20]}, Click(coordinate=(10, 20))),
        (
            {"action": "swipe", "coordinate": [1, 2], "coordinate2": [3, 4]},
            Swipe(coordinate=(1, 2), coordinate2=(3, 4)),
        ),
        ({"action": "type", "text": "hi", "clear": 1, "enter": 0}, Type(text="hi", clear=True)),
        ({"action": "key", "text": "volume_up"}, Key(keys=["volume_up"])),
        ({"action": "key", "keys": ["ctrl", "c"]}, Key(keys=["ctrl", "c"])),
        ({"action": "key", "keys": "ctrl+shift+t"}, Key(keys=["ctrl", "shift", "t"])),
        ({"action": "system_button", "button": "back"}, SystemButton(button="Back")),
        ({"action": "answer", "text": "42"}, Answer(text="42")),
        ({"action": "terminate", "status": "SUCCESS"}, Terminate(status="success")),
        ({"action": "scroll", "pixels": -3}, Scroll(pixels=-3)),
        ({"action": "tap", "coordinate": "[5, 6]"}, Click(coordinate=(5, 6))),
        ({"action_type": "click", "point": {"x": 1, "y": 2}}, Click(coordinate=(1, 2))),
        ({"action": "click", "coordinate": [0, 0, 10, 20]}, Click(coordinate=(5, 10))),
        (
            {"action": "long_press", "coordinate": [1, 2], "time": 1.5},
            LongPress(coordinate=(1, 2), duration_ms=1500),
        ),
        ({"action": "left_click_drag", "coordinate": [3, 4]}, LeftClickDrag(coordinate=(3, 4))),
        (
            {"action": "left_click_drag", "coordinate": [1, 2], "coordinate2": [3, 4]},
            Drag(coordinate=(1, 2), coordinate2=(3, 4)),
        ),
        (
            {"action": "left_click_drag", "start": [1, 2], "end": [3, 4]},
            Drag(coordinate=(1, 2), coordinate2=(3, 4)),
        ),
        ({"action": "hscroll", "pixels": "-2"}, HScroll(pixels=-2)),
        ({"action": "interact", "text": "Which one?"}, Interact(text="Which one?")),
    ],
)
def test_parse_mobile_agent_v3_form(obj, expected):
    assert parse_action(obj) == expected


def test_parse_gui_owl_tool_call_and_strings():
    call = {"name": "mobile_use", "arguments": {"action": "click", "coordinate": [3, 4]}}
    assert parse_action(call) == Click(coordinate=(3, 4))
    args = json.dumps({"action": "double_click", "coordinate": [1, 1]})
    as_string = json.dumps({"name": "computer_use", "arguments": args})
    assert parse_action(as_string).action == "double_click"
    assert parse_action("```json\n{'action': 'click', 'coordinate': [7, 8],}\n```") == Click(
        coordinate=(7, 8)
    )


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"action": "click"}, "coordinate"),
        ({"action": "click", "coordinate": ["a", 2]}, "coordinate"),
        ({"action": "fly"}, "action"),
        ({"coordinate": [1, 2]}, "action"),
        ({"action": "system_button", "button": "Power"}, "button"),
        ({"action": "terminate", "status": "maybe"}, "status"),
        ({"action": "click", "coordinate": [1, 2], "bogus": 1}, "bogus"),
        ("no json here", "action"),
    ],
)
def test_errors_name_the_bad_field(obj, field):
    with pytest.raises(ActionParseError) as info:
        parse_action(obj)
    assert info.value.field == field
    assert field in str(info.value)


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"action": "click", "coordinate": [float("nan"), 3]}, "coordinate"),
        ({"action": "click", "coordinate": "nan, 3"}, "coordinate"),
        ({"action": "click", "coordinate": [float("inf"), 3]}, "coordinate"),
        ({"action": "click", "coordinate": ["-Infinity", 3]}, "coordinate"),
        ({"action": "click", "coordinate": [True, 3]}, "coordinate"),
        ({"action": "click", "coordinate": [10**30, 3]}, "coordinate"),
        ({"action": "click", "coordinate": [100_001, 3]}, "coordinate"),
        ({"action": "click", "coordinate": [-1, 3]}, "coordinate"),
        ({"action": "click", "coordinate": [None, 1, 2, 3]}, "coordinate"),
        ({"action": "click", "coordinate": {1, 2}}, "coordinate"),
        ({"action": "swipe", "coordinate": [1, 2], "coordinate2": [2, float("nan")]}, "coordinate2"),
        ({"action": "click", "index": True}, "index"),
        ({"action": "wait", "time": float("nan")}, "time"),
        ({"action": "wait", "time": False}, "time"),
        ({"action": "scroll", "pixels": float("inf")}, "pixels"),
        ({"action": "long_press", "coordinate": [1, 2], "duration_ms": 1e400}, "duration_ms"),
        ({"action": "long_press", "coordinate": [1, 2], "time": float("inf")}, "time"),
        ({"action": "long_press", "coordinate": [1, 2], "time": 10.001}, "time"),
        ({"action": "hscroll", "pixels": 51}, "pixels"),
        ({"action": "type", "text": "a\ud800"}, "text"),
        ({"action": "answer", "text": "  "}, "text"),
        ('{"action": "click", "coordinate": [NaN, 3]}', "coordinate"),
        ('{"action": "click", "coordinate": [1e400, 3]}', "coordinate"),
    ],
)
def test_non_finite_and_absurd_numbers_are_parse_errors_with_a_hint(obj, field):
    """Never a crash later in the coordinate mapping or on the device."""
    with pytest.raises(ActionParseError) as info:
        parse_action(obj)
    assert info.value.field == field and info.value.hint


def test_numbers_models_write_are_still_read():
    assert parse_action({"action": "click", "coordinate": ["12", "34.5"]}) == Click(coordinate=(12, 34.5))
    assert parse_action({"action": "click", "coordinate": [0.25, 0.75]}) == Click(coordinate=(0.25, 0.75))
    assert parse_action({"action": "click", "index": "7"}).by_index


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["action", "coordinate", "text", "button", "keys", "x"]),
        st.one_of(
            st.text(max_size=5),
            st.integers(),
            st.floats(),
            st.booleans(),
            st.lists(st.one_of(st.integers(), st.floats(), st.booleans(), st.none()), max_size=4),
        ),
    )
)
def test_parse_never_raises_anything_but_action_parse_error(obj):
    try:
        parse_action(obj)
    except ActionParseError:
        pass


def test_to_screen_maps_every_point():
    mapper = CoordMapper(space=CoordSpace.RELATIVE_1000, screen=Size(1080, 2400))
    swipe = to_screen(Swipe(coordinate=(500, 100), coordinate2=(500, 900)), mapper)
    assert swipe.coordinate == (540, 240) and swipe.coordinate2 == (540, 2160)
    assert to_screen(Answer(text="x"), mapper) == Answer(text="x")


def test_actions_round_trip_through_json():
    for action in (
        Click(coordinate=(1, 2)),
        Type(text="a b", enter=True),
        Key(keys=["enter"]),
        LongPress(coordinate=(1, 2), duration_ms=2000),
        LeftClickDrag(coordinate=(1, 2)),
        HScroll(pixels=1, coordinate=(3, 4)),
        Interact(text="?"),
    ):
        assert parse_action(action.to_json()) == action


def test_answer_and_terminate_are_recorded_alike_by_every_backend():
    from agent_runtime.actions import ActionResult

    answer = ActionResult.recorded(Answer(text="42"))
    done = ActionResult.recorded(Terminate(status="failure"))
    asked = ActionResult.recorded(Interact(text="Which Anna?"))
    assert answer.ok and answer.data == {"answer": "42"}
    assert done.ok and done.data == {"status": "failure"}
    assert asked.ok and asked.data == {"question": "Which Anna?"}
