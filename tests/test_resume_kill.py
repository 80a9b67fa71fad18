"""``kill -9`` at different moments of a real ``agent-runtime run``, then ``run --resume``.

The run is a subprocess on an in-process SimPhone, its roles answered by a scripted
OpenAI-compatible server in this process. After the resume the trace must hold every step
once (0..n-1), calls.jsonl must read back with no call written twice, the phone must be where
the trace says — replaying the trace's actions on a fresh phone reproduces every recorded
after-screen, and the resumed run's first look at the phone is the screen saved before the
kill (no re-observed ``-r`` screen) — and run.json's totals include the killed session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.actions import parse_action
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedOpenAIServer, manager_reply, notetaker_reply, worker_reply

ROOT = Path(__file__).resolve().parents[1]
SEED = 3
MAX_STEPS = 5
#: The Worker's actions, in order of its calls (relative_1000 coordinates).
ACTIONS: list[dict[str, Any]] = [
    {"action": "open_app", "text": "Settings"},
    {"action": "swipe", "coordinate": [500, 750], "coordinate2": [500, 300]},
    {"action": "wait", "time": 45},
    {"action": "open_app", "text": "Clock"},
    {"action": "system_button", "button": "Home"},
    {"action": "open_app", "text": "Notes"},
    {"action": "system_button", "button": "Back"},
]


class Gate:
    """Blocks the ``index``-th request of ``role`` until released (the run is killed meanwhile)."""

    def __init__(self, role: str | None = None, index: int = -1) -> None:
        self.role, self.index = role, index
        self.arrived = threading.Event()
        self.release = threading.Event()

    def wait_here(self, role: str, index: int) -> None:
        if role == self.role and index == self.index:
            self.arrived.set()
            self.release.wait(30)


def script(gate: Gate) -> dict[str, Any]:
    def manager(call: Any) -> str:
        gate.wait_here("manager", call.index)
        return manager_reply(["Look around the phone"])

    def worker(call: Any) -> str:
        gate.wait_here("worker", call.index)
        return worker_reply(ACTIONS[call.index % len(ACTIONS)], "next")

    def reflector(call: Any) -> str:
        gate.wait_here("reflector", call.index)
        return "### Outcome ###\nA\n\n### Error Description ###\nNone\n"

    return {
        "manager": manager,
        "worker": worker,
        "reflector": reflector,
        "notetaker": notetaker_reply("- ok"),
    }


def write_config(path: Path, base_url: str) -> None:
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted-http"\ncoords = "relative_1000"\n'
        "retries = 0\ntimeout_s = 30\n"
        f"[roles.rag]\nenabled = false\n[graph]\nmax_steps = {MAX_STEPS}\n"
        f'[device]\nspec = "simphone:{SEED}"\n[memory]\nexperience = false\n',
        encoding="utf-8",
    )


def agent(cwd: Path, *args: str, hook: str | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_RUNTIME_")}
    env["PYTHONPATH"] = str(ROOT)
    if hook:
        env["RESUME_KILL_HOOK"] = hook
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.kill_hooks import main; main()", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_and_resume(tmp_path: Path, *, gate: Gate, hook: str | None = None, dead_config: bool = False):
    """Run until killed (by ``hook`` inside the child, or here when ``gate`` is reached), then resume."""
    with ScriptedOpenAIServer(script(gate)) as server:
        cfg = tmp_path / "recorded.toml"
        write_config(cfg, server.base_url)
        started = time.time()
        child = agent(tmp_path, "run", "Look around", "--config", str(cfg), "--json", hook=hook)
        if gate.role is not None:
            assert gate.arrived.wait(60), child.communicate(timeout=5)
            child.send_signal(signal.SIGKILL)
        _, err = child.communicate(timeout=60)
        gate.release.set()
        assert child.returncode == -signal.SIGKILL, err
        (run_dir,) = (tmp_path / "runs").iterdir()
        killed = load_run(run_dir)
        assert killed.run.status == "running"
        killed_span = max(p.stat().st_mtime for p in run_dir.rglob("*") if p.is_file()) - started
        if dead_config:  # what `agent-runtime init` writes: a server nobody runs
            (tmp_path / "agent-runtime.toml").write_text(
                '[models.default]\nbase_url = "http://127.0.0.1:9/v1"\nretries = 0\n', encoding="utf-8"
            )
        resumed = agent(tmp_path, "run", "--resume", run_dir.name, "--runs-dir", "runs", "--json")
        out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 1, err  # max_steps: the Manager never says Finished
    assert out and json.loads(out)["status"] == "max_steps", err
    return killed, load_run(run_dir), err, killed_span


def check_consistent(killed: Any, done: Any, err: str, killed_span: float) -> None:
    # Every step once, in order; no call line twice.
    assert [s.step for s in done.steps] == list(range(MAX_STEPS)), done.steps
    keys = [(c.role, c.step, c.attempt, c.started_at) for c in done.calls]
    assert len(keys) == len(set(keys))
    assert not done.problems
    # The trace's steps hold what the phone did: replayed on a fresh phone they reproduce
    # every recorded after-screen, across the kill.
    phone = SimPhone(SEED)
    assert phone.screenshot_png() == (done.dir / "screens/0000.png").read_bytes()
    for step in done.steps:
        if step.action_result is not None:
            listed = (step.model_extra or {}).get("screen_actions") or [step.action_screen]
            for action in listed:
                if not phone.execute(parse_action(action)).ok:
                    break
        assert phone.screenshot_png() == done.screen(step.after_screen), f"step {step.step}"
    # The resumed run's first look at the phone equals the screen saved before the kill: every
    # step starts on the screen the previous one left.
    for prev, step in zip(done.steps, done.steps[1:], strict=False):
        assert done.screen(step.before_screen) == done.screen(prev.after_screen), f"step {step.step}"
    assert "SimPhone restored" in err
    # Totals include the killed session: its time, and every call's tokens.
    assert done.run.timings["total_ms"] >= killed_span * 1000 * 0.9
    assert done.run.timings["calls"] == len(done.calls)
    assert done.run.tokens.total_tokens == sum(c.usage.total_tokens for c in done.calls) > 0


def test_kill_in_a_model_call_then_resume(tmp_path):
    # The Worker's 4th request (step 3) hangs; the run is killed while waiting for it. The
    # resume runs with the models recorded with the run although ./agent-runtime.toml (as
    # `agent-runtime init` writes it) now points at a dead server.
    killed, done, err, span = kill_and_resume(tmp_path, gate=Gate("worker", 3), dead_config=True)
    assert [s.step for s in killed.steps] == [0, 1, 2]
    check_consistent(killed, done, err, span)
    assert done.run.models["worker"]["base_url"].startswith("http://127.0.0.1:") and ":9/" not in str(
        done.run.models
    )


def test_kill_in_the_reflector_after_the_action_ran_then_resume(tmp_path):
    # Step 2's action ran and was checkpointed; the Reflector hangs: the replay includes it.
    killed, done, err, span = kill_and_resume(tmp_path, gate=Gate("reflector", 2))
    assert [s.step for s in killed.steps] == [0, 1]
    check_consistent(killed, done, err, span)


def test_kill_in_a_device_action_then_resume(tmp_path):
    # Killed right after the 3rd action ran on the old phone, before the graph recorded it: the
    # step is not replayed, the Worker decides it again on the restored phone.
    killed, done, err, span = kill_and_resume(tmp_path, gate=Gate(), hook="execute:3")
    assert [s.step for s in killed.steps] == [0, 1]
    check_consistent(killed, done, err, span)
    assert "decides again" in err


def test_kill_while_writing_a_step_then_resume(tmp_path):
    killed, done, err, span = kill_and_resume(tmp_path, gate=Gate(), hook="step:2")
    assert [s.step for s in killed.steps] == [0, 1] and killed.problems  # the torn line, skipped
    check_consistent(killed, done, err, span)
    assert (done.dir / "steps.jsonl.torn").is_file()


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/agent-runtime/config.toml
