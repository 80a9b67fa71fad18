"""A step's verdict says what it knows: without a Reflector the live view reports only what was
observed ("screen changed" / "no change"), never "A SUCCESS", and the trace records what reached
each verdict (``source``), readable in traces written before it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agent_runtime.cli import app as cli_app
from agent_runtime.events import VerdictEvent
from agent_runtime.traces import StepRecord, Verdict, load_run
from tests.doubles import ScriptedOpenAIServer, manager_reply, notetaker_reply, reflector_reply, worker_reply

OPEN_CLOCK = {"action": "open_app", "text": "Clock"}
TAP_NOTHING = {"action": "wait", "time": 0.1}
DONE = {"action": "terminate", "status": "success"}


def config(tmp_path: Path, base_url: str, *, reflector: bool) -> Path:
    cfg = tmp_path / "c.toml"
    off = "" if reflector else "[roles.reflector]\nenabled = false\n[roles.notetaker]\nenabled = false\n"
    cfg.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted"\nretries = 0\ntimeout_s = 10\n'
        f"[roles.rag]\nenabled = false\n{off}",
        encoding="utf-8",
    )
    return cfg


def test_without_a_reflector_the_step_line_says_what_was_observed(tmp_path):
    """The demo setup (no Reflector): a screen that changed is not "A SUCCESS"."""
    script = {
        "manager": manager_reply(["Open the Clock app"]),
        "worker": [worker_reply(OPEN_CLOCK), worker_reply(TAP_NOTHING), worker_reply(DONE)],
    }
    with ScriptedOpenAIServer(script) as srv:
        cfg = config(tmp_path, srv.base_url, reflector=False)
        res = subprocess.run(
            [sys.executable, "-m", "agent_runtime.cli", "run", "Open the Clock app", "-c", str(cfg)]
            + ["--runs-dir", str(tmp_path / "runs"), "--max-steps", "4"],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert "verdict" not in res.stderr and "SUCCESS" not in res.stderr, res.stderr
    observed = [ln.split("observed", 1)[1].strip() for ln in res.stderr.splitlines() if "observed" in ln]
    assert observed[:2] == ["screen changed", "no change — the screen did not change"], res.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert [s["verdict"]["source"] for s in steps[:2]] == ["screen_diff", "screen_diff"]


def test_a_reflectors_verdict_is_shown_and_recorded_as_the_reflectors(tmp_path):
    script = {
        "manager": [manager_reply(["Open the Clock app"]), manager_reply("Finished", completed=["Open"])],
        "worker": worker_reply(OPEN_CLOCK),
        "reflector": reflector_reply("A"),
        "notetaker": notetaker_reply("- nothing"),
    }
    with ScriptedOpenAIServer(script) as srv:
        cfg = config(tmp_path, srv.base_url, reflector=True)
        res = CliRunner().invoke(
            cli_app,
            [
                "run",
                "Open the Clock app",
                "-c",
                str(cfg),
                "--runs-dir",
                str(tmp_path / "runs"),
                "--max-steps",
                "2",
            ],
        )
    assert "verdict   A SUCCESS" in res.stderr, res.output
    run = load_run(next((tmp_path / "runs").iterdir()))
    assert run.steps[0].verdict is not None and run.steps[0].verdict.source == "reflector"


def test_traces_and_events_written_before_the_source_still_load():
    old = {"step": 0, "verdict": {"outcome": "A", "success": True, "feedback": ""}}
    record = StepRecord.model_validate(old)
    assert record.verdict == Verdict.of("A") and record.verdict.source is None
    event = VerdictEvent.model_validate({"type": "verdict", "step": 0, "outcome": "C", "success": False})
    assert event.source is None
