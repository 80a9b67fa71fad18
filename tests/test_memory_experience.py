"""Experience memory: finished runs (written with the real TraceWriter) → guidance → recall."""

import logging
from pathlib import Path

import pytest

from agent_runtime.config import MemoryConfig
from agent_runtime.errors import ModelError
from agent_runtime.memory import build_knowledge, recall, record_run
from agent_runtime.memory.experience import distil_run, run_apps
from agent_runtime.memory.store import MemoryStore
from agent_runtime.traces import LoadedRun, RunRecord, StepRecord, TraceWriter, Verdict, load_run

ALARM_STEPS = [
    ("open_app", {"text": "Clock"}, "Open the Clock app", "A", ""),
    ("click", {"coordinate": [540, 200]}, "Tap the Alarm tab", "A", ""),
    ("click", {"coordinate": [900, 200]}, "Tap the Timer tab by mistake", "C", "The screen did not change"),
    ("click", {"coordinate": [540, 2000]}, "Tap the + button to add an alarm", "A", ""),
    ("type", {"text": "07:30"}, "Enter 07:30 as the alarm time", "A", ""),
    ("type", {"text": "Gym"}, "Type the label Gym", "A", ""),
    ("click", {"coordinate": [900, 1500]}, "Tap OK to save the alarm", "A", ""),
    ("terminate", {"status": "success"}, "The alarm is set", None, ""),
]


def write_run(
    runs: Path,
    run_id: str,
    task: str,
    steps=ALARM_STEPS,
    *,
    status: str = "completed",
    success: bool | None = True,
    notes: str = "",
    **extra,
) -> LoadedRun:
    with TraceWriter(runs / run_id) as w:
        w.write_run(
            RunRecord(
                run_id=run_id,
                task=task,
                status=status,
                success=success,
                steps=len(steps),
                device={"kind": "simphone", "spec": "simphone:0", "screen": {"width": 1080, "height": 2400}},
                **extra,
            )
        )
        for n, (name, args, description, outcome, feedback) in enumerate(steps):
            w.append_step(
                StepRecord(
                    step=n,
                    subgoal=description,
                    description=description,
                    action={"action": name, **args},
                    action_result={"ok": True},
                    verdict=None
                    if outcome is None
                    else Verdict(outcome=outcome, success=outcome == "A", feedback=feedback),
                    notes=notes if n == len(steps) - 1 else "",
                )
            )
    return load_run(runs / run_id)


@pytest.fixture
def cfg(tmp_path: Path) -> MemoryConfig:
    return MemoryConfig(dir=tmp_path / "mem")


def test_successful_run_becomes_ordered_guidance_without_failed_steps(tmp_path, cfg):
    run = write_run(
        tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym", notes="Alarm list shows 07:30"
    )
    g = record_run(run, cfg)
    assert g is not None and g.outcome == "success" and g.distilled_by == "trace"
    assert g.apps == ["Clock"]
    assert g.steps[0].startswith("Open the Clock app")
    assert [s.split(" (")[0] for s in g.steps] == [
        "Open the Clock app",
        "Tap the Alarm tab",
        "Tap the + button to add an alarm",
        "Enter 07:30 as the alarm time",
        "Type the label Gym",
        "Tap OK to save the alarm",
    ]
    assert "Timer" not in g.text
    assert 'open_app "Clock"' in g.text and "Notes: Alarm list shows 07:30" in g.text
    assert MemoryStore.from_config(cfg).count("experience") == 1


def test_second_run_of_the_template_gets_the_first_runs_guidance(tmp_path, cfg):
    first = record_run(write_run(tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym"), cfg)
    out = build_knowledge("Set an alarm for 06:45 labelled Work", config=cfg)
    assert first.text in out.knowledge
    assert out.knowledge.startswith("Guidance from previous runs of similar tasks:")
    assert out.sources == ["experience:run-1"]
    assert out.queries == ["Set an alarm for 06:45 labelled Work"]


def test_failed_run_is_stored_as_a_caution(tmp_path, cfg):
    steps = ALARM_STEPS[:3]
    run = write_run(
        tmp_path / "runs",
        "run-f",
        "Set an alarm for 05:00 labelled Run",
        steps,
        status="gave_up",
        success=False,
    )
    g = record_run(run, cfg)
    assert g.outcome == "failure"
    assert g.text.startswith("Caution: an earlier attempt at this task did not succeed (gave_up).")
    assert "Tap the Timer tab by mistake" in g.text and "The screen did not change" in g.text
    assert "Steps that did work:" in g.text
    hits = recall("Set an alarm for 09:00 labelled Work", cfg)
    assert [h.id for h in hits] == ["run-f"] and hits[0].metadata["outcome"] == "failure"


def test_unrelated_tasks_stay_below_the_threshold(tmp_path, cfg):
    record_run(write_run(tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym"), cfg)
    assert recall("Send a text message to Bob saying I am late", cfg) == []
    loose = cfg.model_copy(update={"threshold": 0.0})
    assert [h.id for h in recall("Send a text message to Bob saying I am late", loose)] == ["run-1"]


def test_model_distillation_sees_verdicts_and_replaces_the_step_list(tmp_path, cfg):
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return "1. Open Clock, Alarm tab\n2. Tap +, set the time and label, tap OK"

    g = record_run(write_run(tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym"), cfg, ask=ask)
    assert g.distilled_by == "model"
    assert g.text.endswith("2. Tap +, set the time and label, tap OK")
    assert g.text.startswith("Task: Set an alarm for 07:30 labelled Gym\nApps: Clock")
    (prompt,) = prompts
    assert "[failed: The screen did not change] Tap the Timer tab by mistake" in prompt
    assert "[ok] Open the Clock app" in prompt
    assert "essential steps required to complete the task" in prompt


def test_a_failing_or_empty_model_falls_back_to_the_trace(tmp_path, cfg, caplog):
    def dead(prompt: str) -> str:
        raise ModelError("connection refused", hint="start the server")

    run = write_run(tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym")
    with caplog.at_level(logging.WARNING, logger="agent_runtime.memory.experience"):
        g = record_run(run, cfg, ask=dead)
    assert g.distilled_by == "trace" and "Steps that worked:" in g.text
    assert "connection refused" in caplog.text
    assert distil_run(run, ask=lambda p: "   ").distilled_by == "trace"


def test_sensitive_values_never_reach_the_store(tmp_path, cfg):
    steps = [
        ("open_app", {"text": "Settings"}, "Open Settings", "A", ""),
        ("type", {"text": "hunter2"}, "Type the Wi-Fi password hunter2", "A", ""),
    ]
    secret_cfg = cfg.model_copy(update={"sensitive": ["hunter2"]})
    run = write_run(tmp_path / "runs", "run-s", "Join the Wi-Fi network Home with password hunter2", steps)
    g = record_run(run, secret_cfg, ask=lambda p: f"1. Type the password {p.count('hunter2')} hunter2")
    assert "hunter2" not in g.text and "hunter2" not in g.task
    stored = (
        MemoryStore.from_config(secret_cfg).collection("experience").get(include=["documents", "metadatas"])
    )
    assert "hunter2" not in repr(stored)
    assert "[REDACTED]" in stored["metadatas"][0]["guidance"]


def test_runs_that_did_not_finish_or_with_experience_off_are_not_recorded(tmp_path, cfg):
    errored = write_run(tmp_path / "runs", "run-e", "Set an alarm", status="error", success=None)
    assert record_run(errored, cfg) is None
    ok = write_run(tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym")
    assert record_run(ok, cfg.model_copy(update={"experience": False})) is None
    assert MemoryStore.from_config(cfg).count("experience") == 0


def test_recording_a_run_again_replaces_its_record_and_eval_verdict_wins(tmp_path, cfg):
    run = write_run(
        tmp_path / "runs",
        "run-1",
        "Set an alarm for 07:30 labelled Gym",
        eval={"task": "AlarmSet", "seed": 3, "task_success": 0.0},
    )
    assert record_run(run, cfg).outcome == "failure"  # the agent claimed success, the checker disagreed
    record_run(run, cfg)
    assert MemoryStore.from_config(cfg).count("experience") == 1


def test_store_failure_while_recording_is_a_warning(tmp_path, caplog):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    run = write_run(tmp_path / "runs", "run-1", "Set an alarm for 07:30 labelled Gym")
    with caplog.at_level(logging.WARNING, logger="agent_runtime.memory.experience"):
        assert record_run(run, MemoryConfig(dir=blocker / "mem")) is None
    assert "could not store run run-1" in caplog.text


def test_apps_come_from_open_app_foreground_fields_and_device(tmp_path):
    steps = [
        ("open_app", {"text": "Expenses"}, "Open Expenses", "A", ""),
        ("click", {"coordinate": [1, 1]}, "Tap Add", "A", ""),
    ]
    run = write_run(tmp_path / "runs", "run-a", "Add an expense", steps)
    run.steps[1] = StepRecord.model_validate({**run.steps[1].model_dump(), "app": "com.simphone.expenses"})
    run.run.device["details"] = {"foreground_app": "com.android.launcher3"}
    assert run_apps(run) == ["Expenses", "com.simphone.expenses"]
