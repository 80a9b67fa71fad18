"""A verified success is never confused with the agent's claim: ``run`` checks every SimPhone
run on the phone it used, calls a success nothing could check "unverified" with its own exit
code, exits by one rule, and trainers do not learn claims.

Most CLI runs are in-process (typer's CliRunner) against a scripted OpenAI-compatible server;
the exit-code contract is also checked on a real subprocess, as a script sees it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app as cli_app
from agent_runtime.cli.run import EXIT_UNVERIFIED, exit_code
from agent_runtime.runtime import RunResult
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
    """The issue's first task: the agent claims success and Wi-Fi is still on — on the phone
    the run used (the default one), not on another seed's phone whose goal reads the same."""
    res = run_cli(tmp_path, CLAIM_SUCCESS, "Turn off Wi-Fi", "--json")
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "completed" and out["success"] is True  # the claim, as before
    assert out["verified"] is False and out["outcome"] == "failed_check"
    assert out["verification"]["by"] == "simphone:goal:SettingsToggle"
    assert "does not meet the goal 'Turn off Wi-Fi in Settings.'" in out["verification"]["detail"]
    text = one_line(res.stderr)
    assert "SimPhone reads this goal as its SettingsToggle task" in text and "(simphone:0)" in text
    assert "failed after 1 step (the Worker terminated with success): the agent says it is done" in text
    assert "failed the check: SimPhone (SettingsToggle, read from the goal's words)" in text
    assert "completed after" not in text
    record = read_run_record(Path(out["run_dir"]) / "run.json")
    assert record.verification is not None and record.verification.verified is False
    assert record.device["spec"] == "simphone:0"


def run_subprocess(tmp_path: Path, script: dict[str, object], *args: str, env: dict[str, str] | None = None):
    """``agent-runtime run`` in its own process, as a script starts it."""
    cfg = tmp_path / "c.toml"
    with ScriptedOpenAIServer(script) as srv:
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "scripted"\nretries = 0\n'
            "timeout_s = 10\n[roles.rag]\nenabled = false\n",
            encoding="utf-8",
        )
        command = [sys.executable, "-m", "agent_runtime.cli", "run", *args, "-c", str(cfg)]
        return subprocess.run(
            [*command, "--runs-dir", str(tmp_path / "runs")],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "300", **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )


def test_a_claim_nothing_could_check_is_unverified_with_its_own_exit_code(tmp_path):
    """A phone over adb (SimPhone served over the adb protocol, as a real phone is reached):
    nothing can check the run, so the claim is not a success a script could mistake."""
    pytest.importorskip("adbutils")
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.adb.server import AdbServer

    with AdbServer([SimPhone(0)]) as server:
        port = str(server.port)
        adb = {"ANDROID_ADB_SERVER_PORT": port, "ADBUTILS_ADB_PATH": "/bin/true"}
        res = run_subprocess(
            tmp_path, CLAIM_SUCCESS, "Turn off Wi-Fi", "--device", "adb:emulator-5554", env=adb
        )
    assert res.returncode == EXIT_UNVERIFIED == 3, res.stderr
    text = one_line(res.stderr)
    final = next(ln for ln in reversed(res.stderr.splitlines()) if " after 1 step" in ln)
    assert final.startswith("unverified after 1 step (the Worker terminated with success)"), final
    assert "the agent says it is done; nothing checked it" in final and "completed" not in final
    assert "not checked: only SimPhone tasks can be checked; this run's device is adb:emulator-5554" in text
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
    said = one_line(shown.stdout)
    assert "outcome: unverified after 1 step (the Worker terminated with success)" in said
    assert "check: not checked — only SimPhone tasks can be checked" in said and "claimed" not in said
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
    assert "failed the check: SimPhone (ContactsPhoneQuestion, read from the goal's words)" in text
    assert "does not match the expected" in text


def test_a_text_no_template_has_is_judged_by_the_phone_and_refuted(tmp_path):
    """Nothing changed on the phone, so the claim is refuted — and the run said before it
    started that no template expresses the goal, naming the closest."""
    res = run_cli(tmp_path, CLAIM_SUCCESS, "Add a note saying buy milk")
    assert res.exit_code == 1, res.output
    text = one_line(res.stderr)
    said_first = text.split("failed after")[0]
    assert "no SimPhone template expresses this goal (closest: NotesCreate" in said_first
    assert "failed the check: SimPhone (the phone's state change)" in text
    assert "check: nothing on the phone changed" in text


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


def test_a_seeded_phone_is_the_phone_the_goal_is_checked_on(tmp_path):
    task = match_goal("Turn off Wi-Fi")
    same = match_goal("turn OFF  wi-fi in settings.")
    assert task is not None and same is not None and (same.name, same.seed) == (task.name, task.seed)
    assert match_goal("Turn off Wi-Fi", seed=7) is None  # SettingsToggle/7 is another toggle
    res = run_cli(tmp_path, CLAIM_SUCCESS, "Turn off Wi-Fi", "--device", "simphone:7", "--json")
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert out["verification"]["by"] == "simphone:goal:SettingsToggle"
    assert read_run_record(Path(out["run_dir"]) / "run.json").device["spec"] == "simphone:7"


@pytest.mark.parametrize(
    ("status", "success", "verification", "code"),
    [
        ("completed", True, Verification(checked=True, success=True), 0),
        ("completed", True, Verification(checked=True, success=False), 1),
        ("completed", True, Verification(), 3),
        ("completed", True, None, 3),
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
    assert shown.exit_code == 0 and "outcome: unverified after 0 steps" in shown.stdout


def test_print_result_says_what_the_cli_says(tmp_path):
    """The Python API's one line is the CLI's summary, the check's finding first."""
    refuted = Verification(
        checked=True, success=False, by="simphone:goal:ClockAddAlarm", detail="no 6:45 alarm"
    )
    result = RunResult(
        run_id="r", task="Set an alarm for 6:45", status="completed", success=True, steps=2,
        run_dir=tmp_path, reason="the Worker terminated with success", verification=refuted,
    )  # fmt: skip
    line = str(result)
    assert line.startswith(
        "failed after 2 steps (the Worker terminated with success): the agent says it is done"
    )
    assert "failed the check: SimPhone (ClockAddAlarm, read from the goal's words)" in line
    assert "(check: no 6:45 alarm)" in line and result.outcome == "failed_check"
    assert result.summary()["outcome"] == "failed_check"
    unchecked = result.model_copy(update={"verification": Verification(detail="the device is adb")})
    assert str(unchecked).startswith("unverified after 2 steps") and unchecked.outcome == "unverified"
