"""A new user's own words on SimPhone: every run is checked, on the phone it used.

Five goals of the kind a new user types are played through ``agent-runtime run`` as a real
subprocess against a scripted model server: once by a model that opens an app and claims success
without doing the task (what the issue saw), once by a model that plays the expert's actions. The
claims never exit 0 and never read "completed"; the work done right is verified.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.actions import Action
from agent_runtime.checks import GoalCheck, StateChangeCheck, TaskCheck, plan_check
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.tasks import OracleUI, make_task
from agent_runtime.simphone.tasks.freetext import parse_goal, time_readings
from agent_runtime.simphone.tasks.statecheck import judge, read_intent, snapshot
from tests.doubles import ScriptedOpenAIServer, manager_reply, worker_reply

ROOT = Path(__file__).resolve().parents[1]
TERMINATE = {"action": "terminate", "status": "success"}
Script = Callable[[OracleUI], Iterator[Action]]


def _oracle(goal: str) -> Script:
    """The expert's actions for ``goal`` as SimPhone reads it on the default phone."""
    parsed = parse_goal(goal, 0)
    assert parsed is not None
    return parsed.tasks[0].solve


def _note(ui: OracleUI) -> Iterator[Action]:
    yield ui.open_app("Notes")
    yield from ui.tap(desc="New note")
    yield from ui.type_into(None, "Buy milk", rid="note_body")
    yield from ui.tap(desc="Save")


def _open(app: str, *then: dict[str, Any]) -> Script:
    def script(ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(app)
        for query in then:
            yield from ui.tap(**query)

    return script


#: goal → (a model that claims success without doing it, a model that does it)
ALARM, AIRPLANE, NOTE, TEXT, TIMER = (
    "Set an alarm for 6:45",
    "Turn on airplane mode",
    "Add a note saying buy milk",
    "Text Nina Dubois: running late",
    "Start a timer for 10 minutes",
)
#: goal → (a model that claims success without doing it, a model that does it)
TASKS: dict[str, tuple[Script, Script]] = {
    # The issue's: it opened the existing 6:30 alarm's edit screen and said done.
    ALARM: (_open("Clock", {"text": "6:30 AM", "rid": "digital_clock"}), _oracle(ALARM)),
    AIRPLANE: (_open("Settings", {"text": "Network & internet", "cls": "TextView"}), _oracle(AIRPLANE)),
    NOTE: (_open("Notes"), _note),
    TEXT: (_open("Messages"), _oracle(TEXT)),
    TIMER: (_open("Clock", {"text": "Timer", "cls": "TextView"}), _oracle(TIMER)),
}


def actions(script: Script) -> list[dict[str, Any]]:
    """``script`` played on a replica of the run's phone (SimPhone is deterministic): the actions
    a scripted Worker replays, in screen pixels, then "done"."""
    phone = SimPhone(0)
    ui = OracleUI(phone.observe(), task_name="replica")
    out: list[dict[str, Any]] = []
    for action in script(ui):
        out.append(action.to_json())
        phone.execute(action)
        ui.screen = phone.observe()
    return [*out, TERMINATE]


def start_run(
    tmp: Path, goal: str, steps: list[dict[str, Any]], srv: ScriptedOpenAIServer
) -> subprocess.Popen[str]:
    """``agent-runtime run GOAL --json`` as a user starts it, in its own process."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = tmp / "c.toml"
    cfg.write_text(
        f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "scripted"\ncoords = "pixels"\nretries = 0\n'
        "timeout_s = 20\n[roles.rag]\nenabled = false\n[roles.reflector]\nenabled = false\n"
        "[roles.notetaker]\nenabled = false\n",
        encoding="utf-8",
    )
    env = {**os.environ, "HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / ".config"), "COLUMNS": "400"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "agent_runtime.cli", "run", goal, "--json", "-c", str(cfg)]
    return subprocess.Popen(
        [*command, "--runs-dir", str(tmp / "runs"), "--max-steps", str(len(steps) + 2)],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def play_all(tmp_path: Path, which: int) -> dict[str, tuple[int, dict[str, Any], str]]:
    """Every goal of :data:`TASKS` played at once by its ``which`` script: exit code, JSON, stderr."""
    servers, procs = {}, {}
    try:
        for i, (goal, scripts) in enumerate(TASKS.items()):
            steps = actions(scripts[which])
            script = {"manager": manager_reply([goal]), "worker": [worker_reply(a) for a in steps]}
            servers[goal] = ScriptedOpenAIServer(script).__enter__()
            procs[goal] = start_run(tmp_path / str(i), goal, steps, servers[goal])
        out = {}
        for goal, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=180)
            out[goal] = (proc.returncode, json.loads(stdout.strip().splitlines()[-1]), stderr)
        return out
    finally:
        for proc in procs.values():
            proc.kill()
        for srv in servers.values():
            srv.__exit__(None, None, None)


def summary(stderr: str) -> str:
    """The line a run ends with (its outcome word first)."""
    return [line for line in stderr.splitlines() if re.match(r"\w+ after \d+ steps?\b", line)][-1]


@pytest.mark.slow  # five runs at once, each its own process (~20 s on 2 cores)
def test_claims_without_the_work_never_exit_0_nor_read_completed(tmp_path):
    for goal, (code, out, err) in play_all(tmp_path, 0).items():
        assert code != 0, (goal, err)
        assert out["success"] is True and out["status"] == "completed", (goal, out)  # the claim
        assert out["verified"] is False and out["outcome"] == "failed_check", (goal, out)
        final = summary(err)
        assert not final.startswith("completed"), (goal, err)
        assert final.startswith("failed after") and "the agent says it is done" in final, (goal, err)
        run = json.loads((Path(out["run_dir"]) / "run.json").read_text())
        assert run["device"]["spec"] == "simphone:0", goal  # the phone asked for, not another seed's


@pytest.mark.slow  # five runs at once, each its own process (~20 s on 2 cores)
def test_the_same_goals_done_right_are_verified(tmp_path):
    for goal, (code, out, err) in play_all(tmp_path, 1).items():
        assert code == 0, (goal, err)
        assert out["verified"] is True and out["outcome"] == "verified", (goal, out)
        final = summary(err)
        assert final.startswith("completed after") and "verified by SimPhone" in final, (goal, err)


# -- the parts, in-process --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "readings"),
    [("6:45", [(6, 45), (18, 45)]), ("6:45 PM", [(18, 45)]), ("18:45", [(18, 45)]), ("12:10 am", [(0, 10)])],
)
def test_times_are_read_as_people_write_them(text, readings):
    assert time_readings(text) == readings


def test_goals_a_template_can_express_are_read_into_its_parameters():
    alarm = parse_goal("Set an alarm for 6:45", 4)
    assert alarm is not None and alarm.template == "ClockAddAlarm"
    assert [(t.params["hour"], t.params["minute"], t.seed) for t in alarm.tasks] == [(6, 45, 4), (18, 45, 4)]
    cases = {
        "Turn on airplane mode": ("SettingsToggle", {"setting": "Airplane mode", "state": "on"}),
        "switch wifi off": ("SettingsToggle", {"setting": "Wi-Fi", "state": "off"}),
        TEXT: ("MessagesSendToContact", {"name": "Nina Dubois", "text": "running late"}),
        "Start a timer for 10 minutes": ("ClockStartTimer", {"minutes": 10}),
        "Set the brightness to 40%": ("SettingsBrightness", {"level": 40}),
        "Set an alarm for 7:15 pm labeled Gym": (
            "ClockAddLabeledAlarm",
            {"hour": 19, "minute": 15, "time": "7:15 PM", "label": "Gym"},
        ),
    }  # fmt: skip
    for text, (template, params) in cases.items():
        parsed = parse_goal(text, 0)
        assert parsed is not None and (parsed.template, parsed.params) == (template, params), text
    assert parse_goal("Add a note saying buy milk", 0) is None
    assert parse_goal("Turn on the flux capacitor", 0) is None


def test_a_goal_is_checked_on_the_phone_the_run_uses():
    """The issue: "Turn on airplane mode" was checked as SettingsToggle/4 on another phone."""
    check = plan_check("Turn on airplane mode", None)
    assert isinstance(check, GoalCheck) and check.seed == 0
    assert plan_check("Turn on airplane mode", 7).seed == 7
    assert "simphone:0" in check.notice and "SettingsToggle" in check.notice
    instance = make_task("SettingsToggle", 3)
    exact = plan_check(instance.goal, 3)  # --task-id's goal on its own phone: the instance, set up
    assert isinstance(exact, TaskCheck) and exact.label == "SettingsToggle/3"


def test_no_template_says_so_before_the_run_with_the_closest_ones():
    check = plan_check("Add a note saying buy milk", None)
    assert isinstance(check, StateChangeCheck)
    assert "no SimPhone template expresses this goal" in check.notice
    assert "NotesCreate" in check.notice


def test_the_state_change_check_tells_a_related_change_from_nothing_or_an_unrelated_one():
    goal = "Add a note saying buy milk"
    assert read_intent(goal).apps == ("Notes",)  # "buy" is the note's text, not the Shop
    phone = SimPhone(0)
    before = snapshot(phone)
    assert judge(goal, before, snapshot(phone)).detail == "nothing on the phone changed"
    phone.app("com.android.deskclock").add_alarm(6, 45)  # type: ignore[attr-defined]
    unrelated = judge(goal, before, snapshot(phone))
    assert unrelated.checked and not unrelated.success and "only Clock changed" in unrelated.detail
    phone.app("com.simphone.notes").add_note("", "Buy eggs")  # type: ignore[attr-defined]
    wrong = judge(goal, before, snapshot(phone))
    assert wrong.checked and not wrong.success and "'buy milk'" in wrong.detail
    phone.app("com.simphone.notes").add_note("Shopping", "Buy milk")  # type: ignore[attr-defined]
    right = judge(goal, before, snapshot(phone))
    assert right.checked and right.success, right
    unknown = judge("Make my phone nicer", before, snapshot(phone))
    assert not unknown.checked and "names no app" in unknown.detail


def test_lying_scripts_really_leave_the_goal_undone():
    """The claims above are claims: a check of the scripted phone, not the runtime, says so."""
    for goal, (lie, right) in TASKS.items():
        check = plan_check(goal, None)
        for script, achieved in ((lie, False), (right, True)):
            phone = check.phone()
            ui = OracleUI(phone.observe(), task_name="replica")
            for action in script(ui):
                phone.execute(action)
                ui.screen = phone.observe()
            assert bool(check.verify(phone, None).success) is achieved, (goal, achieved)


def test_a_resumed_run_finds_its_check_again():
    """run.json names the check; a resume rebuilds it for the run's phone before the replay."""
    from agent_runtime.checks import resumed_check

    for text in ("Set an alarm for 6:45", "Add a note saying buy milk"):
        check = plan_check(text, 2)
        again = resumed_check(check.pending(), text, 2)
        assert again is not None and type(again) is type(check) and again.by == check.by and again.seed == 2


def test_reaching_an_app_is_judged_by_the_app_in_front_and_a_free_question_is_not_checked():
    phone = SimPhone(0)
    before = snapshot(phone)
    assert not read_intent("Start a timer").reaches
    home = judge("Open Settings", before, snapshot(phone), None)
    assert home.checked and not home.success and home.detail.startswith("the home screen is in front")
    there = judge("Open Settings", before, snapshot(phone), "Settings")
    assert there.checked and there.success
    question = judge("What's the weather like today?", before, snapshot(phone), "Settings")
    assert not question.checked and "cannot be checked" in question.detail
