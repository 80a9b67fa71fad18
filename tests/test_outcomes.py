"""A verified success is never confused with the agent's claim: ``run`` checks SimPhone tasks,
says "claimed, not verified" otherwise, exits by one rule, and trainers do not learn claims.

The CLI runs in-process (typer's CliRunner) against a scripted OpenAI-compatible server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app as cli_app
from agent_runtime.cli.run import exit_code
from agent_runtime.simphone.tasks import make_task
from agent_runtime.simphone.tasks.registry import match_goal, parse_task_id
from agent_runtime.traces import RunRecord, Verification, load_run, read_run_record
from agent_runtime.trainers.data.samples import collect_samples
from tests.doubles import ScriptedOpenAIServer, manager_reply, notetaker_reply, worker_reply

runner = CliRunner()
REFLECT_A = "### Outcome ###\nA\n### Error Description ###\nNone"


def claims(action: dict[str, object], goal: str = "Do it") -> dict[str, object]:
    """A script whose Worker does ``action`` once and whose Manager then declares it done."""
    return {
        "manager": [manager_reply([goal]), manager_reply("Finished", completed=[goal])],
        "worker": worker_reply(action, "done"),
        "reflector": REFLECT_A,
        "notetaker": notetaker_reply("- nothing"),
    }


CLAIM_SUCCESS = claims({"action": "terminate", "status": "success"})


def run_cli(tmp_path: Path, script: dict[str, object], *args: str):
    cfg = tmp_path / "c.toml"
    with ScriptedOpenAIServer(script) as srv:
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "scripted"\nretries = 0\n'
            "timeout_s = 10\n[roles.rag]\nenabled = false\n",
            encoding="utf-8",
        )
        return runner.invoke(cli_app, ["run", *args, "-c", str(cfg), "--runs-dir", str(tmp_path / "runs")])


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_claimed_wifi_off_is_checked_and_refuted(tmp_path):
    """The issue's first task: the agent claims success and Wi-Fi is still on."""
    res = run_cli(tmp_path, CLAIM_SUCCESS, "Turn off Wi-Fi", "--json")
    task = match_goal("Turn off Wi-Fi")
    assert task is not None and task.name == "SettingsToggle" and task.params["setting"] == "Wi-Fi"
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "completed" and out["success"] is True  # the claim, as before
    assert out["verified"] is False
    assert out["verification"]["by"] == f"simphone:SettingsToggle/{task.seed}"
    assert "does not meet the goal" in out["verification"]["detail"]
    text = one_line(res.stderr)
    assert f"this is SimPhone task SettingsToggle/{task.seed}" in text
    assert "completed after 1 step (the Worker terminated with success) — failed the check: " in text
    assert f"failed the check: SimPhone (SettingsToggle/{task.seed})" in text
    record = read_run_record(Path(out["run_dir"]) / "run.json")
    assert record.verification is not None and record.verification.verified is False
    assert record.device["spec"] == f"simphone:{task.seed}"


def test_a_task_no_simphone_task_has_is_claimed_not_verified(tmp_path):
    res = run_cli(tmp_path, CLAIM_SUCCESS, "Send a message to Ana saying hi")
    assert res.exit_code == 0, res.output  # an unverifiable claim: exit 0, said so
    text = one_line(res.stderr)
    assert "completed after 1 step (the Worker terminated with success) — claimed, not verified" in text
    assert "not checked: no SimPhone task has this text" in text and "--task-id" in text
    assert "verified by" not in text
    run_dir = next((tmp_path / "runs").iterdir())
    record = read_run_record(run_dir / "run.json")
    assert record.verification == Verification(detail=record.verification.detail)
    assert record.verification.verified is None
    # traces list / show say it too
    listed = runner.invoke(cli_app, ["traces", "list", "--runs-dir", str(tmp_path / "runs"), "--json"])
    row = json.loads(listed.stdout)
    assert row["success"] is True and row["verified"] is None
    shown = runner.invoke(cli_app, ["traces", "show", record.run_id, "--runs-dir", str(tmp_path / "runs")])
    assert "check: claimed, not verified — no SimPhone task has this text" in one_line(shown.stdout)
    # and trainers do not take the claim as a positive
    samples = collect_samples(tmp_path / "runs").samples
    assert samples and all(s.outcome == "unknown" and s.outcome_source == "agent" for s in samples)


def test_task_id_run_whose_check_passes_is_verified(tmp_path):
    task = make_task("ContactsPhoneQuestion", 4)
    script = claims({"action": "answer", "text": task.expected_answer()})
    res = run_cli(tmp_path, script, "--task-id", "ContactsPhoneQuestion/4", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["verified"] is True and out["verification"]["by"] == "simphone:ContactsPhoneQuestion/4"
    assert "verified by SimPhone (ContactsPhoneQuestion/4)" in one_line(res.stderr)
    loaded = load_run(Path(out["run_dir"]))
    assert loaded.run.task == task.goal and loaded.run.device["spec"] == "simphone:4"
    shown = runner.invoke(cli_app, ["traces", "show", out["run_id"], "--runs-dir", str(tmp_path / "runs")])
    assert "check: verified by SimPhone (ContactsPhoneQuestion/4)" in one_line(shown.stdout)
    listed = runner.invoke(
        cli_app, ["traces", "list", "--runs-dir", str(tmp_path / "runs")], env={"COLUMNS": "200"}
    )
    assert re.search(r"completed\s*│\s*verified\s*│", listed.stdout), listed.stdout
    samples = collect_samples(tmp_path / "runs").samples
    assert samples and all(s.outcome == "success" and s.outcome_source == "check" for s in samples)


def test_wrong_answer_to_a_question_fails_the_check(tmp_path):
    """The issue's third task: the agent "answered" with the question's own words."""
    script = claims({"action": "answer", "text": "Aiden Holm's phone number"})
    res = run_cli(tmp_path, script, "What is Aiden Holm's phone number?")
    assert res.exit_code == 1, res.output
    text = one_line(res.stderr)
    assert "failed the check: SimPhone (ContactsPhoneQuestion/" in text
    assert "does not match the expected" in text


def test_task_id_usage_errors_exit_2(tmp_path):
    for args in (
        ["--task-id", "NoSuchTask/1"],
        ["--task-id", "SettingsToggle/x"],
        ["Turn off Wi-Fi", "--task-id", "SettingsToggle/1"],
        ["--task-id", "SettingsToggle/1", "--device", "simphone:2"],
        ["--task-id", "SettingsToggle/1", "--device", "adb:emulator-5554"],
    ):
        res = runner.invoke(cli_app, ["run", *args, "--runs-dir", str(tmp_path / "runs")])
        assert res.exit_code == 2, (args, res.output)
    assert parse_task_id("SettingsToggle:3") == parse_task_id("SettingsToggle/3") == ("SettingsToggle", 3)


def test_a_seeded_phone_only_matches_its_own_instances(tmp_path):
    task = match_goal("Turn off Wi-Fi")
    same = match_goal("turn OFF  wi-fi in settings.")
    assert task is not None and same is not None and (same.name, same.seed) == (task.name, task.seed)
    assert match_goal("Turn off Wi-Fi", seed=0) is None  # SettingsToggle/0 is another toggle
    res = run_cli(tmp_path, CLAIM_SUCCESS, "Turn off Wi-Fi", "--device", "simphone:0")
    assert res.exit_code == 0, res.output
    text = one_line(res.stderr)
    assert "claimed, not verified" in text
    assert f"SimPhone task SettingsToggle/{task.seed} has this text, but this phone is simphone:0" in text


@pytest.mark.parametrize(
    ("status", "success", "verification", "code"),
    [
        ("completed", True, Verification(checked=True, success=True), 0),
        ("completed", True, Verification(checked=True, success=False), 1),
        ("completed", True, Verification(), 0),
        ("completed", True, None, 0),
        ("failed", False, Verification(), 1),
        ("max_steps", False, Verification(checked=True, success=True), 0),
        ("error", False, None, 1),
        ("interrupted", False, Verification(), 130),
    ],
)
def test_exit_code_rule(status, success, verification, code):
    assert exit_code(status, success, verification) == code


def test_run_json_without_verification_still_loads(tmp_path):
    """Records written before checks existed: no field, still readable; a claim stays a claim."""
    run_dir = tmp_path / "runs" / "old"
    run_dir.mkdir(parents=True)
    old = RunRecord(run_id="old", task="Turn off Wi-Fi", status="completed", success=True).model_dump()
    del old["verification"]
    (run_dir / "run.json").write_text(json.dumps(old), encoding="utf-8")
    record = read_run_record(run_dir / "run.json")
    assert record.verification is None and record.success is True
    shown = runner.invoke(cli_app, ["traces", "show", "old", "--runs-dir", str(tmp_path / "runs")])
    assert shown.exit_code == 0 and "claimed, not verified" in shown.stdout
