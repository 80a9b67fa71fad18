"""``agent-runtime run`` end to end: real subprocesses, real HTTP to a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent_runtime.traces import load_run
from tests.doubles import ScriptedOpenAIServer, manager_reply, notetaker_reply, worker_reply

CLI = [sys.executable, "-m", "agent_runtime.cli"]


def write_config(path: Path, base_url: str, extra: str = "") -> Path:
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted-http"\nretries = 0\ntimeout_s = 10\n'
        f"[roles.rag]\nenabled = false\n{extra}",
        encoding="utf-8",
    )
    return path


def cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL
    )


OPEN_SETTINGS = {
    "manager": [manager_reply(["Open Settings"]), manager_reply("Finished", completed=["Opened Settings"])],
    "worker": worker_reply({"action": "open_app", "text": "Settings"}, "open Settings"),
    "reflector": "### Outcome ###\nA\n### Error Description ###\nNone",
    "notetaker": notetaker_reply("- Settings is open"),
}


def test_run_succeeds_with_json_summary(tmp_path):
    with ScriptedOpenAIServer(OPEN_SETTINGS) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        p = cli(
            "run",
            "Open Settings",
            "--device",
            "simphone:3",
            "--config",
            str(cfg),
            "--runs-dir",
            "runs",
            "--json",
            cwd=tmp_path,
        )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out.keys() == {
        "run_id",
        "success",
        "status",
        "verified",
        "outcome",
        "verification",
        "answer",
        "steps",
        "run_dir",
        "costs",
    }
    assert out["success"] is True and out["status"] == "completed" and out["steps"] == 1
    # "Open Settings" is no SimPhone template: judged on the phone by the app in front at the end
    assert out["verified"] is True and out["outcome"] == "verified"
    assert out["verification"]["detail"] == "Settings is in front"
    loaded = load_run(tmp_path / out["run_dir"])
    assert (
        loaded.run.device["spec"] == "simphone:3"
        and loaded.run.models["worker"]["model_id"] == "scripted-http"
    )
    assert len(srv.requests) == 5 and all(r["model"] == "scripted-http" for r in srv.requests)


def test_live_view_and_failure_exit_code(tmp_path):
    script = OPEN_SETTINGS | {
        "worker": worker_reply({"action": "terminate", "status": "failure"}, "cannot do it")
    }
    with ScriptedOpenAIServer(script) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        p = cli("run", "Open Settings", "--config", str(cfg), "--runs-dir", "runs", cwd=tmp_path)
    assert p.returncode == 1
    assert "step 0 · Open Settings" in p.stderr and '"terminate"' in p.stderr
    assert "failed after 1 step" in p.stderr and p.stdout == ""


def test_usage_and_config_errors_exit_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[graph]\nmax_stepz = 3\n")
    cases = [
        ("run",),
        ("run", "x", "--resume", "abc"),
        ("run", "x", "--config", str(bad)),
        ("run", "x", "--device", "toaster"),
        ("run", "x", "--config", str(tmp_path / "missing.toml")),
    ]
    for args in cases:
        p = cli(*args, "--runs-dir", "runs", cwd=tmp_path)
        assert p.returncode == 2, (args, p.stderr)
        assert "Traceback" not in p.stderr and "error:" in p.stderr, args


def test_dead_model_server_is_a_clean_error(tmp_path):
    cfg = write_config(tmp_path / "c.toml", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    p = cli("run", "Open Settings", "--config", str(cfg), "--runs-dir", "runs", "--json", cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "error" and out["success"] is False
    assert "error:" in p.stderr and f"--resume {out['run_id']}" in p.stderr
    loaded = load_run(tmp_path / out["run_dir"])
    assert loaded.run.status == "error" and loaded.run.error["type"] == "ModelError"


def test_kill_mid_step_then_resume(tmp_path):
    """SIGKILL the process while the Reflector's request is in flight, then --resume completes."""
    in_flight = threading.Event()
    release = threading.Event()

    def blocking_reflector(call):
        if call.index == 0:
            in_flight.set()
            release.wait(30)
        return "### Outcome ###\nA"

    with ScriptedOpenAIServer(OPEN_SETTINGS | {"reflector": blocking_reflector}) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        proc = subprocess.Popen(
            [*CLI, "run", "Open Settings", "--config", str(cfg), "--runs-dir", "runs"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert in_flight.wait(60), "the run never reached the Reflector"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        (run_dir,) = list((tmp_path / "runs").iterdir())
        killed = load_run(run_dir)
        assert killed.run.status == "running" and killed.steps == []
        roles = [c.role for c in killed.calls]  # the speculative Notetaker may or may not have answered
        assert roles[:2] == ["manager", "worker"] and set(roles[2:]) <= {"notetaker"}

        p = cli(
            "run",
            "--resume",
            run_dir.name[:15],
            "--config",
            str(cfg),
            "--runs-dir",
            "runs",
            "--json",
            cwd=tmp_path,
        )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["run_id"] == run_dir.name and out["status"] == "completed" and out["steps"] == 1
    done = load_run(run_dir)
    assert [s.step for s in done.steps] == [0] and done.steps[0].verdict.outcome == "A"
    assert done.run.status == "completed"


@pytest.mark.parametrize("status", ["completed"])
def test_resume_refuses_finished_runs(tmp_path, status):
    with ScriptedOpenAIServer(OPEN_SETTINGS) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        first = cli(
            "run", "Open Settings", "--config", str(cfg), "--runs-dir", "runs", "--json", cwd=tmp_path
        )
        run_id = json.loads(first.stdout)["run_id"]
        p = cli("run", "--resume", run_id, "--config", str(cfg), "--runs-dir", "runs", cwd=tmp_path)
    assert p.returncode == 2 and f"already ended with status '{status}'" in p.stderr


def test_runs_dir_from_config_and_time_budget(tmp_path):
    with ScriptedOpenAIServer(OPEN_SETTINGS) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, extra='[runs]\ndir = "elsewhere"\n')
        start = time.perf_counter()
        p = cli("run", "Open Settings", "--config", str(cfg), "--json", cwd=tmp_path)
        assert time.perf_counter() - start < 60
    assert (
        p.returncode == 0 and (tmp_path / "elsewhere" / json.loads(p.stdout)["run_id"] / "run.json").is_file()
    )


def test_a_demo_run_resumes_with_the_demo_model_after_init(tmp_path, monkeypatch):
    """`run --resume` uses the models and settings recorded with the run, not a config file
    written since (here: one pointing at a dead server);
    --config overrides them."""
    from typer.testing import CliRunner

    from agent_runtime import demo_model
    from agent_runtime.cli import app
    from agent_runtime.runtime import Runtime
    from agent_runtime.traces import RunRecord, TraceWriter

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    run_dir = tmp_path / "runs" / "20260101-000000-abcdef"
    with TraceWriter(run_dir) as w:
        w.write_run(
            RunRecord(
                run_id=run_dir.name,
                task="Open Settings",
                device={"spec": "simphone"},
                config=demo_model.demo_config().public(),
            )
        )
    runner = CliRunner()
    # A config written since points every role at a server that is not running.
    (tmp_path / "agent-runtime.toml").write_text(
        '[models.default]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "gui-owl"\n', encoding="utf-8"
    )
    seen = []

    def stream_resume(self, run_id, *, device=None, interactive=False):
        seen.append(self.config)
        return iter(())

    monkeypatch.setattr(Runtime, "stream_resume", stream_resume)
    runner.invoke(app, ["run", "--resume", run_dir.name])
    worker = seen[-1].model_for("worker")
    assert worker.model == demo_model.MODEL_REF and worker.base_url is None
    assert not seen[-1].role("reflector").enabled
    runner.invoke(app, ["run", "--resume", run_dir.name, "--config", "agent-runtime.toml"])
    assert seen[-1].model_for("worker").base_url == "http://127.0.0.1:8000/v1"
