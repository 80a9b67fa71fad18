"""Algorithm 1 on SimPhone with scripted role models: success, replanning, stop rules, notes."""

from __future__ import annotations

import json
import random

import pytest

from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig
from agent_runtime.coords import CoordMapper, CoordSpace
from agent_runtime.events import (
    ActionExecuted,
    NotesEvent,
    RoleOutputEvent,
    RunFinished,
    RunStarted,
    StepStarted,
    VerdictEvent,
)
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, manager_reply, notetaker_reply, reflector_reply, worker_reply

SETTINGS = "com.android.settings"
LAUNCHER = "com.android.launcher3"


def make_config(**graph) -> RuntimeConfig:
    return RuntimeConfig(roles={"rag": RoleConfig(enabled=False)}, graph=GraphConfig(**graph))


def manager_and_worker_only(**graph) -> RuntimeConfig:
    """The demo model's setup: no Reflector (and no Notetaker) judges the steps."""
    off = RoleConfig(enabled=False)
    return RuntimeConfig(roles={"rag": off, "reflector": off, "notetaker": off}, graph=GraphConfig(**graph))


def click_at_screen(phone: SimPhone, x: int, y: int) -> dict:
    """A click on screen pixel (x, y), written in the model's (resized-pixel) space."""
    mx, my = CoordMapper(space=CoordSpace.PIXELS_RESIZED, screen=phone.observe().size).from_screen(x, y)
    return {"action": "click", "coordinate": [round(mx), round(my)]}


def phone_with_wifi_off(seed: int = 0) -> SimPhone:
    phone = SimPhone(seed=seed)
    phone.app(SETTINGS).state.wifi = False
    return phone


def element(phone: SimPhone, label: str, cls: str | None = None):
    for e in phone.observe().elements:
        if e.label == label and (cls is None or e.class_name.endswith(cls)):
            return e
    raise AssertionError(f"no {label!r} on screen:\n{phone.observe().compressed_tree()}")


def click_on(phone: SimPhone, label: str, cls: str | None = None, space=CoordSpace.PIXELS_RESIZED) -> dict:
    """A click on an element's centre, in the model's coordinate space (what a VLM would write)."""
    obs = phone.observe()
    x, y = element(phone, label, cls).bounds.center
    mx, my = CoordMapper(space=space, screen=obs.size).from_screen(x, y)
    return {"action": "click", "coordinate": [round(mx), round(my)]}


def wifi_worker(phone: SimPhone):
    """Reads the phone's UI tree and picks the next click towards turning Wi-Fi on."""

    def reply(call) -> str:
        obs = phone.observe()
        labels = {e.label for e in obs.elements}
        if obs.app == LAUNCHER:
            return worker_reply(click_on(phone, "Settings"), "Open Settings")
        if "Airplane mode" in labels:
            return worker_reply(click_on(phone, "Wi-Fi", "Switch"), "Turn the Wi-Fi switch on")
        if "Network & internet" in labels:
            return worker_reply(click_on(phone, "Network & internet"), "Open Network & internet")
        return worker_reply({"action": "system_button", "button": "Back"}, "Go back")

    return reply


def wifi_manager(phone: SimPhone):
    def reply(call) -> str:
        if phone.app(SETTINGS).state.wifi:
            return manager_reply("Finished", completed=["Turned Wi-Fi on"])
        return manager_reply(["Open Settings", "Open Network & internet", "Turn on Wi-Fi"])

    return reply


def run(phone, script, config=None, tmp_path=None, **kw):
    model = ScriptedChatModel(script=script)
    rt = Runtime(
        config or make_config(),
        models=dict.fromkeys(("manager", "worker", "reflector", "notetaker"), model),
        runs_dir=tmp_path,
    )
    events = list(rt.stream(kw.pop("task", "Turn on Wi-Fi"), device=phone, **kw))
    return model, events


def test_success_path_turns_on_wifi(tmp_path):
    phone = phone_with_wifi_off()
    script = {
        "manager": wifi_manager(phone),
        "worker": wifi_worker(phone),
        "reflector": reflector_reply("A"),
        "notetaker": notetaker_reply("- Wi-Fi was off at the start"),
    }
    model, events = run(phone, script, tmp_path=tmp_path)
    finished = events[-1]
    assert isinstance(events[0], RunStarted) and isinstance(finished, RunFinished)
    assert phone.app(SETTINGS).state.wifi is True
    assert finished.status == "completed" and finished.success and finished.steps == 3

    loaded = load_run(finished.run_dir)
    assert loaded.run.status == "completed" and loaded.run.success is True and loaded.run.steps == 3
    assert [s.step for s in loaded.steps] == [0, 1, 2]
    # Raw model coordinates and the executed screen coordinates are both recorded; the screen
    # point is the centre of the element the script aimed at.
    last = loaded.steps[-1]
    assert last.action["coordinate"] != last.action_screen["coordinate"]
    sx, sy = last.action_screen["coordinate"]
    switch = element(phone, "Wi-Fi", "Switch")
    assert abs(sx - switch.bounds.center[0]) <= 1 and abs(sy - switch.bounds.center[1]) <= 1
    assert last.verdict.outcome == "A" and last.notes == "- Wi-Fi was off at the start"
    assert last.before_screen == "screens/0002.png" and last.after_screen == "screens/0003.png"
    for ref in (last.before_screen, last.after_screen):
        assert loaded.screen(ref).startswith(b"\x89PNG")
    # Critical path: Worker + Reflector + Manager on the path, the Notetaker beside it.
    for key in (
        "worker",
        "execute",
        "observe",
        "reflector",
        "notetaker",
        "manager",
        "critical_path",
        "overhead",
    ):
        assert key in last.timings_ms, key
    assert last.timings_ms["critical_calls"] == 3
    roles = [c.role for c in loaded.calls]
    assert roles.count("worker") == 3 and roles.count("reflector") == 3 and roles.count("notetaker") == 3
    assert roles.count("manager") == 4  # init + one update per step
    assert all(c.valid for c in loaded.calls)
    assert loaded.run.models["worker"]["coords"] == "pixels_resized"
    assert loaded.run.device["spec"] == "simphone:0"
    assert "api_key" not in json.dumps(loaded.run.config)
    assert loaded.run.tokens.total_tokens > 0
    # Events: each step starts, the action is executed, a verdict follows.
    kinds = [type(e).__name__ for e in events]
    assert (
        kinds.count("StepStarted") == 3
        and kinds.count("ActionExecuted") == 3
        and kinds.count("VerdictEvent") == 3
    )
    # The Worker saw the screen and the screen size in its own space.
    assert all(c.n_images == 1 for c in model.calls_for("worker"))
    assert all(c.n_images == 2 for c in model.calls_for("reflector"))
    assert "1092x2408" in model.calls_for("worker")[0].prompt


def test_failures_replan_with_stuck_block_and_notes_only_on_success(tmp_path):
    phone = phone_with_wifi_off()
    good = wifi_worker(phone)
    blank = {"action": "click", "coordinate": [546, 1700]}  # empty launcher area: nothing happens

    def worker(call):
        return worker_reply(blank, "tap the empty area") if call.index < 2 else good(call)

    def reflect(call):
        return (
            reflector_reply("C", "Nothing changed after tapping the empty area.")
            if call.index < 2
            else "### Outcome ###\nA"
        )

    def notes(call):
        return notetaker_reply(f"- note from call {call.index}")

    script = {"manager": wifi_manager(phone), "worker": worker, "reflector": reflect, "notetaker": notes}
    model, events = run(phone, script, tmp_path=tmp_path)
    assert events[-1].status == "completed" and phone.app(SETTINGS).state.wifi

    manager_prompts = [c.prompt for c in model.calls_for("manager")]
    assert "Potentially Stuck" not in manager_prompts[1]  # one failure: not yet
    stuck = manager_prompts[2]  # after two consecutive failures
    assert "### Potentially Stuck! ###" in stuck
    assert (
        stuck.count("- Attempt: Action: ") == 2
        and "Feedback: Nothing changed after tapping the empty area." in stuck
    )
    assert "Potentially Stuck" not in manager_prompts[3]  # a success resets the count
    # Worker sees the failure feedback and the history with outcomes.
    second_worker = model.calls_for("worker")[1].prompt
    assert "Outcome: Failed | Feedback: Nothing changed" in second_worker

    # The Notetaker ran speculatively for every executed step, but only successful steps kept notes.
    assert len(model.calls_for("notetaker")) == 5
    notes_events = [e for e in events if isinstance(e, NotesEvent)]
    assert [e.used for e in notes_events] == [False, False, True, True, True]
    loaded = load_run(events[-1].run_dir)
    assert [s.verdict.outcome for s in loaded.steps] == ["C", "C", "A", "A", "A"]
    assert loaded.steps[1].notes == ""  # failed steps keep no notes
    assert (
        "note from call 0" not in loaded.steps[-1].notes and "note from call 1" not in loaded.steps[-1].notes
    )
    assert "note from call 2" in loaded.steps[-1].notes
    # The notes reach the Manager and Worker prompts.
    assert "note from call 2" in model.calls_for("worker")[3].prompt


def test_answer_action_ends_the_run_with_the_answer(tmp_path):
    phone = SimPhone(seed=0)
    script = {
        "manager": manager_reply(["Read the battery level", "Perform the answer action"]),
        "worker": worker_reply({"action": "answer", "text": "40%"}, "Answer the question"),
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
    }
    model, events = run(phone, script, tmp_path=tmp_path, task="What is the battery level?")
    end = events[-1]
    assert end.status == "completed" and end.success and end.answer == "40%" and end.steps == 1
    loaded = load_run(end.run_dir)
    assert loaded.run.answer == "40%" and loaded.steps[0].action == {"action": "answer", "text": "40%"}
    assert not model.calls_for("reflector")  # nothing executed, nothing to judge


def test_terminate_failure_fails_the_run(tmp_path):
    script = {
        "manager": manager_reply(["Do the impossible"]),
        "worker": worker_reply({"action": "terminate", "status": "failure"}),
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
    }
    _, events = run(SimPhone(seed=0), script, tmp_path=tmp_path)
    assert events[-1].status == "failed" and not events[-1].success


def test_max_steps_exit(tmp_path):
    phone = SimPhone(seed=0)
    swipes = [
        {"action": "swipe", "coordinate": [500, 1500], "coordinate2": [500, 500 + i]} for i in range(10)
    ]
    script = {
        "manager": manager_reply(["Scroll forever"]),
        "worker": [worker_reply(s) for s in swipes],
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
    }
    model, events = run(phone, script, tmp_path=tmp_path, max_steps=3)
    assert events[-1].status == "max_steps" and events[-1].steps == 3 and not events[-1].success
    assert len(model.calls_for("worker")) == 3


def test_stalemate_after_consecutive_failures(tmp_path):
    swipes = [
        {"action": "swipe", "coordinate": [500, 1500], "coordinate2": [500, 500 + i]} for i in range(20)
    ]
    script = {
        "manager": manager_reply(["Find it"]),
        "worker": [worker_reply(s) for s in swipes],
        "reflector": reflector_reply("C", "no change"),
        "notetaker": notetaker_reply("None"),
    }
    cfg = make_config(stuck_after=2, give_up_after=2, max_steps=20)
    model, events = run(SimPhone(seed=0), script, config=cfg, tmp_path=tmp_path)
    end = events[-1]
    assert end.status == "gave_up" and end.steps == 4 and "4 consecutive failed steps" in end.reason
    # The Manager replanned after every step but the last, with the stuck block from failure 2 on.
    prompts = [c.prompt for c in model.calls_for("manager")]
    assert len(prompts) == 4 and ["Potentially Stuck" in p for p in prompts] == [False, False, True, True]


def test_identical_actions_count_as_stalemate_but_swipes_are_exempt(tmp_path):
    tap = {"action": "click", "coordinate": [546, 1700]}
    script = {
        "manager": manager_reply(["Tap"]),
        "worker": worker_reply(tap),
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
    }
    model, events = run(SimPhone(seed=0), script, config=make_config(repeat_limit=3), tmp_path=tmp_path)
    end = events[-1]
    assert end.status == "gave_up" and "same action 3 times" in end.reason
    assert sum(isinstance(e, ActionExecuted) for e in events) == 2 and end.steps == 3

    swipe = {"action": "swipe", "coordinate": [500, 1500], "coordinate2": [500, 500]}
    script["worker"] = worker_reply(swipe)
    _, events = run(
        SimPhone(seed=0), script, config=make_config(repeat_limit=3, max_steps=5), tmp_path=tmp_path
    )
    assert events[-1].status == "max_steps"


def test_malformed_replies_never_crash_the_run(tmp_path):
    script = {
        "manager": "no plan here",
        "worker": ["I would tap", '### Action ###\n{"action": "click"}', "{'action': 'fly'}"],
        "reflector": "hmm",
        "notetaker": "??",
    }
    cfg = make_config(stuck_after=1, give_up_after=1, reask=2)
    model, events = run(SimPhone(seed=0), script, config=cfg, tmp_path=tmp_path)
    end = events[-1]
    assert end.status == "gave_up" and end.steps == 2
    loaded = load_run(end.run_dir)
    assert all(s.format_failure and s.verdict.outcome == "C" for s in loaded.steps)
    worker_calls = loaded.calls_for("worker")
    assert len(worker_calls) == 6 and [c.attempt for c in worker_calls] == [0, 1, 2, 0, 1, 2]
    assert all(c.parse_error for c in worker_calls)
    assert "coordinate" in worker_calls[1].parse_error and "unknown action" in worker_calls[2].parse_error
    # An unparseable first plan falls back to the request itself as the only subgoal.
    assert loaded.steps[0].subgoal == "Turn on Wi-Fi"
    role_errors = [e for e in events if isinstance(e, RoleOutputEvent) and e.error]
    assert {e.role for e in role_errors} == {"manager", "worker"}


def test_device_reported_failure_is_never_success(tmp_path):
    script = {
        "manager": manager_reply(["Open Foo"]),
        "worker": [
            worker_reply({"action": "open_app", "text": "Foo"}),
            worker_reply({"action": "terminate", "status": "failure"}),
        ],
        "reflector": "### Outcome ###\nA\n### Error Description ###\nNone",  # a lenient reflector
        "notetaker": notetaker_reply("- should be discarded"),
    }
    _, events = run(SimPhone(seed=0), script, tmp_path=tmp_path)
    verdict = next(e for e in events if isinstance(e, VerdictEvent))
    assert verdict.outcome == "C" and "no app named 'Foo'" in verdict.feedback
    assert next(e for e in events if isinstance(e, NotesEvent)).used is False


def test_model_server_failure_ends_with_status_error(tmp_path):
    def dead(call):
        raise ConnectionError("connection refused")

    script = {"manager": manager_reply(["x"]), "worker": dead, "reflector": "A", "notetaker": "None"}
    _, events = run(SimPhone(seed=0), script, tmp_path=tmp_path)
    end = events[-1]
    assert end.status == "error" and not end.success and "connection refused" in end.error["message"]
    loaded = load_run(end.run_dir)
    assert loaded.run.status == "error" and loaded.run.error["type"] == "ModelError"
    assert [c.role for c in loaded.calls] == ["manager"]


def test_events_are_typed_and_ordered(tmp_path):
    phone = phone_with_wifi_off()
    script = {
        "manager": wifi_manager(phone),
        "worker": wifi_worker(phone),
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
    }
    _, events = run(phone, script, tmp_path=tmp_path)
    step0 = [e for e in events if getattr(e, "step", None) == 0]
    assert [type(e) for e in step0] == [
        StepStarted,
        RoleOutputEvent,
        ActionExecuted,
        RoleOutputEvent,
        RoleOutputEvent,
        NotesEvent,
        VerdictEvent,
        RoleOutputEvent,
    ]
    assert [e.role for e in step0 if isinstance(e, RoleOutputEvent)] == [
        "worker",
        "reflector",
        "notetaker",
        "manager",
    ]
    assert all(e.to_dict()["type"] for e in events)


@pytest.mark.parametrize("space", [CoordSpace.RELATIVE_1000, CoordSpace.PIXELS])
def test_worker_coordinate_space_is_honoured(tmp_path, space):
    phone = phone_with_wifi_off()
    cfg = make_config()
    cfg.models["default"].coords = space

    def worker(call):
        obs = phone.observe()
        if obs.app == LAUNCHER:
            return worker_reply(click_on(phone, "Settings", space=space))
        return worker_reply({"action": "terminate", "status": "success"})

    script = {
        "manager": manager_reply(["Open Settings"]),
        "worker": worker,
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
    }
    _, events = run(phone, script, config=cfg, tmp_path=tmp_path)
    assert events[-1].success and phone.observe().app == SETTINGS


def _rag_script(phone):
    return {
        "manager": wifi_manager(phone),
        "worker": wifi_worker(phone),
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("None"),
        "rag": "wifi settings android",
    }


def test_rag_knowledge_reaches_the_first_plan_and_its_calls_are_traced(tmp_path, monkeypatch):
    import agent_runtime.memory as memory
    from agent_runtime.role_outputs import RagOutput

    seen = {}

    def build_knowledge(instruction, *, config, ask):
        seen["instruction"] = instruction
        query = ask(f"Write a search query for: {instruction}")
        return RagOutput(queries=[query], knowledge="Wi-Fi is under Network & internet.", sources=["doc"])

    monkeypatch.setattr(memory, "build_knowledge", build_knowledge)
    phone = phone_with_wifi_off()
    cfg = RuntimeConfig(memory={"dir": tmp_path / "mem", "experience": False})
    model = ScriptedChatModel(script=_rag_script(phone))
    roles = ("manager", "worker", "reflector", "notetaker", "rag")
    events = list(
        Runtime(cfg, models=dict.fromkeys(roles, model), runs_dir=tmp_path).stream(
            "Turn on Wi-Fi", device=phone
        )
    )
    assert events[-1].success and seen["instruction"] == "Turn on Wi-Fi"
    init = model.calls_for("manager")[0].prompt
    assert "<<<KNOWLEDGE\nWi-Fi is under Network & internet.\nKNOWLEDGE>>>" in init
    assert "Retrieved Knowledge" not in model.calls_for("manager")[1].prompt  # init only (Algorithm 1)
    rag = load_run(events[-1].run_dir).calls_for("rag")
    assert len(rag) == 1 and rag[0].step == -1 and rag[0].completion == "wifi settings android"
    rag_event = next(e for e in events if isinstance(e, RoleOutputEvent) and e.role == "rag")
    assert rag_event.output["queries"] == ["wifi settings android"]


def test_rag_without_the_extra_says_so_once_and_runs_on(tmp_path, monkeypatch):
    from agent_runtime.events import Notice
    from agent_runtime.roles import rag

    monkeypatch.setattr(rag, "RAG_PACKAGES", ("no_such_package_for_rag",))
    phone = phone_with_wifi_off()
    model = ScriptedChatModel(script=_rag_script(phone))
    roles = ("manager", "worker", "reflector", "notetaker", "rag")
    events = list(
        Runtime(RuntimeConfig(), models=dict.fromkeys(roles, model), runs_dir=tmp_path).stream(
            "Turn on Wi-Fi", device=phone
        )
    )
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "'rag' extra is not installed" in notices[0].message
    assert events[-1].success and not model.calls_for("rag")


def test_a_checkpointed_step_comes_back_typed_without_serializer_warnings(tmp_path, caplog):
    """SQLite round trip of the step in progress: its actions, device result and verdict are
    rebuilt as their types in a new connection, and LangGraph warns about no "unregistered" type."""
    import logging
    import sqlite3

    from agent_runtime.actions import ActionResult, Click, Type
    from agent_runtime.graphs.build import build_graph, initial_state, sqlite_checkpointer
    from agent_runtime.graphs.state import Step
    from agent_runtime.traces import Verdict

    step = Step(
        step=2,
        subgoal="Type the name",
        plan=["Type the name", "Save"],
        before_screen="screens/0002.png",
        after_screen="screens/0003.png",
        before_tree="[4] EditText; clickable focusable; Name; [0,0][9,9]",
        action={"action": "type", "index": 4, "text": "Ada"},
        action_screen=Type(text="Ada"),
        screen_actions=[Click(coordinate=(540.0, 1200.0)), Type(text="Ada")],
        action_result=ActionResult(ok=False, error="no field focused", data={"settle": {"ms": 12.5}}),
        verdict=Verdict.of("C", "nothing changed"),
        t0=1700000000.0,
        timings={"worker": 12.5, "execute": 3.0},
        critical_calls=2,
    )
    config = {"configurable": {"thread_id": "r"}}
    path = tmp_path / "checkpoint.sqlite"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        app = build_graph(sqlite_checkpointer(conn))
        state = initial_state("Add a contact", platform="mobile", max_steps=5)
        app.update_state(config, {**state, "pending": step}, as_node="execute")
    conn.close()

    caplog.set_level(logging.WARNING)
    with sqlite3.connect(path, check_same_thread=False) as conn:  # think: a new process resuming
        snapshot = build_graph(sqlite_checkpointer(conn)).get_state(config)
    conn.close()
    restored = snapshot.values["pending"]
    assert snapshot.next == ("reflect",)
    assert isinstance(restored, Step) and restored == step
    assert isinstance(restored.screen_actions[0], Click) and isinstance(restored.action_screen, Type)
    assert isinstance(restored.action_result, ActionResult) and isinstance(restored.verdict, Verdict)
    assert not [r for r in caplog.records if "serde" in r.name or "unregistered" in r.getMessage()]


def test_without_a_reflector_a_tap_on_nothing_is_not_success(tmp_path):
    """The issue's "tapped nothing at (659, 239)" judged SUCCESS: with no Reflector, a step whose
    screen did not change at all is outcome C; one that changed the screen is A."""
    phone = SimPhone(seed=0)
    script = {
        "manager": manager_reply(["Open Settings"]),
        "worker": [
            worker_reply(click_at_screen(phone, 659, 239), "Tap Settings"),
            worker_reply(click_on(phone, "Settings"), "Tap Settings"),
            worker_reply({"action": "terminate", "status": "failure"}),
        ],
    }
    model, events = run(phone, script, config=manager_and_worker_only(), tmp_path=tmp_path)
    executed = [e for e in events if isinstance(e, ActionExecuted)]
    assert "tapped nothing" in executed[0].message and executed[0].ok
    verdicts = [e for e in events if isinstance(e, VerdictEvent)]
    assert [(v.outcome, v.success) for v in verdicts] == [("C", False), ("A", True)]
    assert verdicts[0].feedback == "the screen did not change"
    assert {c.role for c in model.calls} == {"manager", "worker"}
    # The Manager's next call hears that the tap failed.
    assert "did not change" in model.calls_for("manager")[1].prompt
    assert events[-1].status == "failed" and not events[-1].success


#: What the issue's junk server answered: empty or "None" plans, prose, wrong JSON, half headings.
_JUNK = [
    "### Thought ###\nhmm\n### Plan ###\n",
    "### Thought ###\n\n### Historical Operations ###\nNone\n### Plan ###\nNone",
    "### Plan ###\n-\n",
    "### Plan ###\n1.\n2.",
    "lorem ipsum dolor",
    "{'plan': []}",
    '{"action": 7}',
    "### Action ###\nclick it\n### Description ###\nok",
    "### Outcome ###\n\n### Error Description ###\n",
    "<tool_call>{{{</tool_call>",
    "",
]


@pytest.mark.parametrize("seed", range(6))
def test_junk_from_every_role_never_ends_completed(tmp_path, seed):
    """Turn off Wi-Fi against junk answers: 3 of 6 such runs used to end "completed after 0
    steps (the Manager marked the plan Finished)". Junk is a format error, never success."""
    rng = random.Random(seed)
    phone = SimPhone(seed=seed)

    def junk(call) -> str:
        if call.role == "worker" and rng.random() < 0.4:  # valid JSON tapping empty space
            return worker_reply(click_at_screen(phone, 659, 239), "Tap Wi-Fi")
        return rng.choice(_JUNK)

    script = dict.fromkeys(("manager", "worker"), junk)
    cfg = manager_and_worker_only(max_steps=4, reask=1)
    _, events = run(phone, script, config=cfg, tmp_path=tmp_path, task="Turn off Wi-Fi")
    end = events[-1]
    assert isinstance(end, RunFinished)
    assert end.status in {"gave_up", "max_steps"} and not end.success, end.reason
    assert not any(e.success for e in events if isinstance(e, VerdictEvent))
    loaded = load_run(end.run_dir)
    assert loaded.run.status == end.status and loaded.run.success is False
