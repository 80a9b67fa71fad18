# ruff: noqa: E501  (the official requests are kept verbatim)
"""Each official model profile renders, for a fixed SimPhone screen and history, exactly the
request its family's own code sends (image bytes aside).

``tests/data/profiles/<profile>.json`` keeps each profile's request; the test compares the
rendering with it byte for byte, and the file with :data:`OFFICIAL`: the requests the official
code builds for the same inputs, written out literally from these sources —

* ``gui-owl``: X-PLUG/MobileAgent @ 11cea575 ``Mobile-Agent-v3/mobile_v3/utils/
  function_call_mobile_answer.py`` (``MobileUse``) rendered by QwenLM/Qwen-Agent
  ``qwen_agent/llm/fncall_prompts/nous_fncall_prompt.py`` (``FN_CALL_TEMPLATE``), and
  ``Mobile-Agent-v3/cookbook/end2end_usage.ipynb`` ``build_user_messages(enable_think=True)``;
* ``gui-owl-1.5``: X-PLUG/MobileAgent @ 11cea575 ``Mobile-Agent-v3.5/mobile_use/utils.py``
  ``build_messages`` (today = 2025-08-20);
* ``ui-tars-1.5``: bytedance/UI-TARS @ 0d218b69 ``codes/prompts.py`` ``MOBILE_USE``
  (language English) in the layout of xlang-ai/OSWorld ``mm_agents/uitars_agent.py``
  (``history_n = 5``).

Screenshots appear as their trace refs; the screenshot bytes are the only thing left out.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.coords import Size
from agent_runtime.profiles import PROFILES, PastTurn, Request
from agent_runtime.roles.caller import ImageInput, Turn

DATA = Path(__file__).parent / "data" / "profiles"
TASK = "Turn on the 7:00 alarm in Clock"
SCREEN = Size(1080, 2400)  # SimPhone's screen


def _image(i: int) -> ImageInput:
    return ImageInput(b"png", f"screens/{i:04d}.png")


def scenario(profile: str) -> Request:
    """The fixed step each profile renders (the same inputs :data:`OFFICIAL` was built from)."""
    if profile == "gui-owl":
        summaries = ["Open the Clock app.", "Tap the Alarm tab."]
        history = tuple(PastTurn(reply="", summary=s) for s in summaries)
    elif profile == "gui-owl-1.5":
        replies = [
            f"Action: Step {i} sentence.\n<tool_call>\n"
            f'{{"name": "mobile_use", "arguments": {{"action": "click", "coordinate": [{100 + i}, {200 + i}]}}}}'
            "\n</tool_call>"
            for i in range(5)
        ]
        history = tuple(
            PastTurn(reply=r, summary=f"Step {i} sentence.", image=_image(i)) for i, r in enumerate(replies)
        )
    else:
        replies = [
            f"Thought: Step {i} plan.\nAction: click(start_box='({300 + i},{400 + i})')" for i in range(6)
        ]
        history = tuple(
            PastTurn(reply=r, summary=f"Step {i} plan.", image=_image(i)) for i, r in enumerate(replies)
        )
    return Request(
        task=TASK, screen=SCREEN, image=_image(len(history)), history=history, today=date(2025, 8, 20)
    )


def view(turns: list[Turn]) -> list[dict[str, Any]]:
    """A rendered conversation with each screenshot as its ref."""
    return [
        {
            "role": t.role,
            "content": [
                {"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "ref": p.ref}
                for p in t.parts
            ],
        }
        for t in turns
    ]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_request_equals_its_golden_file_and_the_official_rendering(name: str) -> None:
    rendered = json.dumps(view(PROFILES[name].render(scenario(name))), ensure_ascii=False, indent=1) + "\n"
    golden = (DATA / f"{name}.json").read_text(encoding="utf-8")
    assert rendered == golden
    assert json.loads(golden) == OFFICIAL[name]


def test_gui_owl_15_sends_only_the_last_four_screens_and_folds_earlier_steps_into_action_lines() -> None:
    turns = view(PROFILES["gui-owl-1.5"].render(scenario("gui-owl-1.5")))
    images = [p["ref"] for t in turns for p in t["content"] if p["type"] == "image"]
    assert images == [f"screens/{i:04d}.png" for i in (1, 2, 3, 4, 5)]
    assert "Previous actions:\nStep 1: Step 0 sentence." in turns[1]["content"][0]["text"]


def test_first_steps_render_without_history() -> None:
    for name, profile in PROFILES.items():
        turns = profile.render(Request(task=TASK, screen=SCREEN, image=_image(0), today=date(2025, 8, 20)))
        assert turns[-1].parts[-1] == _image(0), name
        assert sum(isinstance(p, ImageInput) for t in turns for p in t.parts) == 1, name


OFFICIAL = {
    "gui-owl": [
        {
            "role": "system",
            "content": [
                {
                    "type": "text",
                    "text": 'You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "mobile_use", "description": "Use a touchscreen to interact with a mobile device, and take screenshots.\\n* This is an interface to a mobile device with touchscreen. You can perform actions like clicking, typing, swiping, etc.\\n* Some applications may take time to start or process actions, so you may need to wait and take successive screenshots to see the results of your actions.\\n* The screen\'s resolution is 1092x2408.\\n* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. Don\'t click boxes on their edges unless asked.", "parameters": {"properties": {"action": {"description": "The action to perform. The available actions are:\\n* `key`: Perform a key event on the mobile device.\\n    - This supports adb\'s `keyevent` syntax.\\n    - Examples: \\"volume_up\\", \\"volume_down\\", \\"power\\", \\"camera\\", \\"clear\\".\\n* `click`: Click the point on the screen with coordinate (x, y).\\n* `long_press`: Press the point on the screen with coordinate (x, y) for specified seconds.\\n* `swipe`: Swipe from the starting point with coordinate (x, y) to the end point with coordinates2 (x2, y2).\\n* `type`: Input the specified text into the activated input box.\\n* `answer`: Output the answer.\\n* `system_button`: Press the system button.\\n* `open`: Open an app on the device.\\n* `wait`: Wait specified seconds for the change to happen.\\n* `terminate`: Terminate the current task and report its completion status.", "enum": ["key", "click", "long_press", "swipe", "type", "answer", "system_button", "open", "wait", "terminate"], "type": "string"}, "coordinate": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to move the mouse to. Required only by `action=click`, `action=long_press`, and `action=swipe`.", "type": "array"}, "coordinate2": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to move the mouse to. Required only by `action=swipe`.", "type": "array"}, "text": {"description": "Required only by `action=key`, `action=type`, `action=answer`, and `action=open`.", "type": "string"}, "time": {"description": "The seconds to wait. Required only by `action=long_press` and `action=wait`.", "type": "number"}, "button": {"description": "Back means returning to the previous interface, Home means returning to the desktop, Menu means opening the application background menu, and Enter means pressing the enter. Required only by `action=system_button`", "enum": ["Back", "Home", "Menu", "Enter"], "type": "string"}, "status": {"description": "The status of the task. Required only by `action=terminate`.", "type": "string", "enum": ["success", "failure"]}}, "required": ["action"], "type": "object"}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "The user query: Turn on the 7:00 alarm in Clock\nTask progress (You have done the following operation on the current device): Step 1: Open the Clock app.; Step 2: Tap the Alarm tab.; .\n\nBefore answering, explain your reasoning step-by-step in <thinking></thinking> tags, and insert them before the <tool_call></tool_call> XML tags.\nAfter answering, summarize your action in <conclusion></conclusion> tags, and insert them after the <tool_call></tool_call> XML tags.\n",
                },
                {"type": "image", "ref": "screens/0002.png"},
            ],
        },
    ],
    "gui-owl-1.5": [
        {
            "role": "system",
            "content": [
                {
                    "type": "text",
                    "text": '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name_for_human": "mobile_use", "name": "mobile_use", "description": "Use a touchscreen to interact with a mobile device, and take screenshots.\n* This is an interface to a mobile device with touchscreen. You can perform actions like clicking, typing, swiping, etc.\n* Some applications may take time to start or process actions, so you may need to wait and take successive screenshots to see the results of your actions.\n* The screen\'s resolution is 1000x1000.\n* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. Don\'t click boxes on their edges unless asked.", "parameters": {"properties": {"action": {"description": "The action to perform. The available actions are:\n* `key`: Perform a key event on the mobile device.\n    - This supports adb\'s `keyevent` syntax.\n    - Examples: \\"volume_up\\", \\"volume_down\\", \\"power\\", \\"camera\\", \\"clear\\".\n* `click`: Click the point on the screen with coordinate (x, y).\n* `long_press`: Press the point on the screen with coordinate (x, y) for specified seconds.\n* `swipe`: Swipe from the starting point with coordinate (x, y) to the end point with coordinates2 (x2, y2).\n* `type`: Input the specified text into the activated input box.\n* `system_button`: Press the system button.\n* `open`: Open an app on the device.\n* `wait`: Wait specified seconds for the change to happen.\n* `answer`: Terminate the current task and output the answer.\n* `interact`: Resolve the blocking window by interacting with the user.\n* `terminate`: Terminate the current task and report its completion status.", "enum": ["key", "click", "long_press", "swipe", "type", "system_button", "open", "wait", "answer", "interact", "terminate"], "type": "string"}, "coordinate": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to move the mouse to. Required only by `action=click`, `action=long_press`, and `action=swipe`.", "type": "array"}, "coordinate2": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to move the mouse to. Required only by `action=swipe`.", "type": "array"}, "text": {"description": "Required only by `action=key`, `action=type`, `action=open`, `action=answer`,and `action=interact`.", "type": "string"}, "time": {"description": "The seconds to wait. Required only by `action=long_press` and `action=wait`.", "type": "number"}, "button": {"description": "Back means returning to the previous interface, Home means returning to the desktop, Menu means opening the application background menu, and Enter means pressing the enter. Required only by `action=system_button`", "enum": ["Back", "Home", "Menu", "Enter"], "type": "string"}, "status": {"description": "The status of the task. Required only by `action=terminate`.", "type": "string", "enum": ["success", "failure"]}}, "required": ["action"], "type": "object"}, "args_format": "Format the arguments as a JSON object."}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n\n# Response format\n\nResponse format for every step:\n1) Action: a short imperative describing what to do in the UI.\n2) A single <tool_call>...</tool_call> block containing only the JSON: {"name": <function-name>, "arguments": <args-json-object>}.\n\nRules:\n- Output exactly in the order: Action, <tool_call>.\n- Be brief: one sentence for Action.\n- Do not output anything else outside those two parts.\n- If finishing, use action=terminate in the tool call.',
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Please generate the next move according to the UI screenshot, instruction and previous actions.\n\nInstruction: Today's date is: 2025-08-20 Wednesday.Turn on the 7:00 alarm in Clock\n\nPrevious actions:\nStep 1: Step 0 sentence.",
                },
                {"type": "image", "ref": "screens/0001.png"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": 'Action: Step 1 sentence.\n<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [101, 201]}}\n</tool_call>',
                }
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0002.png"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": 'Action: Step 2 sentence.\n<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [102, 202]}}\n</tool_call>',
                }
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0003.png"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": 'Action: Step 3 sentence.\n<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [103, 203]}}\n</tool_call>',
                }
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0004.png"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": 'Action: Step 4 sentence.\n<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [104, 204]}}\n</tool_call>',
                }
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0005.png"}]},
    ],
    "ui-tars-1.5": [
        {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task. \n## Output Format\n```\nThought: ...\nAction: ...\n```\n## Action Space\n\nclick(start_box='<|box_start|>(x1,y1)<|box_end|>')\nlong_press(start_box='<|box_start|>(x1,y1)<|box_end|>')\ntype(content='') #If you want to submit your input, use \"\\n\" at the end of `content`.\nscroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')\nopen_app(app_name='')\ndrag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')\npress_home()\npress_back()\nfinished(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format.\n\n\n## Note\n- Use English in `Thought` part.\n- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.\n\n## User Instruction\nTurn on the 7:00 alarm in Clock\n",
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Thought: Step 0 plan.\nAction: click(start_box='(300,400)')"}
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Thought: Step 1 plan.\nAction: click(start_box='(301,401)')"}
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0002.png"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Thought: Step 2 plan.\nAction: click(start_box='(302,402)')"}
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0003.png"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Thought: Step 3 plan.\nAction: click(start_box='(303,403)')"}
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0004.png"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Thought: Step 4 plan.\nAction: click(start_box='(304,404)')"}
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0005.png"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Thought: Step 5 plan.\nAction: click(start_box='(305,405)')"}
            ],
        },
        {"role": "user", "content": [{"type": "image", "ref": "screens/0006.png"}]},
    ],
}
