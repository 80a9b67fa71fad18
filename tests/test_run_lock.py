"""One writer per run: a run being played cannot be played again at the same time.

Two resumes of one run at once used to both play it (steps.jsonl held ``[0, 1, 1, 2, 2]``, and a
phone saw every remaining action twice). Now the first holds the run directory's lock for the
whole play and the second is refused, naming the holder; steps are written once.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig
from agent_runtime.control import InputReply, InputRequest
from agent_runtime.errors import RunLockedError
from agent_runtime.events import InputRequested, RunFinished
from agent_runtime.runlock import LOCK_NAME, RunLock
from agent_runtime.runtime import Runtime
from agent_runtime.traces import load_run, read_run_record
from tests.doubles import ScriptedChatModel, gui_owl_reply
from tests.test_run_cli import CLI

ASK = {"action": "interact", "text": "Which alarm do you mean?"}
#: The single model's replies: a step, a question, two more steps, the end.
REPLIES = [
    gui_owl_reply({"action": "open_app", "text": "Clock"}, "opened Clock"),
    gui_owl_reply(ASK, "asked"),
    gui_owl_reply({"action": "system_button", "button": "Home"}, "home"),
    gui_owl_reply({"action": "open_app", "text": "Clock"}, "opened Clock again"),
    gui_owl_reply({"action": "terminate", "status": "success"}, "done"),
]


def runtime(tmp_path: Path) -> Runtime:
    cfg = RuntimeConfig(
        roles={"rag": RoleConfig(enabled=False)}, graph=GraphConfig(kind="single", max_steps=8)
    )
    model = ScriptedChatModel(script={"single": lambda call: REPLIES[min(call.step, len(REPLIES) - 1)]})
    return Runtime(cfg, models={"single": model}, runs_dir=tmp_path)


def waiting_run(tmp_path: Path) -> str:
    """A run that stopped at its question, unanswered: status ``waiting``, resumable."""
    final = None
    for event in runtime(tmp_path).stream("Toggle my alarm", device="simphone:1", interactive=True):
        final = event if isinstance(event, RunFinished) else final
    assert final is not None and final.status == "waiting", final
    return final.run_id


def test_two_concurrent_resumes_one_plays_one_is_refused_and_steps_are_written_once(tmp_path: Path) -> None:
    run_id = waiting_run(tmp_path)
    asked, release = threading.Event(), threading.Event()
    results: list[Any] = []

    def deliberate(request: InputRequest) -> InputReply:
        asked.set()  # the first resume is playing the run (it holds the lock) …
        assert release.wait(30)
        return InputReply.answer("the 10:05 PM one")

    first = threading.Thread(
        target=lambda: results.append(runtime(tmp_path).resume(run_id, on_input=deliberate))
    )
    first.start()
    try:
        assert asked.wait(60)
        # … so a second resume, with its own runtime, is refused before it writes anything.
        with pytest.raises(RunLockedError) as refused:
            runtime(tmp_path).resume(run_id, reply=InputReply.answer("another answer"))
    finally:
        release.set()
        first.join(60)
    assert refused.value.pid == os.getpid() and refused.value.host == socket.gethostname()
    assert f"process {os.getpid()} on {socket.gethostname()} since " in refused.value.message
    [done] = results
    assert done.status == "completed", done.reason
    loaded = load_run(done.run_dir)
    steps = [s.step for s in loaded.steps]
    assert steps == sorted(set(steps)) == list(range(len(steps))), steps  # each step once, in order
    assert [i.text for i in loaded.interventions] == ["the 10:05 PM one"]
    # The lock went with the play: the run can be read, and locked, again.
    RunLock.acquire(done.run_dir).release()


def test_a_run_in_flight_cannot_be_resumed_by_another_runtime(tmp_path: Path) -> None:
    """A new run holds its lock from its first write: ``resume`` of it while it plays is refused."""
    play = runtime(tmp_path).stream("Toggle my alarm", device="simphone:1", interactive=True)
    started = None
    for event in play:
        if isinstance(event, InputRequested):
            started = event.request.run_id
            break
    assert started is not None
    with pytest.raises(RunLockedError, match="is being played by process"):
        runtime(tmp_path).resume(started)
    play.close()  # the consumer left at the question: the run waits for it, and is unlocked
    assert read_run_record(tmp_path / started / "run.json").status == "waiting"
    assert runtime(tmp_path).resume(started, reply=InputReply.answer("7 AM")).status == "completed"


def test_cli_resume_of_a_locked_run_names_the_holder_and_exits_75(tmp_path: Path) -> None:
    """Two real processes: this one holds the lock, ``run --resume`` in another is refused with
    one paragraph naming this process, exit code 75, and run.json untouched."""
    run_id = waiting_run(tmp_path / "runs")
    run_json = tmp_path / "runs" / run_id / "run.json"
    before = run_json.read_bytes()
    with RunLock.acquire(run_json.parent):
        p = subprocess.run(
            [*CLI, "run", "--resume", run_id, "--runs-dir", "runs", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if not k.startswith("AGENT_RUNTIME_")},
        )
    assert p.returncode == 75, p.stderr
    said = " ".join(p.stderr.split())  # as one paragraph, whatever the terminal's width
    assert f"is being played by process {os.getpid()} on {socket.gethostname()} since " in said
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert run_json.read_bytes() == before


def test_the_lock_is_released_when_its_holder_is_killed(tmp_path: Path) -> None:
    """No stale lock: a process killed while holding it (kill -9) leaves the run lockable."""
    code = (
        "import sys, time; from agent_runtime.runlock import RunLock; "
        "RunLock.acquire(sys.argv[1], create=True); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "r")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError) as refused:
            RunLock.acquire(tmp_path / "r")
        assert refused.value.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
    with RunLock.acquire(tmp_path / "r"):
        holder_line = json.loads((tmp_path / "r" / LOCK_NAME).read_text())
    assert holder_line["pid"] == os.getpid()
