# ruff: noqa: E501  (official replies are kept whole)
"""Official example replies of each profile parse, and land within 1 px of where the official
code puts them.

The replies are the examples the families' own repositories give; the official points are
computed with their own formulas:

* GUI-Owl (v3): X-PLUG/MobileAgent ``function_call_mobile_answer.py`` ``__main__``
  (``balabala<tool_call>…click [100, 200]…``); a pixel of the ``smart_resize``-d screenshot maps
  to ``x / resized_width * width`` (android_world ``coordinate_resize.convert_point_format``).
* GUI-Owl-1.5: ``Mobile-Agent-v3.5/mobile_use/run_gui_owl_1_5_for_mobile.py``
  (``parse_action``, ``rescale_coordinates``: ``x / 1000 * width``).
* UI-TARS-1.5: bytedance/UI-TARS ``README.md`` (``click(start_box='(100,200)')`` on 1920x1080),
  ``README_coordinates.md`` (``(197,525)``) and ``README_deploy.md`` (``(177,549)``):
  ``int(x / new_width * width)`` with ``smart_resize(min 100·28², max 16384·28²)``.
"""

from __future__ import annotations

import math

import pytest

from agent_runtime.actions import to_screen
from agent_runtime.coords import CoordMapper, ImageBudget, Size, smart_resize
from agent_runtime.errors import ParseError
from agent_runtime.profiles import PROFILES


def land(profile: str, reply: str, screen: Size) -> tuple[int, int]:
    p = PROFILES[profile]
    action = p.parse(reply, screen).action
    mapper = CoordMapper(
        space=p.coords, screen=screen, budget=ImageBudget(min_pixels=p.min_pixels, max_pixels=p.max_pixels)
    )
    point = to_screen(action, mapper).coordinate  # type: ignore[union-attr]
    assert point is not None
    return int(point[0]), int(point[1])


def near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return math.dist(a, b) <= 1.0 + 1e-9


def test_gui_owl_example_lands_on_the_official_point() -> None:
    reply = 'balabala<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [100, 200]}}\n</tool_call>'
    screen = Size(1080, 2400)
    h, w = smart_resize(screen.height, screen.width, factor=28, min_pixels=3136, max_pixels=10035200)
    assert near(land("gui-owl", reply, screen), (100 / w * screen.width, 200 / h * screen.height))


def test_gui_owl_15_example_lands_on_the_official_point_and_keeps_its_action_sentence() -> None:
    reply = (
        "Action: Tap the Clock icon.\n<tool_call>\n"
        '{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [500, 250]}}\n</tool_call>'
    )
    screen = Size(1080, 2400)
    assert near(land("gui-owl-1.5", reply, screen), (500 / 1000 * 1080, 250 / 1000 * 2400))
    out = PROFILES["gui-owl-1.5"].parse(reply, screen)
    assert PROFILES["gui-owl-1.5"].summary(reply, out) == "Tap the Clock icon."


@pytest.mark.parametrize(
    ("reply", "point", "screen"),
    [
        ("Thought: Click the button\nAction: click(start_box='(100,200)')", (100, 200), Size(1920, 1080)),
        ("Thought: xxx\nAction: click(start_box='(197,525)')", (197, 525), Size(1080, 2400)),
        ("Thought: 让我点击它看看。\nAction: click(start_box='(177,549)')", (177, 549), Size(1080, 2400)),
        (
            "Thought: x\nAction: long_press(start_box='<|box_start|>(177,549)<|box_end|>')",
            (177, 549),
            Size(1080, 2400),
        ),
        ("Thought: x\nAction: click(point='<point>177 549</point>')", (177, 549), Size(1080, 2400)),
    ],
)
def test_ui_tars_examples_land_on_the_official_point(
    reply: str, point: tuple[int, int], screen: Size
) -> None:
    new_h, new_w = smart_resize(screen.height, screen.width, 28, 100 * 28 * 28, 16384 * 28 * 28)
    official = (int(point[0] / new_w * screen.width), int(point[1] / new_h * screen.height))
    assert near(land("ui-tars-1.5", reply, screen), official)


def test_ui_tars_whole_mobile_action_space_parses() -> None:
    p, screen = PROFILES["ui-tars-1.5"], Size(1080, 2400)
    cases: dict[str, tuple[str, dict[str, object]]] = {
        "type(content='Hello it\\'s me\\n')": ("type", {"text": "Hello it's me", "enter": True}),
        "scroll(start_box='(500,1200)', direction='down')": ("swipe", {}),
        "open_app(app_name='Clock')": ("open_app", {"text": "Clock"}),
        "drag(start_box='(10,20)', end_box='(30,40)')": ("swipe", {}),
        "press_home()": ("system_button", {"button": "Home"}),
        "press_back()": ("system_button", {"button": "Back"}),
        "finished(content='')": ("terminate", {"status": "success"}),
        "finished(content='It is 7:00')": ("answer", {"text": "It is 7:00"}),
        "wait()": ("wait", {}),
    }
    for call, (kind, fields) in cases.items():
        action = p.parse(f"Thought: t\nAction: {call}", screen).action
        assert action.action == kind, call
        for key, value in fields.items():
            assert getattr(action, key) == value, call
    swipe = p.parse("Thought: t\nAction: scroll(start_box='(500,1200)', direction='down')", screen).action
    assert swipe.coordinate2 is not None and swipe.coordinate2[1] < 1200  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "reply", ["Thought: no action here", "Action: fly(start_box='(1,2)')", "Action: click(start_box='(1)')"]
)
def test_ui_tars_bad_replies_are_named_parse_errors(reply: str) -> None:
    with pytest.raises(ParseError):
        PROFILES["ui-tars-1.5"].parse(reply, Size(1080, 2400))
