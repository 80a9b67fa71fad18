"""The hint-leak check: reasoning that restates a hinted answer in any wording is caught, and
the oracle's own reasoning — written without any hint — is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_runtime.traces import load_run
from agent_runtime.trainers.data.filters.hint_leak import hint_leak
from agent_runtime.trainers.data.hints import HINTED_ROLES, hint_answer, hint_text, reasoning_of

ACTION = '{"action": "click", "index": 5}'
HINT = f"\n\n<hint>\nHint (from a demonstration): the right next action is {ACTION}.\n</hint>"
PROMPT = "Set an alarm for 7:30 AM.\n[0] Home\n[5] Clock\n[6] Settings"


@pytest.mark.parametrize(
    ("reasoning", "signal"),
    [
        ("As the hint says, tap Clock.", "reference"),
        ("The demonstration says the right next action is to open Clock.", "reference"),
        ("As suggested, the next action is tapping the Clock icon.", "reference"),
        ("I was told to open Clock first.", "reference"),
        ("We have been given the solution: Clock.", "reference"),
        ("According to the example, Clock comes first.", "reference"),
        ("The right move is to tap [5].", "assertion"),
        ("The expected next step: open Clock.", "assertion"),
        ("The correct action here is obvious.", "assertion"),
        ("So I click index 5.", "copied"),
        ('I go with "action": "click", "index": 5.', "copied"),
        ("Going from a demonstration is fine.", "reference"),
    ],
)
def test_restating_the_hint_is_a_leak_in_any_wording(reasoning: str, signal: str) -> None:
    leak = hint_leak(reasoning, HINT, answer=ACTION, prompt=PROMPT)
    assert leak is not None and leak.startswith(f"{signal}:"), leak


@pytest.mark.parametrize(
    "reasoning",
    [
        'The current subgoal is "Open Clock". Target: Clock [5]. Next: Tap "Clock".',
        "The home screen is open; the Clock app is the way to alarms.",
        "Clock [5] holds the alarms, so I open it.",
    ],
)
def test_reasoning_of_its_own_is_not_a_leak(reasoning: str) -> None:
    assert hint_leak(reasoning, HINT, answer=ACTION, prompt=PROMPT) is None


def test_words_the_prompt_shows_are_never_counted_as_copied() -> None:
    hint = '\n<hint>\nthe right next subgoal is "Open the Clock app".\n</hint>'
    said = "Step one: open the clock app from the home screen."
    assert hint_leak(said, hint, answer="Open the Clock app", prompt="") == "copied: 'open the clock'"
    shown = "Plan so far:\n1. Open the Clock app\n2. Add an alarm"
    assert hint_leak(said, hint, answer="Open the Clock app", prompt=shown) is None


def test_no_oracle_demonstration_reads_as_a_leak_of_its_own_hint(tmp_path: Path) -> None:
    """The oracle never sees a hint, so every one of its Worker and Manager replies is a true
    negative: the check must pass them all (false alarms would starve the data)."""
    from agent_runtime.roles.manager import parse_manager
    from agent_runtime.roles.worker import parse_worker
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

    report = write_demos(
        DemoOptions(tasks="ClockAddAlarm,SettingsWifiNetworkQuestion,NotesCreate*", prompts="compact"),
        tmp_path,
    )
    checked = 0
    for run in report.runs:
        for call in load_run(run).calls:
            if call.role not in HINTED_ROLES or call.extra.get("not_a_target"):
                continue
            oracle = (
                parse_worker(call.completion, indices=True)
                if call.role == "worker"
                else parse_manager(call.completion)
            )
            prompt = "\n".join(
                p.get("text", "") if isinstance(p, dict) else str(p)
                for m in call.messages
                for p in (m["content"] if isinstance(m["content"], list) else [m["content"]])
            )
            leak = hint_leak(
                reasoning_of(call.role, call.completion),
                hint_text(oracle),
                answer=hint_answer(oracle),
                prompt=prompt,
            )
            assert leak is None, (call.role, call.completion, leak)
            checked += 1
    assert checked >= 10
