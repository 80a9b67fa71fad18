"""Stops and resumes are recorded in run.json (``sessions``), not guessed from the screens, and
the viewer's timeline shows them (issue 32).

A run cancelled after its first step and resumed has two sessions: the first ``interrupted``,
the second starting at step 1. A run whose process is killed (SIGKILL: nothing can record an
end) shows ``killed`` on the timeline at once, and keeps it once resumed. Runs written before
sessions were recorded still load, and their timeline is still inferred
(tests/test_viewer_interventions.py).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from agent_runtime.traces import RunRecord, load_run, read_run_record
from agent_runtime.viewer import write_run_page
from tests.doubles import ScriptedOpenAIServer
from tests.test_interrupt import MAX_STEPS, Hang, _api_runtime, agent, http_config
from tests.test_viewer_interventions import Marks


def marks(run_dir: Path) -> list[tuple[str, str]]:
    return Marks(write_run_page(run_dir, run_dir.parent / "page.html").read_text(encoding="utf-8")).marks


def test_an_interrupted_and_resumed_run_records_both_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    hang = Hang(index=1)
    with ScriptedOpenAIServer(hang.script()) as server:
        runtime = _api_runtime(tmp_path, server.base_url)

        def cancel() -> None:
            if hang.arrived.wait(60):
                runtime.cancel()

        threading.Thread(target=cancel, daemon=True).start()
        before = time.time()
        result = runtime.run("Open the Clock app")
        hang.release.set()
        assert result.status == "interrupted" and result.steps == 1
        [first] = read_run_record(result.run_dir / "run.json").sessions
        assert (first.from_step, first.ended, first.pid) == (0, "interrupted", os.getpid())
        assert first.ended_at is not None and before <= first.started_at <= first.ended_at
        done = runtime.resume(result.run_id)
    assert done.status == "max_steps"
    first, second = read_run_record(done.run_dir / "run.json").sessions
    assert first.ended == "interrupted"
    assert (second.from_step, second.ended) == (1, "failed")  # out of steps
    assert first.ended_at is not None and second.started_at >= first.ended_at
    shown = marks(done.run_dir)
    assert [kind for kind, _ in shown] == ["stopped", "resumed"], shown
    assert shown[0][1].startswith("stopped interrupted (Ctrl-C, SIGTERM or cancel) at ")
    assert "--resume" not in shown[0][1]  # the run went on: nothing to continue
    assert shown[1][1].startswith("resumed resumed at step 1 (") and f"process {os.getpid()})" in shown[1][1]


def test_a_killed_session_shows_killed_before_and_after_the_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    hang = Hang(index=1)
    with ScriptedOpenAIServer(hang.script()) as server:
        http_config(tmp_path / "agent-runtime.toml", server.base_url)
        child = agent(tmp_path, "run", "Open the Clock app", "--runs-dir", "runs", "--json")
        assert hang.arrived.wait(120), "the run never reached step 1"
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        [run_dir] = (tmp_path / "runs").iterdir()
        record = read_run_record(run_dir / "run.json")
        assert record.status == "running"
        [session] = record.sessions
        assert (session.from_step, session.ended, session.pid) == (0, None, child.pid)
        shown = marks(run_dir)
        assert [kind for kind, _ in shown] == ["killed"], shown
        assert "killed: its process ended without recording how" in shown[0][1]
        assert f"agent-runtime run --resume {run_dir.name}" in shown[0][1]
        hang.release.set()
        done = _api_runtime(tmp_path, server.base_url).resume(run_dir.name)
    assert done.status == "max_steps" and done.steps == MAX_STEPS
    killed, resumed = read_run_record(run_dir / "run.json").sessions
    assert (killed.ended, killed.ended_at) == ("killed", None)
    assert (resumed.from_step, resumed.ended) == (1, "failed")
    shown = marks(run_dir)
    assert [kind for kind, _ in shown] == ["killed", "resumed"], shown
    assert "--resume" not in shown[0][1]


def test_run_json_without_sessions_still_loads(tmp_path: Path) -> None:
    old = RunRecord(run_id="old", task="t", status="interrupted").model_dump(mode="json")
    del old["sessions"]
    (tmp_path / "run.json").write_text(json.dumps(old), encoding="utf-8")
    assert read_run_record(tmp_path / "run.json").sessions == []
    assert load_run(tmp_path).run.status == "interrupted"


def test_recorded_sessions_replace_the_inference(tmp_path: Path) -> None:
    """A run stopped by an error, then resumed: the marks come from ``sessions`` (the screens
    say nothing here); a first session past step 0 resumed a run recorded before sessions."""
    from agent_runtime.traces import RunSession, StepRecord, TraceWriter

    path = tmp_path / "20990101-000000-sessions"
    sessions = [
        RunSession(started_at=1e9, from_step=1, pid=11, ended_at=1e9 + 5, ended="error"),
        RunSession(started_at=1e9 + 60, from_step=2, pid=12, ended_at=1e9 + 90, ended="completed"),
    ]
    with TraceWriter(path) as w:
        w.write_run(RunRecord(run_id=path.name, task="t", status="completed", sessions=sessions))
        for i in range(3):
            w.append_step(StepRecord(step=i, before_screen=f"screens/{i:04d}.png", after_screen=None))
    shown = marks(path)
    assert [kind for kind, _ in shown] == ["resumed", "stopped", "resumed"], shown
    assert "resumed at step 1" in shown[0][1] and "process 11" in shown[0][1]
    assert "stopped by an error at " in shown[1][1] and "--resume" not in shown[1][1]
    assert "resumed at step 2" in shown[2][1] and "process 12" in shown[2][1]
