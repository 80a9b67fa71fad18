"""SimPhone task templates: registry, parameters, split, answer matching, the expert's behaviour."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agent_runtime.errors import TaskError
from agent_runtime.evaluation import ExpertPolicy, run_episode
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.tasks import (
    OracleError,
    Task,
    answers_match,
    make_task,
    normalise_answer,
    registry,
    select,
    split_of,
    task_instances,
)
from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT

APPS = {"Settings", "Clock", "Contacts", "Messages", "Calendar", "Browser", "Notes", "Expenses", "Shop",
        "Phone", "Email", "Maps", "Weather", "Files", "Gallery", "Music", "Recorder"}  # fmt: skip
KINDS = {"page_reaching", "page_operation", "question"}
ROOT = Path(__file__).resolve().parents[1]


def test_registry_is_sorted_covers_every_app_and_has_the_task_shape():
    reg = registry()
    assert len(reg) >= 40
    assert list(reg) == sorted(reg)
    per_app = Counter(cls.app_names[0] for cls in reg.values())
    assert set(per_app) == APPS and min(per_app.values()) >= 4, per_app
    kinds = Counter(cls.kind for cls in reg.values())
    assert set(kinds) == KINDS and kinds["page_reaching"] >= 9 and kinds["question"] >= 9, kinds
    for name, cls in reg.items():
        assert name == cls.__name__ and issubclass(cls, Task)
        assert cls.template and cls.complexity > 0 and set(cls.app_names) <= APPS
        assert cls.answer_task == (cls.kind == "question"), name


def test_readme_and_docs_give_the_registrys_counts_and_apps() -> None:
    """The counts people read are the registry's (they went stale at "9 apps and 65 templates")."""
    reg = registry()
    kinds = Counter(cls.kind for cls in reg.values())
    across = sum(len(cls.app_names) > 1 for cls in reg.values())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    docs = " ".join((ROOT / "docs" / "simphone.md").read_text(encoding="utf-8").split())
    assert f"with {len(APPS)} apps (" in readme and f"{len(reg)} task templates ({across} spanning" in readme
    assert f"`tasks/` ({len(reg)} templates" in readme
    assert f"{len(APPS)} apps — " in docs and f"and {len(reg)} task templates" in docs
    assert f"{kinds['page_operation']} operations, {kinds['question']} questions" in docs
    assert f"{kinds['page_reaching']} pages to reach; {across} templates span two" in docs
    assert f"{len(TEMPLATE_HELDOUT)} templates (`simphone/tasks/registry.py: TEMPLATE_HELDOUT`)" in docs
    for text in (readme, docs):
        listed = text[text.index("Settings, Clock") :][:200]
        assert all(app in listed for app in APPS), listed


@pytest.mark.parametrize("name", sorted(registry()))
def test_instances_are_deterministic_json_and_goals_are_filled(name):
    a, b = make_task(name, 11), make_task(name, 11)
    assert a.params == b.params and a.goal == b.goal
    assert json.loads(json.dumps(a.params)) == a.params
    assert "{" not in a.goal and a.max_steps == round(10 * a.complexity)
    # Some questions are fixed sentences about varied phone content: count parameters, not goals.
    drawn = {make_task(name, s).params_key() for s in range(30)}
    assert len(drawn) >= 3, f"{name} draws almost no variety: {drawn}"


def test_splits_are_disjoint_deterministic_and_populated():
    for name in registry():
        train = task_instances([name], split="train", episodes=3, seed=0)
        test = task_instances([name], split="test", episodes=3, seed=0)
        assert all(split_of(t) == "train" for t in train) and all(split_of(t) == "test" for t in test)
        assert {t.seed for t in train}.isdisjoint({t.seed for t in test})
        # Disjoint on goals, not only seeds: the split hashes the parameters.
        assert {t.params_key() for t in train}.isdisjoint({t.params_key() for t in test}), name
        again = task_instances([name], split="test", episodes=3, seed=0)
        assert [(t.seed, t.params) for t in again] == [(t.seed, t.params) for t in test]
    sample = [make_task(n, s) for n in registry() for s in range(20)]
    share = sum(split_of(t) == "test" for t in sample) / len(sample)
    assert 0.15 < share < 0.35  # one in four parameter hashes is test
    everything = task_instances(["ClockAddAlarm"], split="all", episodes=5, seed=7)
    assert [t.seed for t in everything] == [7, 8, 9, 10, 11]


def test_select_patterns_and_errors():
    assert select("ClockAddAlarm") == ["ClockAddAlarm"]
    assert select("clock*alarm") == ["ClockAddAlarm", "ClockAddLabeledAlarm", "ClockDeleteAlarm",
                                     "ClockRepeatAlarm", "ClockToggleAlarm"]  # fmt: skip
    assert select("re:^Notes(Pin|Delete)$") == ["NotesDelete", "NotesPin"]
    assert select("NotesPin, ShopBuy") == ["NotesPin", "ShopBuy"]
    assert set(select(None, app="contacts")) >= {"ContactsAddContact", "MessagesShareNumber"}
    with pytest.raises(TaskError, match="no SimPhone task matches"):
        select("Nothing*")
    with pytest.raises(TaskError, match="bad task regex"):
        select("re:(")
    with pytest.raises(TaskError, match="unknown SimPhone task") as info:
        make_task("ClockAlarm")
    assert "ClockAddAlarm" in (info.value.hint or "")
    with pytest.raises(TaskError, match="unknown split"):
        task_instances(["NotesPin"], split="dev")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expected", "given", "kind", "ok"),
    [
        ("Guido van Rossum", "guido van rossum.", "text", True),
        ("Guido van Rossum", "The answer is: Guido van Rossum", "text", True),
        ("Guido van Rossum", "Guido", "text", False),
        ("Jupiter", "Saturn", "text", False),
        ("8849", "8,849 metres", "number", True),
        ("123.40", "$123.4", "number", True),
        ("123.40", "$123.41", "number", False),
        ("4", "4 or 5", "number", False),
        ("+1 555-234-5678", "15552345678", "phone", True),
        ("+1 555-234-5678", "+1 555-234-5679", "phone", False),
        ("7:30 PM", "19:30", "time", True),
        ("7:30 PM", "7:30 AM", "time", False),
        ("12:05 AM", "0:05", "time", True),
        ("7:30 PM", "7:30 PM or 8 PM", "time", False),
    ],
)
def test_answers_match(expected, given, kind, ok):
    assert answers_match(expected, given, kind=kind) is ok


def test_normalise_answer_and_unknown_kind():
    assert normalise_answer("  Wi-Fi: HomeNet-5G! ") == "wi-fi homenet-5g"
    with pytest.raises(TaskError, match="unknown answer kind"):
        answers_match("a", "a", kind="fuzzy")


@pytest.mark.parametrize(
    "name",
    ["SettingsConnectWifi", "ClockAddLabeledAlarm", "ContactsEditPhone", "MessagesShareNumber",
     "CalendarAddEventWithLocation", "BrowserSearchQuestion", "NotesAppendLine",
     "ExpensesCategoryTotalQuestion", "ShopBuy"],
)  # fmt: skip
def test_expert_with_full_observations(name):
    """One template per app played with real screenshots, as demonstrations are recorded."""
    seen: list[str] = []
    policy = ExpertPolicy(on_step=lambda obs, action, result: seen.append(action.action))
    result = run_episode(policy, name, 1)
    assert result.success and result.error is None, result
    assert 0 < result.steps <= result.max_steps and seen[-1] == "terminate"


def test_expert_reports_what_it_could_not_find():
    task = make_task("ContactsPhoneQuestion", 0)
    phone = SimPhone(seed=0)  # no setup: the contact the goal names does not exist
    with pytest.raises(OracleError, match="scrolled the whole list") as info:
        ExpertPolicy(screenshots=False)(task, phone)
    assert info.value.hint and "visible:" in info.value.hint


def test_distinct_instances_of_a_template_are_different_tasks() -> None:
    """With ``distinct``, seeds whose parameters repeat an earlier seed's are skipped
    (SettingsReachPage's parameter space is small: its first test seeds repeat "Go to the Wi-Fi page")."""
    from agent_runtime.simphone.tasks.registry import make_task, split_of

    tasks = task_instances(["SettingsReachPage"], split="test", episodes=8, seed=0, distinct=True)
    assert len({t.params_key() for t in tasks}) == 8
    with pytest.raises(TaskError, match="only 1 distinct test instances"):
        task_instances(["BrowserSearch"], split="test", episodes=2, distinct=True)
    seeds = [make_task("SettingsReachPage", s) for s in range(tasks[-1].seed + 1)]
    test = [t.params_key() for t in seeds if split_of(t) == "test"]
    assert len(test) > len(set(test)), "no repeats in these seeds: pick another template for this test"
