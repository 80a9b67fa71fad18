"""Side-effect judging: the goal met *and* nothing outside the template's footprint changed."""

from __future__ import annotations

import dataclasses

import pytest

from agent_runtime.errors import TaskError
from agent_runtime.evaluation.episode import ExpertPolicy
from agent_runtime.evaluation.harness import run_episode
from agent_runtime.evaluation.report import EvalReport
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps import APP_CLASSES
from agent_runtime.simphone.state import app_key, covers, diff
from agent_runtime.simphone.tasks import Task, make_task, registry, task_instances
from agent_runtime.simphone.tasks.base import Judgement


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
            setattr(state, f.name, value + type(value)(1 if isinstance(value, int) else "!"))
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

    def __call__(self, task: Task, device: SimPhone):  # type: ignore[no-untyped-def]
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
