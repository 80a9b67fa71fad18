"""``kill -9`` at different moments of a real ``agent-runtime run``, then ``run --resume``.

The run is a subprocess on an in-process SimPhone, its roles answered by a scripted
OpenAI-compatible server in this process. After the resume the trace must hold every step
once (0..n-1), calls.jsonl must read back with no call written twice, the phone must be where
the trace says — replaying the trace's actions on a fresh phone reproduces every recorded
after-screen, and the resumed run's first look at the phone is the screen saved before the
kill (no re-observed ``-r`` screen) — and run.json's totals include the killed session.

The adb variant drives a SimPhone served by ``agent-runtime simphone serve`` in a process of
its own through the Android driver (``--device adb:SERIAL``): the phone outlives the killed
run, and the resumed run must pick it up where the trace left it, with nothing replayed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

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


def script(gate: Gate, actions: list[dict[str, Any]] = ACTIONS) -> dict[str, Any]:
    def manager(call: Any) -> str:
        gate.wait_here("manager", call.index)
        return manager_reply(["Look around the phone"])

    def worker(call: Any) -> str:
        gate.wait_here("worker", call.index)
        return worker_reply(actions[call.index % len(actions)], "next")

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


def agent(
    cwd: Path, *args: str, hook: str | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_RUNTIME_")}
    env.update(extra_env or {})
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


def kill_and_resume(
    tmp_path: Path,
    *,
    gate: Gate,
    hook: str | None = None,
    dead_config: bool = False,
    device: str | None = None,
    extra_env: dict[str, str] | None = None,
    actions: list[dict[str, Any]] = ACTIONS,
):
    """Run until killed (by ``hook`` inside the child, or here when ``gate`` is reached), then resume.

    ``device`` (a ``--device`` spec) replaces the configured in-process SimPhone; ``extra_env``
    goes to both child processes."""
    with ScriptedOpenAIServer(script(gate, actions)) as server:
        children: list[subprocess.Popen[str]] = []
        try:
            cfg = tmp_path / "recorded.toml"
            write_config(cfg, server.base_url)
            started = time.time()
            where = ("--device", device) if device else ()
            child = agent(
                tmp_path,
                "run",
                "Look around Settings, the Clock and Notes",
                "--config",
                str(cfg),
                "--json",
                *where,
                hook=hook,
                extra_env=extra_env,
            )
            children.append(child)
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
            resumed = agent(
                tmp_path, "run", "--resume", run_dir.name, "--runs-dir", "runs", "--json", extra_env=extra_env
            )
            children.append(resumed)
            out, err = resumed.communicate(timeout=120)
        finally:  # a failed assertion leaves no child behind, no request hanging
            gate.release.set()
            for proc in children:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
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


#: The Worker's actions on the phone served over adb (no ``wait``: the Android driver sleeps it).
ADB_ACTIONS: list[dict[str, Any]] = [
    {"action": "open_app", "text": "Settings"},
    {"action": "swipe", "coordinate": [500, 750], "coordinate2": [500, 300]},
    {"action": "open_app", "text": "Clock"},
    {"action": "system_button", "button": "Home"},
    {"action": "open_app", "text": "Notes"},
    {"action": "system_button", "button": "Back"},
]
ADB_SERIAL = "emulator-5554"


@pytest.fixture()
def served_phone(tmp_path: Path) -> Iterator[dict[str, str]]:
    """``agent-runtime simphone serve`` (SimPhone ``SEED``) in its own process, which outlives the
    killed run; yields the environment that points adbutils at it (and never at a real adb)."""
    env = {"ADBUTILS_ADB_PATH": "/bin/true"}  # adbutils must not start the adb from its wheel
    log = (tmp_path / "serve.err").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_runtime.cli", "simphone", "serve", "--port", "0", "--seed", str(SEED)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("serving 1 SimPhone(s) on 127.0.0.1:"), first + Path(log.name).read_text()
        port = first.split("127.0.0.1:")[1].split(":")[0]
        yield {**env, "ANDROID_ADB_SERVER_PORT": port}
    finally:
        proc.kill()
        proc.wait(timeout=10)
        log.close()


def pixels(png: bytes) -> tuple[tuple[int, int], bytes]:
    with Image.open(io.BytesIO(png)) as image:
        return image.size, image.convert("RGB").tobytes()


def test_kill_in_a_model_call_on_a_phone_over_adb_then_resume(tmp_path, served_phone, monkeypatch):
    # The phone is SimPhone served over the adb protocol by another process, driven by the
    # Android driver: it survives the kill. The Worker's 4th request (step 3) hangs and the run
    # is killed meanwhile; no action was in flight, so the resumed run finds the phone on the
    # screen the trace left it on, and goes on from there without replaying anything.
    killed, done, err, span = kill_and_resume(
        tmp_path,
        gate=Gate("worker", 3),
        device=f"adb:{ADB_SERIAL}",
        extra_env=served_phone,
        actions=ADB_ACTIONS,
    )
    assert [s.step for s in killed.steps] == [0, 1, 2]
    assert killed.run.device["spec"] == done.run.device["spec"] == f"adb:{ADB_SERIAL}"
    assert [s.step for s in done.steps] == list(range(MAX_STEPS)), done.steps
    keys = [(c.role, c.step, c.attempt, c.started_at) for c in done.calls]
    assert len(keys) == len(set(keys)) and done.calls
    assert not done.problems
    # The first resumed look at the phone shows the screen saved before the kill, pixel for pixel
    # (the Android driver's PNGs are whatever screencap sent), and every step starts on the
    # screen the previous one left.
    last = killed.steps[-1]
    first = next(s for s in done.steps if s.step == len(killed.steps))
    assert pixels(done.screen(first.before_screen)) == pixels(killed.screen(last.after_screen))
    for prev, step in zip(done.steps, done.steps[1:], strict=False):
        assert pixels(done.screen(step.before_screen)) == pixels(done.screen(prev.after_screen)), step.step
    said = " ".join(err.split())  # the console wraps long notices
    assert "differs from" not in said and "SimPhone restored" not in said, err
    # The phone is where the trace says: its screen now is the last recorded after-screen.
    monkeypatch.setenv("ADBUTILS_ADB_PATH", served_phone["ADBUTILS_ADB_PATH"])
    from agent_runtime.devices.registry import resolve_device

    phone = resolve_device(
        f"adb:{ADB_SERIAL}", adb_port=int(served_phone["ANDROID_ADB_SERVER_PORT"]), start_server=False
    )
    try:
        assert pixels(phone.screenshot()) == pixels(done.screen(done.steps[-1].after_screen))
    finally:
        phone.close()
    # Totals include the killed session.
    assert done.run.timings["total_ms"] >= span * 1000 * 0.9
    assert done.run.timings["calls"] == len(done.calls)
    assert done.run.tokens.total_tokens == sum(c.usage.total_tokens for c in done.calls) > 0


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/agent-runtime/config.toml
