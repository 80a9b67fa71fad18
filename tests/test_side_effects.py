"""Side-effect judging: the goal met *and* nothing outside the template's footprint changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.actions import Action, Click, OpenApp
from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig
from agent_runtime.device import Device
from agent_runtime.errors import TaskError
from agent_runtime.evaluation.episode import ExpertPolicy, Outcome
from agent_runtime.evaluation.harness import run_episode
from agent_runtime.evaluation.report import EvalReport
from agent_runtime.runtime import RunResult, Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps import APP_CLASSES
from agent_runtime.simphone.state import app_key, covers, diff
from agent_runtime.simphone.tasks import Task, make_task, registry, task_instances
from agent_runtime.simphone.tasks.base import Judgement
from tests.doubles import ScriptedChatModel, gui_owl_reply


def _solved(task: Task) -> tuple[SimPhone, dict, str | None]:
    """A phone on which the expert has played ``task``, with its state after setup."""
    phone = SimPhone(seed=task.seed)
    task.setup(phone)
    before = phone.state()
    outcome = ExpertPolicy(screenshots=False)(task, phone)
    return phone, before, outcome.answer


def _unrelated_change(app: App) -> None:
    """Change ``app``'s data the way a careless agent would: drop a record, else flip a value."""
    state = app.state
    fields = dataclasses.fields(state)
    for f in fields:
        value = getattr(state, f.name)
        if isinstance(value, list) and value:
            value.pop()
            return
    for f in fields:
        value = getattr(state, f.name)
        if isinstance(value, bool):
            setattr(state, f.name, not value)
            return
        if isinstance(value, int | str):
            setattr(state, f.name, value + 1 if isinstance(value, int) else f"{value}!")
            return
    raise AssertionError(f"{app.package} has no data a test can change")


def test_the_oracle_solves_every_template_on_both_splits_without_side_effects() -> None:
    failures = []
    for name in registry():
        for split in ("train", "test"):
            try:
                (task,) = task_instances([name], split=split)  # type: ignore[arg-type]
            except TaskError as exc:
                failures.append(f"{name}: {exc.message}")
                continue
            try:
                phone, before, answer = _solved(task)
            except Exception as exc:  # an expert that cannot play is listed with the rest
                failures.append(f"{name}/{task.seed}: the expert raised {exc}")
                continue
            judged = task.judge(phone, answer, before)
            if not judged.success:
                failures.append(f"{name}/{task.seed}: goal {judged.goal_score}, {judged.reason}")
    assert not failures, "\n".join(failures)


#: Templates whose goal spans two or more apps.
ACROSS = [name for name, cls in registry().items() if len(cls.app_names) > 1]


def test_templates_across_apps_declare_only_what_the_goal_changes() -> None:
    """Not the default footprint (every named app's data): a cross-app goal reads one app and
    writes a few records of another, so a whole app in its footprint would hide side effects."""
    assert len(ACROSS) >= 20
    for name in ACROSS:
        task = make_task(name, 0)
        apps = [app_key(label) for label in task.app_names]
        whole = [p for p in task.may_change() for key in apps if covers(p, f"apps.{key}")]
        assert not whole, f"{name} may change all of {whole}"
        assert all(p.split(".")[1] in apps for p in task.may_change()), (name, task.may_change())


@pytest.mark.parametrize("name", ACROSS)
def test_a_cross_app_goal_fails_when_an_app_it_only_reads_changes(name: str) -> None:
    (task,) = task_instances([name], split="all")
    phone, before, answer = _solved(task)
    assert task.judge(phone, answer, before).success
    written = {p.split(".")[1] for p in task.may_change()}
    read = [cls for cls in APP_CLASSES if cls.label in task.app_names and app_key(cls.label) not in written]
    assert read, f"{name} writes every app it names"
    for app_cls in read:
        _unrelated_change(phone.app(app_cls.package))
        judged = task.judge(phone, answer, before)
        assert judged.goal_score == 1.0 and not judged.success, (name, app_cls.label)
        assert f"apps.{app_key(app_cls.label)}." in judged.reason


def _task_away_from(app: type[App]) -> Task:
    """An operation template that does not name ``app`` (its data is unrelated to the goal)."""
    name = "SettingsBrightness" if app.label != "Settings" else "NotesCreate"
    task = make_task(name, 0)
    assert app.label not in task.app_names
    return task


@pytest.mark.parametrize("app_cls", APP_CLASSES, ids=lambda c: c.label)
def test_goal_met_plus_an_unrelated_change_in_each_app_fails_naming_the_path(app_cls: type[App]) -> None:
    task = _task_away_from(app_cls)
    phone, before, answer = _solved(task)
    assert task.judge(phone, answer, before).success
    _unrelated_change(phone.app(app_cls.package))
    judged = task.judge(phone, answer, before)
    assert judged.goal_score == 1.0 and judged.score == 0.0 and not judged.success
    assert f"apps.{app_key(app_cls.label)}." in judged.reason
    assert all(p.startswith(f"apps.{app_key(app_cls.label)}.") for p in judged.side_effects)


def test_a_question_may_change_nothing_in_its_own_app() -> None:
    task = make_task("NotesFactQuestion", 0)
    phone, before, answer = _solved(task)
    assert task.judge(phone, answer, before).success
    notes = phone.app("com.simphone.notes").state.notes
    deleted = notes.pop(0)
    judged = task.judge(phone, answer, before)
    assert not judged.success
    assert judged.side_effects == (f"apps.notes.notes[id={deleted.id}]",)


def test_a_declared_footprint_narrows_what_an_operation_may_change() -> None:
    task = make_task("NotesCreate", 0)
    phone, before, answer = _solved(task)
    assert task.judge(phone, answer, before).success
    phone.app("com.simphone.notes").state.notes[0].pinned ^= True  # an existing note, not the new one

    class Narrow(type(task)):  # type: ignore[misc]
        footprint = ("apps.notes.next_id", f"apps.notes.notes[id={before['apps']['notes']['next_id']}]")

    narrow = Narrow(task.params, seed=task.seed)
    assert not narrow.judge(phone, answer, before).success
    assert "apps.notes.notes[id=" in narrow.judge(phone, answer, before).reason
    assert task.judge(phone, answer, before).success  # the default footprint: all of Notes


def test_the_clock_focus_screens_and_viewing_are_never_side_effects() -> None:
    task = make_task("MessagesLastMessageQuestion", 0)  # reading the thread marks it read
    phone, before, answer = _solved(task)
    assert task.side_effects(before, phone.state()) == []
    assert diff(before["apps"]["messages"], phone.state()["apps"]["messages"])  # the read mark
    phone.advance_time(3600)
    phone.launch("com.android.settings")
    phone.tap_on("Network & internet")
    judged = task.judge(phone, answer, before)
    assert judged.success, judged.reason


def test_diff_names_records_by_id_and_covers_matches_globs() -> None:
    before = {"apps": {"notes": {"notes": [{"id": 1, "t": "a"}, {"id": 2, "t": "b"}], "next_id": 3}}}
    after = {"apps": {"notes": {"notes": [{"id": 2, "t": "B"}, {"id": 3, "t": "c"}], "next_id": 4}}}
    assert diff(before, after) == [
        "apps.notes.notes[id=1]",
        "apps.notes.notes[id=2].t",
        "apps.notes.notes[id=3]",
        "apps.notes.next_id",
    ]
    assert diff([1, 2], [1, 2, 3]) == ["[2]"]
    assert covers("apps.notes", "apps.notes.notes[id=1].t")
    assert covers("apps.*.notes[*]", "apps.notes.notes[id=1]")
    assert not covers("apps.notes.notes[*]", "apps.notes.next_id")
    assert not covers("apps.notes.notes[id=1]", "apps.notes.notes[id=2]")


class _DeletesAContact:
    """A policy that plays the expert, then deletes a contact on the way out."""

    name = "careless"

    def __call__(self, task: Task, device: Device) -> Outcome:
        assert isinstance(device, SimPhone)
        outcome = ExpertPolicy(screenshots=False)(task, device)
        device.app("com.android.contacts").state.contacts.pop()
        return outcome


def test_eval_reports_side_effects_per_episode_and_as_a_rate() -> None:
    careless = run_episode(_DeletesAContact(), "SettingsBrightness", 0)
    clean = run_episode(ExpertPolicy(screenshots=False), "SettingsBrightness", 0)
    assert not careless.success and careless.score == 0.0
    assert careless.side_effects and careless.side_effects[0].startswith("apps.contacts.contacts[id=")
    assert careless.side_effects[0] in careless.check
    assert clean.success and clean.side_effects == []
    report = EvalReport.build(
        [careless, clean],
        complexity={},
        suite="simphone",
        split="all",
        policy="p",
        episodes=1,
        seed=0,
        workers=1,
        duration_s=0.0,
    )
    assert report.side_effect_episodes == 1 and report.side_effect_rate == 0.5


def test_judgement_score_and_reason() -> None:
    assert Judgement(1.0).success and Judgement(1.0).reason == ""
    bad = Judgement(1.0, tuple(f"apps.a.x[{i}]" for i in range(7)))
    assert bad.score == 0.0 and "and 2 more" in bad.reason


def _toggle_an_alarm_then_play(task: Task) -> list[dict[str, Any]]:
    """Screen actions that switch the first alarm on Clock's Alarm tab (nobody asked for it), then the
    oracle's for ``task`` on its run's phone, ending with its terminate."""
    from agent_runtime.checks import TaskCheck
    from agent_runtime.simphone.tasks.oracle import OraclePolicy

    phone = TaskCheck(task).phone()
    try:
        actions: list[Action] = [OpenApp(text="Clock")]
        assert phone.execute(actions[0]).ok
        for wanted in (lambda el: el.content_desc == "Alarm", lambda el: el.class_name.endswith("Switch")):
            node = next(el for el in phone.observe().elements if wanted(el))
            actions.append(Click(coordinate=node.bounds.center))
            assert phone.execute(actions[-1]).ok
        policy = OraclePolicy(task)
        while actions[-1].action != "terminate":
            actions.append(policy(phone.observe()))
            assert len(actions) < 40 and phone.execute(actions[-1]).ok
    finally:
        phone.close()
    return [a.to_json() for a in actions]


def _scripted_run(tmp_path: Path, task: Task, actions: list[dict[str, Any]]) -> RunResult:
    """``agent-runtime run``'s path in process: the task's goal on ``simphone:SEED``, a scripted
    GUI-Owl model replaying ``actions``."""
    replies = [gui_owl_reply(a, f"did step {i}") for i, a in enumerate(actions)]
    model = ScriptedChatModel(script={"single": lambda call: replies[min(call.index, len(replies) - 1)]})
    off = RoleConfig(enabled=False)
    config = RuntimeConfig(
        roles={"rag": off, "notetaker": off}, graph=GraphConfig(kind="single", max_steps=30)
    )
    runtime = Runtime(config, models={"single": model}, runs_dir=tmp_path)
    return runtime.run(task.goal, device=f"simphone:{task.seed}")


def test_run_check_fails_a_goal_met_with_an_unrelated_change_naming_the_path(tmp_path: Path) -> None:
    """``run``'s own check (TaskCheck) judges side effects as eval does: the Timer tab reached
    after switching an alarm nobody asked about is not verified, and the reason names the alarm."""
    task = make_task("ClockReachTab", 1)
    careless = _scripted_run(tmp_path, task, _toggle_an_alarm_then_play(task))
    check = careless.verification
    assert check is not None and check.by == "simphone:ClockReachTab/1"
    assert check.checked and check.success is False and check.score == 0.0, check
    assert "meets the goal" in check.detail and "apps.clock.alarms[id=" in check.detail, check.detail
    assert careless.outcome == "failed_check"
