# ruff: noqa: E501  (the official requests and replies are kept verbatim)
"""Mobile-Agent-v3's four roles under the ``gui-owl`` profile send the official requests and read
the official replies.

``tests/data/profiles/gui-owl-team.json`` keeps, for a fixed SimPhone screen and history, each
role call's request (the Manager's first plan and update, the Worker, the Reflector, the
Notetaker); the test compares the rendering with it byte for byte, and the file with
:data:`OFFICIAL`: the requests X-PLUG/MobileAgent @ 11cea575's own code builds for the same
inputs — ``Mobile-Agent-v3/mobile_v3/utils/mobile_agent_e.py`` (``Manager``, ``Executor``,
``ActionReflector``, ``Notetaker`` ``.get_prompt`` on an ``InfoPool`` filled the way
``mobile_v3/run_mobileagentv3.py`` fills it: ``add_info = ""``, ``INPUT_KNOW`` as the executor's
knowledge, ``err_to_manager_thresh = 2``), laid out as ``utils/call_mobile_agent_e.py``
``predict_mm`` sends them (one user turn: the text, then the screenshots). Screenshots appear as
their trace refs; their bytes are the only thing left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.coords import CoordMapper, ImageBudget, Size
from agent_runtime.errors import ParseError
from agent_runtime.graphs.official import judged_pool, pool_of, request
from agent_runtime.graphs.state import AgentState, HistoryItem, Step
from agent_runtime.profiles import PROFILES
from agent_runtime.profiles import mobile_agent_v3 as ma3
from agent_runtime.roles.caller import ImageInput, Turn
from agent_runtime.roles.manager import parse_manager
from agent_runtime.traces import Verdict, load_run
from tests.doubles import ScriptedOpenAIServer
from tests.test_graphs import SEED, TASK, nth, oracle_actions
from tests.test_run_cli import cli

DATA = Path(__file__).parent / "data" / "profiles"
INSTRUCTION = "Turn on the 7:00 alarm in Clock"
SWIPE = {"action": "swipe", "coordinate": [546, 1600], "coordinate2": [546, 800]}
TAP_SWITCH = {"action": "click", "coordinate": [980, 370]}


def _image(i: int) -> ImageInput:
    return ImageInput(b"png", f"screens/{i:04d}.png")


def _history() -> list[HistoryItem]:
    """Three judged steps: a tap that worked, a reply with no usable action, a swipe that did nothing."""
    return [
        HistoryItem(
            step=0,
            action=json.dumps({"action": "click", "coordinate": [151, 415]}),
            description="Tap the Clock icon on the home screen.",
            success=True,
            feedback="",
        ),
        HistoryItem(
            step=1,
            action="(no valid action: the reply could not be parsed)",
            description="",
            success=False,
            feedback="the Worker's reply could not be parsed",
            parsed=False,
        ),
        HistoryItem(
            step=2,
            action=json.dumps(SWIPE),
            description="Swipe up on the alarm list.",
            success=False,
            feedback="The screen did not change: the list is at its end.",
        ),
    ]


def _state() -> AgentState:
    return AgentState(
        task=INSTRUCTION,
        knowledge="",
        planned=True,
        info_pool={
            "plan": "1. Open the Alarm tab 2. Turn on the 7:00 alarm 3. Check that it is on 4. Go back home",
            "completed_plan": "Opened the Clock app.",
            "progress_status": "No completed subgoal.",
            "important_notes": "- The 7:00 alarm is off.",
        },
        history=_history(),
    )


def _step(i: int, action: dict[str, Any], description: str) -> Step:
    return Step(
        step=i,
        before_screen=f"screens/{i:04d}.png",
        after_screen=f"screens/{i + 1:04d}.png",
        action=action,
        description=description,
        verdict=Verdict.of("A", source="reflector"),
    )


def calls() -> dict[str, list[Turn]]:
    """Each role call of the fixed scenario, as the team graph renders it."""
    state, tap = _state(), _step(3, TAP_SWITCH, "Tap the switch of the 7:00 alarm.")
    first = AgentState(task=INSTRUCTION, knowledge="", history=[])
    return {
        "manager_init": request("manager", pool_of(first), [_image(0)]),
        "worker": request("worker", pool_of(state), [_image(3)]),
        "reflector": request("reflector", pool_of(state, tap), [_image(3), _image(4)]),
        "notetaker": request("notetaker", judged_pool(state, tap), [_image(4)]),
        "manager_update": request(
            "manager", pool_of(state, _step(2, SWIPE, "Swipe up on the alarm list.")), [_image(3)]
        ),
    }


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


def test_each_role_call_equals_its_golden_file_and_the_official_rendering() -> None:
    rendered = {name: view(turns) for name, turns in calls().items()}
    text = json.dumps(rendered, ensure_ascii=False, indent=1) + "\n"
    golden = (DATA / "gui-owl-team.json").read_text(encoding="utf-8")
    assert text == golden
    assert json.loads(golden) == OFFICIAL


def test_the_first_plan_and_a_worker_with_no_history_render_the_official_empty_forms() -> None:
    first = AgentState(task=INSTRUCTION, knowledge="", history=[])
    manager = ma3.manager_prompt(pool_of(first))
    assert "Task-specific:\n[add_info]\n\n" in manager and "### Historical Operations" not in manager
    worker = ma3.worker_prompt(pool_of(first))
    assert "### Progress Status ###\nNo progress yet.\n\n" in worker
    assert "### Latest Action History ###\nNo actions have been taken yet.\n\n" in worker


# -- replies: the official prompts' own examples and replies in their format ----------------------
MANAGER_FIRST = "### Thought ###\nThe Clock app holds the alarms.\n\n### Plan ###\n1. Open the Clock app\n2. Turn on the 7:00 alarm\n"
MANAGER_UPDATE = (
    "### Thought ###\nClock is open.\n\n### Historical Operations ###\nOpened the Clock app.\n\n"
    "### Plan ###\n1. Turn on the 7:00 alarm\n"
)
WORKER = (
    "### Thought ###\nThe switch is at the right of the 7:00 row.\n\n### Action ###\n"
    '{"action":"type", "text": "the text you want to type"}\n\n### Description ###\nType the\ntext.\n'
)


def test_official_manager_replies_parse_and_keep_the_official_texts() -> None:
    first = parse_manager(MANAGER_FIRST)
    assert first.plan == ["Open the Clock app", "Turn on the 7:00 alarm"] and not first.finished
    assert ma3.manager_texts(MANAGER_FIRST, first) == (
        "1. Open the Clock app 2. Turn on the 7:00 alarm",
        ma3.NO_COMPLETED,
    )
    update = parse_manager(MANAGER_UPDATE)
    assert ma3.manager_texts(MANAGER_UPDATE, update) == ("1. Turn on the 7:00 alarm", "Opened the Clock app.")
    done = "### Thought ###\nAll done.\n\n### Historical Operations ###\nTurned it on.\n\n### Plan ###\nFinished\n"
    assert parse_manager(done).finished
    assert ma3.manager_texts(done, parse_manager(done))[0] == "Finished"


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ('{"action": "answer", "text": "the content of your answer"}', "answer"),
        ('{"action": "click", "coordinate": [x, y]}'.replace("x, y", "540, 1200"), "click"),
        ('{"action": "long_press", "coordinate": [540, 1200]}', "long_press"),
        ('{"action":"type", "text": "the text you want to type"}', "type"),
        ('{"action": "system_button", "button": "Home"}', "system_button"),
        ('{"action": "swipe", "coordinate": [540, 1600], "coordinate2": [540, 800]}', "swipe"),
        ("{'action': 'click', 'coordinate': [540, 1200]}", "click"),  # the Python dict some models write
        ('```json\n{"action": "system_button", "button": "Back"}\n```', "system_button"),
    ],
)
def test_each_official_atomic_action_example_parses(action: str, kind: str) -> None:
    reply = f"### Thought ###\nWhy.\n\n### Action ###\n{action}\n\n### Description ###\nWhat.\n"
    assert ma3.parse_worker_reply(reply).action.action == kind


def test_a_worker_reply_keeps_its_description_flattened_and_lands_within_1px() -> None:
    out = ma3.parse_worker_reply(
        WORKER.replace(
            '{"action":"type", "text": "the text you want to type"}',
            '{"action": "click", "coordinate": [980, 370]}',
        )
    )
    assert out.description == "Type the text."  # the Reflector's Expectation, as the official loop keeps it
    p = PROFILES["gui-owl"]
    mapper = CoordMapper(
        space=p.coords,
        screen=Size(1080, 2400),
        budget=ImageBudget(min_pixels=p.min_pixels, max_pixels=p.max_pixels),
    )
    x, y = mapper.to_screen(980, 370)
    # the official abs path: the model's pixel of the 1092x2408 image, scaled to the 1080x2400 screen
    assert abs(x - 980 * 1080 / 1092) <= 1 and abs(y - 370 * 2400 / 2408) <= 1


def test_actions_the_official_worker_prompt_does_not_list_are_refused() -> None:
    for action in ('{"action": "open_app", "text": "Clock"}', '{"action": "terminate", "status": "success"}'):
        with pytest.raises(ParseError, match="not available"):
            ma3.parse_worker_reply(f"### Thought ###\nx\n### Action ###\n{action}\n### Description ###\ny")


@pytest.mark.parametrize(
    ("reply", "outcome", "error"),
    [
        ("### Outcome ###\nA\n\n### Error Description ###\nNone\n", "A", ""),
        (
            "### Outcome ###\nB: Failed. The last action results in a wrong page.\n\n### Error Description ###\nThe Stopwatch\ntab opened.\n",
            "B",
            "The Stopwatch tab opened.",
        ),
        (
            '### Outcome ###\n"C"\n\n### Error Description ###\nThe swipe changed nothing: the list is at its end.\n',
            "C",
            "The swipe changed nothing: the list is at its end.",
        ),
    ],
)
def test_official_reflector_replies_give_the_official_outcomes(reply: str, outcome: str, error: str) -> None:
    out = ma3.parse_reflector_reply(reply)
    assert (out.outcome.value, out.error_description) == (outcome, error)


def test_notetaker_replies_replace_the_notes_flattened_and_junk_is_refused() -> None:
    out = ma3.parse_notetaker_reply("### Important Notes ###\n- The 7:00 alarm is on.\n- Snooze: 10 min.\n")
    assert out.notes == "- The 7:00 alarm is on. - Snooze: 10 min."
    with pytest.raises(ParseError):
        ma3.parse_notetaker_reply("I noted it.")


# -- end to end: a scripted GUI-Owl plays the four roles over HTTP -------------------------------
FIRST_LINES = {
    "track progress and devise high-level plans": "manager",
    "decide the next action to perform": "worker",
    "verify whether the last action produced": "reflector",
    "take notes of important content": "notetaker",
}


def classify(prompt: str) -> str:
    return next(role for phrase, role in FIRST_LINES.items() if phrase in prompt.split("\n", 1)[0])


def to_model(point: list[float]) -> list[int]:
    """A screen pixel of SimPhone's 1080x2400 screen in GUI-Owl's space (the resized image)."""
    p = PROFILES["gui-owl"]
    mapper = CoordMapper(
        space=p.coords,
        screen=Size(1080, 2400),
        budget=ImageBudget(min_pixels=p.min_pixels, max_pixels=p.max_pixels),
    )
    x, y = mapper.from_screen(*point)
    return [round(x), round(y)]


def test_gui_owl_plays_the_four_official_roles_and_completes_a_checked_simphone_task(tmp_path: Path) -> None:
    oracle = oracle_actions()  # open_app Clock, tap the switch, terminate
    assert [a["action"] for a in oracle] == ["open_app", "click", "terminate"]
    clock_icon = [150.0, 414.0]  # the home screen's Clock icon: the official list has no open_app
    moves = [
        ("Tap the Clock icon.", to_model(clock_icon)),
        ("Tap the switch of the 7:00 alarm.", to_model(oracle[1]["coordinate"])),
    ]
    worker = [
        f"### Thought ###\nStep {i}.\n\n### Action ###\n{{'action': 'click', 'coordinate': {point}}}\n\n### Description ###\n{d}\n"
        for i, (d, point) in enumerate(moves)
    ]
    manager = [
        MANAGER_FIRST,
        MANAGER_UPDATE,
        "### Thought ###\nThe alarm is on.\n\n### Historical Operations ###\nTurned on the 7:00 alarm. Opened the Clock app.\n\n### Plan ###\nFinished\n",
    ]
    script = {
        "manager": nth(manager),
        "worker": nth(worker),
        "reflector": "### Outcome ###\nA\n\n### Error Description ###\nNone\n",
        "notetaker": "### Important Notes ###\nThe 7:00 alarm\nis on.\n",
    }
    with ScriptedOpenAIServer(script, classify=classify, model="mPLUG/GUI-Owl-7B") as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "auto"\nretries = 0\ntimeout_s = 10\n'
            "[roles.rag]\nenabled = false\n",
            encoding="utf-8",
        )
        args = [
            "--task-id",
            f"{TASK}/{SEED}",
            "--graph",
            "mobile_agent_v3",
            "--config",
            str(cfg),
            "--runs-dir",
            "runs",
        ]
        p = cli("run", *args, "--json", cwd=tmp_path)
        requests = list(srv.requests)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "completed" and out["verified"] is True, out
    loaded = load_run(tmp_path / out["run_dir"])
    assert {c.extra.get("profile") for c in loaded.calls} == {"gui-owl"}  # chosen by `auto`, every role
    assert {c.role for c in loaded.calls} == {"manager", "worker", "reflector", "notetaker"}
    texts: dict[str, list[str]] = {}
    for r in requests:
        (message,) = r["messages"]  # one user turn: the text, then the PNG screenshots
        text, *images = message["content"]
        assert message["role"] == "user" and all(
            i["image_url"]["url"].startswith("data:image/png;base64,") for i in images
        )
        role = classify(text["text"])
        assert len(images) == (2 if role == "reflector" else 1)
        texts.setdefault(role, []).append(text["text"])
    assert (
        "### Overall Plan ###\n1. Turn on the 7:00 alarm\n\n### Current Subgoal ###\n1. Turn on the 7:00 alar\n\n### Progress Status ###\nNo completed subgoal.\n\n"
        in texts["worker"][1]
    )
    assert "Action: {'action': 'click', 'coordinate': " in texts["worker"][1]
    assert "### Important Notes ###\nThe 7:00 alarm is on.\n\n" in texts["manager"][2]
    assert (
        "### Historical Operations ###\nOperations that have been completed before:\nOpened the Clock app.\n\n"
        in texts["manager"][2]
    )
    assert "Expectation: Tap the switch of the 7:00 alarm.\n" in texts["reflector"][1]


OFFICIAL: dict[str, Any] = {
    "manager_init": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "You are an agent who can operate an Android phone on behalf of a user. Your goal is to track progress and devise high-level plans to achieve the user's requests.\n\n### User Request ###\nTurn on the 7:00 alarm in Clock\n\n---\nMake a high-level plan to achieve the user's request. If the request is complex, break it down into subgoals. The screenshot displays the starting state of the phone.\nIMPORTANT: For requests that explicitly require an answer, always add 'perform the `answer` action' as the last step to the plan!\n\n### Guidelines ###\nThe following guidelines will help you plan this request.\nGeneral:\nUse search to quickly find a file or entry with a specific name, if search function is applicable.\nTask-specific:\n[add_info]\n\nProvide your output in the following format which contains two parts:\n### Thought ###\nA detailed explanation of your rationale for the plan and subgoals.\n\n### Plan ###\n1. first subgoal\n2. second subgoal\n...\n",
                },
                {"type": "image", "ref": "screens/0000.png"},
            ],
        }
    ],
    "worker": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": 'You are an agent who can operate an Android phone on behalf of a user. Your goal is to decide the next action to perform based on the current state of the phone and the user\'s request.\n\n### User Request ###\nTurn on the 7:00 alarm in Clock\n\n### Overall Plan ###\n1. Open the Alarm tab 2. Turn on the 7:00 alarm 3. Check that it is on 4. Go back home\n\n### Current Subgoal ###\n1. Open the Alarm tab 2. Turn on the 7:00 alarm 3. Check that it is on\n\n### Progress Status ###\nNo completed subgoal.\n\n### Guidelines ###\nIf you\'ve activated an input field, you\'ll see "ADB Keyboard {on}" at the bottom of the screen. This phone doesn\'t display a soft keyboard. So, if you see "ADB Keyboard {on}" at the bottom of the screen, it means you can type. Otherwise, you\'ll need to tap the correct input field to activate it.\n\n---\nCarefully examine all the information provided above and decide on the next action to perform. If you notice an unsolved error in the previous action, think as a human user and attempt to rectify them. You must choose your action from one of the atomic actions.\n\n#### Atomic Actions ####\nThe atomic action functions are listed in the format of `action(arguments): description` as follows:\n- answer(text): Answer user\'s question. Usage example: {"action": "answer", "text": "the content of your answer"}\n- click(coordinate): Click the point on the screen with specified (x, y) coordinates. Usage Example: {"action": "click", "coordinate": [x, y]}\n- long_press(coordinate): Long press on the position (x, y) on the screen. Usage Example: {"action": "long_press", "coordinate": [x, y]}\n- type(text): Type text into current activated input box or text field. If you have activated the input box, you can see the words "ADB Keyboard {on}" at the bottom of the screen. If not, click the input box to confirm again. Please make sure the correct input box has been activated before typing. Usage Example: {"action": "type", "text": "the text you want to type"}\n- system_button(button): Press a system button, including back, home, and enter. Usage example: {"action": "system_button", "button": "Home"}\n- swipe(coordinate, coordinate2): Scroll from the position with coordinate to the position with coordinate2. Please make sure the start and end points of your swipe are within the swipeable area and away from the keyboard (y1 < 1400). Usage Example: {"action": "swipe", "coordinate": [x1, y1], "coordinate2": [x2, y2]}\n\n### Latest Action History ###\nRecent actions you took previously and whether they were successful:\nAction: {\'action\': \'click\', \'coordinate\': [151, 415]} | Description: Tap the Clock icon on the home screen. | Outcome: Successful\nAction: {\'action\': \'invalid\'} | Description:  | Outcome: Failed | Feedback: invalid action format, do nothing.\nAction: {\'action\': \'swipe\', \'coordinate\': [546, 1600], \'coordinate2\': [546, 800]} | Description: Swipe up on the alarm list. | Outcome: Failed | Feedback: The screen did not change: the list is at its end.\n\n---\nIMPORTANT:\n1. Do NOT repeat previously failed actions multiple times. Try changing to another action.\n2. Please prioritize the current subgoal.\n\nProvide your output in the following format, which contains three parts:\n### Thought ###\nProvide a detailed explanation of your rationale for the chosen action.\n\n### Action ###\nChoose only one action or shortcut from the options provided.\nYou must provide your decision using a valid JSON format specifying the `action` and the arguments of the action. For example, if you want to type some text, you should write {"action":"type", "text": "the text you want to type"}.\n\n### Description ###\nA brief description of the chosen action. Do not describe expected outcome.\n',
                },
                {"type": "image", "ref": "screens/0003.png"},
            ],
        }
    ],
    "reflector": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": 'You are an agent who can operate an Android phone on behalf of a user. Your goal is to verify whether the last action produced the expected behavior and to keep track of the overall progress.\n\n### User Request ###\nTurn on the 7:00 alarm in Clock\n\n### Progress Status ###\nOpened the Clock app.\n\n---\nThe two attached images are phone screenshots taken before and after your last action. \n---\n### Latest Action ###\nAction: {\'action\': \'click\', \'coordinate\': [980, 370]}\nExpectation: Tap the switch of the 7:00 alarm.\n\n---\nCarefully examine the information provided above to determine whether the last action produced the expected behavior. If the action was successful, update the progress status accordingly. If the action failed, identify the failure mode and provide reasoning on the potential reason causing this failure.\n\nNote: For swiping to scroll the screen to view more content, if the content displayed before and after the swipe is exactly the same, the swipe is considered to be C: Failed. The last action produces no changes. This may be because the content has been scrolled to the bottom.\n\nProvide your output in the following format containing two parts:\n### Outcome ###\nChoose from the following options. Give your response as "A", "B" or "C":\nA: Successful or Partially Successful. The result of the last action meets the expectation.\nB: Failed. The last action results in a wrong page. I need to return to the previous state.\nC: Failed. The last action produces no changes.\n\n### Error Description ###\nIf the action failed, provide a detailed description of the error and the potential reason causing this failure. If the action succeeded, put "None" here.\n',
                },
                {"type": "image", "ref": "screens/0003.png"},
                {"type": "image", "ref": "screens/0004.png"},
            ],
        }
    ],
    "notetaker": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "You are a helpful AI assistant for operating mobile phones. Your goal is to take notes of important content relevant to the user's request.\n\n### User Request ###\nTurn on the 7:00 alarm in Clock\n\n### Progress Status ###\nOpened the Clock app.\n\n### Existing Important Notes ###\n- The 7:00 alarm is off.\n\n---\nCarefully examine the information above to identify any important content on the current screen that needs to be recorded.\nIMPORTANT:\nDo not take notes on low-level actions; only keep track of significant textual or visual information relevant to the user's request. Do not repeat user request or progress status. Do not make up content that you are not sure about.\n\nProvide your output in the following format:\n### Important Notes ###\nThe updated important notes, combining the old and new ones. If nothing new to record, copy the existing important notes.\n",
                },
                {"type": "image", "ref": "screens/0004.png"},
            ],
        }
    ],
    "manager_update": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "You are an agent who can operate an Android phone on behalf of a user. Your goal is to track progress and devise high-level plans to achieve the user's requests.\n\n### User Request ###\nTurn on the 7:00 alarm in Clock\n\n### Historical Operations ###\nOperations that have been completed before:\nOpened the Clock app.\n\n### Plan ###\n1. Open the Alarm tab 2. Turn on the 7:00 alarm 3. Check that it is on 4. Go back home\n\n### Last Action ###\n{'action': 'swipe', 'coordinate': [546, 1600], 'coordinate2': [546, 800]}\n\n### Last Action Description ###\nSwipe up on the alarm list.\n\n### Important Notes ###\n- The 7:00 alarm is off.\n\n### Guidelines ###\nThe following guidelines will help you plan this request.\nGeneral:\nUse search to quickly find a file or entry with a specific name, if search function is applicable.\nTask-specific:\n[add_info]\n\n### Potentially Stuck! ###\nYou have encountered several failed attempts. Here are some logs:\n- Attempt: Action: {'action': 'invalid'} | Description:  | Outcome: Failed | Feedback: invalid action format, do nothing.\n- Attempt: Action: {'action': 'swipe', 'coordinate': [546, 1600], 'coordinate2': [546, 800]} | Description: Swipe up on the alarm list. | Outcome: Failed | Feedback: The screen did not change: the list is at its end.\n---\nCarefully assess the current status and the provided screenshot. Check if the current plan needs to be revised.\n Determine if the user request has been fully completed. If you are confident that no further actions are required, mark the plan as \"Finished\" in your output. If the user request is not finished, update the plan. If you are stuck with errors, think step by step about whether the overall plan needs to be revised to address the error.\nNOTE: 1. If the current situation prevents proceeding with the original plan or requires clarification from the user, make reasonable assumptions and revise the plan accordingly. Act as though you are the user in such cases. 2. Please refer to the helpful information and steps in the Guidelines first for planning. 3. If the first subgoal in plan has been completed, please update the plan in time according to the screenshot and progress to ensure that the next subgoal is always the first item in the plan. 4. If the first subgoal is not completed, please copy the previous round's plan or update the plan based on the completion of the subgoal.\nIMPORTANT: If the next steps require an `answer` action, make sure that there is a plan to perform the `answer` action. In this case, you should not mark the plan as \"Finished\" unless the last action is `answer`.\nProvide your output in the following format, which contains three parts:\n\n### Thought ###\nAn explanation of your rationale for the updated plan and current subgoal.\n\n### Historical Operations ###\nTry to add the most recently completed subgoal on top of the existing historical operations. Please do not delete any existing historical operation. If there is no newly completed subgoal, just copy the existing historical operations.\n\n### Plan ###\nPlease update or copy the existing plan according to the current page and progress. Please pay close attention to the historical operations. Please do not repeat the plan of completed content unless you can judge from the screen status that a subgoal is indeed not completed.\n",
                },
                {"type": "image", "ref": "screens/0003.png"},
            ],
        }
    ],
}
