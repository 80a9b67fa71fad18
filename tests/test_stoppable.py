"""Every long command stops within a second on Ctrl-C (SIGINT) and on SIGTERM alike.

Each command is a real subprocess caught in the middle of its long work — ``eval`` with two
episodes in worker threads waiting on a model server that never answers, ``serve`` generating
long completions, ``evolve`` evaluating its start with the tiny in-process LM — and is sent the
signal. It must exit within :data:`BOUND_S` seconds with 130, say it was interrupted (and how to
continue, where the command resumes), with no traceback, and every run it had in flight must be
recorded ``interrupted`` (resumable), never left ``running``.
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_runtime.traces import read_run_record
from tests.doubles import ScriptedOpenAIServer, manager_reply, notetaker_reply, worker_reply
from tests.test_interrupt import _env

#: From the signal to the process's exit (about 1 s asked; a loaded CI box is slower).
BOUND_S = 2.0
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])


class HangAll:
    """Every Worker request waits until released; ``arrived(n)`` waits for n of them."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._count = 0
        self._cond = threading.Condition()

    def arrived(self, n: int, timeout: float = 60) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._count >= n, timeout)

    def script(self) -> dict[str, Any]:
        def worker(call: Any) -> str:
            with self._cond:
                self._count += 1
                self._cond.notify_all()
            self.release.wait(60)
            return worker_reply({"action": "open_app", "text": "Clock"}, "open the Clock")

        return {
            "manager": manager_reply(["Open the Clock app"]),
            "worker": worker,
            "reflector": "### Outcome ###\nA\n\n### Error Description ###\nNone\n",
            "notetaker": notetaker_reply("- ok"),
        }


def cli(
    cwd: Path, *args: str, code: str = "from agent_runtime.cli import main; main()"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=_env(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(child: subprocess.Popen[str], sig: int) -> tuple[float, str, str]:
    """Send ``sig``; (seconds to exit, stdout, stderr). Fails if it is still running after 60 s."""
    sent = time.monotonic()
    child.send_signal(sig)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"still running 60 s after the signal\n{err}")
    return time.monotonic() - sent, out, err


def assert_stopped(elapsed: float, child: subprocess.Popen[str], out: str, err: str) -> str:
    print(f"exit {elapsed:.2f} s after the signal")
    assert child.returncode == 130, (child.returncode, err)
    assert elapsed < BOUND_S, f"exit took {elapsed:.1f} s\n{err}"
    assert "Traceback" not in err, err
    said = " ".join((out + err).split())
    assert "nterrupted" in said, said
    return said


def run_statuses(runs: Path) -> list[str]:
    return [read_run_record(p).status for p in sorted(runs.rglob("run.json"))]


def http_config(path: Path, base_url: str) -> None:
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted-http"\ncoords = "relative_1000"\n'
        "retries = 0\ntimeout_s = 120\n"
        "[roles.rag]\nenabled = false\n[graph]\nmax_steps = 3\n[memory]\nexperience = false\n",
        encoding="utf-8",
    )


@SIGNALS
def test_eval_with_episodes_in_worker_threads_stops_at_once(tmp_path, sig):
    # Two episodes play at once in worker threads, each waiting on a Worker request that never
    # answers: before the fix the main thread's KeyboardInterrupt waited for them (a minute or
    # more), and SIGTERM killed the process with both runs left "running".
    hang = HangAll()
    with ScriptedOpenAIServer(hang.script()) as server:
        http_config(tmp_path / "agent-runtime.toml", server.base_url)
        child = cli(
            tmp_path, "eval", "--policy", "agent", "--tasks", "ClockStartTimer", "--episodes", "2",
            "--workers", "2", "--json",
        )  # fmt: skip
        assert hang.arrived(2), child.communicate(timeout=5)
        time.sleep(0.2)
        elapsed, out, err = stop(child, sig)
        hang.release.set()
    assert_stopped(elapsed, child, out, err)
    assert run_statuses(tmp_path / "runs") == ["interrupted", "interrupted"]


def _serve(tmp_path: Path, model: Path) -> tuple[subprocess.Popen[str], str]:
    # --lookup-tokens 0: the tiny random LM repeats itself, which lookup decoding would run through
    # several times faster, ending generations before the signal comes.
    child = cli(
        tmp_path, "serve", "--model", str(model), "--port", "0", "--threads", "1", "--max-batch", "1",
        "--lookup-tokens", "0",
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            assert child.poll() is None, child.communicate()
            continue
        found = re.search(r"listening at (\S+)", line)
        if found:
            return child, found.group(1)
    child.kill()
    pytest.fail("serve did not start listening")


@pytest.mark.train
@SIGNALS
def test_serve_stops_at_once_with_generations_in_flight(tmp_path, tiny_lm_dir, sig):
    # Greedy decoding of the tiny random LM runs to max_tokens; with --max-batch 1 the eight
    # requests decode one after another: tens of seconds of work. uvicorn's graceful shutdown
    # waited for all of it; now the generations are cancelled and the server exits at once.
    child, url = _serve(tmp_path, tiny_lm_dir)
    replies: list[int] = []

    def ask() -> None:
        body = {"model": "tiny-lm", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4000}
        try:
            replies.append(
                httpx.post(f"{url}/chat/completions", json=body | {"temperature": 0}, timeout=120).status_code
            )
        except httpx.HTTPError:
            replies.append(0)  # the connection closed at shutdown: no reply, as it should be

    asking = [threading.Thread(target=ask, daemon=True) for _ in range(8)]
    for t in asking:
        t.start()
    time.sleep(1.5)
    assert not replies, "the generations finished before the signal: make them longer"
    elapsed, out, err = stop(child, sig)
    assert_stopped(elapsed, child, out, err)
    for t in asking:
        t.join(timeout=10)
    assert 200 not in replies, replies  # nothing finished: every generation was cut off


def evolve_config(path: Path, model: Path) -> None:
    # Greedy decoding of the tiny random LM runs to max_tokens: each Manager call is seconds long.
    path.write_text(
        f'[models.default]\nmodel = "transformers:{model}"\nmax_tokens = 2200\nobservation = "ui_tree"\n'
        "temperature = 0.0\n[roles.rag]\nenabled = false\n[graph]\nmax_steps = 3\n"
        "[memory]\nexperience = false\n",
        encoding="utf-8",
    )


#: The CLI, with a line appended to ``$GENERATING`` each time the in-process engine starts a
#: reply: the test's cue that the episodes are generating (not still loading the model).
MARKED_CLI = """
import os, time
from pathlib import Path
from agent_runtime.models.engine import TransformersEngine
chat = TransformersEngine.chat
def marked(self, req):
    with Path(os.environ["GENERATING"]).open("a") as fh:
        fh.write(f"{time.time()}\\n")
    return chat(self, req)
TransformersEngine.chat = marked
from agent_runtime.cli import main
main()
"""


@pytest.mark.train
@SIGNALS
def test_evolve_stops_at_once_mid_evaluation_and_says_how_to_resume(tmp_path, tiny_lm_dir, sig, monkeypatch):
    # Before the fix the first Ctrl-C waited for the episodes in flight (about 70 s with the
    # demo model), and the process ran on after printing "interrupted"; SIGTERM killed it.
    evolve_config(tmp_path / "agent-runtime.toml", tiny_lm_dir)
    out_dir, mark = tmp_path / "evolved", tmp_path / "generating"
    monkeypatch.setenv("GENERATING", str(mark))
    child = cli(
        tmp_path, "evolve", "--out", str(out_dir), "-c", "agent-runtime.toml", "--role", "manager,worker",
        "--tasks", "ClockStartTimer", "--eval-episodes", "2", "--workers", "2", code=MARKED_CLI,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not mark.exists() or len(mark.read_text().splitlines()) < 2:  # both episodes generate
        assert child.poll() is None and time.monotonic() < deadline, child.communicate(timeout=60)
        time.sleep(0.05)
    time.sleep(0.5)
    assert child.poll() is None, child.communicate()
    elapsed, out, err = stop(child, sig)
    said = assert_stopped(elapsed, child, out, err)
    assert f"continue with: agent-runtime evolve --out {out_dir} -c agent-runtime.toml" in said, said
    assert said.rstrip().endswith("--resume"), said
    assert run_statuses(out_dir / "iter_0000" / "eval-runs") == ["interrupted", "interrupted"]
    state = json.loads((out_dir / "evolve.json").read_text(encoding="utf-8"))
    assert state["best"] is None  # the start's evaluation did not finish: --resume replays it


def hidden_package_cli(package: str) -> str:
    """The CLI with ``package`` not installed, as ``importlib.util.find_spec`` tells it."""
    return (
        "import importlib.util as u\n"
        "real = u.find_spec\n"
        f"u.find_spec = lambda name, *a: None if name.split('.')[0] == {package!r} else real(name, *a)\n"
        "from agent_runtime.cli import main\n"
        "main()\n"
    )


@pytest.mark.parametrize("package", ["trl", "peft", "accelerate"])
def test_evolve_checks_the_train_extra_before_it_starts(tmp_path, package):
    out_dir = tmp_path / "evolved"
    child = cli(
        tmp_path,
        "evolve",
        "--out",
        str(out_dir),
        "--tasks",
        "ClockStartTimer",
        code=hidden_package_cli(package),
    )
    out, err = child.communicate(timeout=120)
    said = " ".join(err.split())
    assert child.returncode == 2, said
    assert f"agent-runtime evolve needs the '{package}' package, which is not installed" in said, said
    assert "pip install 'agent-runtime[train]'" in said, said
    assert "Traceback" not in err, err
    assert not out_dir.exists()  # nothing started: no evaluation of the start


#: The CLI, with a line appended to ``$TRAINING`` at each optimizer step's start: the test's cue
#: that training is under way (not still loading the model or building the dataset).
TRAINING_CLI = """
import os, time
from pathlib import Path
from transformers import Trainer
step = Trainer.training_step
def marked(self, *args, **kwargs):
    with Path(os.environ["TRAINING"]).open("a") as fh:
        fh.write(f"{time.time()}\\n")
    return step(self, *args, **kwargs)
Trainer.training_step = marked
from agent_runtime.cli import main
main()
"""


@pytest.mark.train
@SIGNALS
def test_distill_stops_at_once_mid_training(tmp_path, tiny_lm_dir, sig, monkeypatch):
    # SFT of the tiny LM on ui_tree demonstrations, with far more steps than the test waits for.
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

    demos, out_dir, mark = tmp_path / "demos", tmp_path / "worker-sft", tmp_path / "training"
    write_demos(DemoOptions(tasks="SettingsToggle", episodes=1, observation="ui_tree"), demos)
    monkeypatch.setenv("TRAINING", str(mark))
    child = cli(
        tmp_path, "distill", "--role", "worker", "--method", "sft", "--runs-dir", str(demos),
        "--base", str(tiny_lm_dir), "--out", str(out_dir), "--max-steps", "100000", "--lora-r", "4",
        "--skip-filter", "reweight", code=TRAINING_CLI,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not mark.exists() or len(mark.read_text().splitlines()) < 3:  # a few steps are done
        assert child.poll() is None and time.monotonic() < deadline, child.communicate(timeout=60)
        time.sleep(0.05)
    elapsed, out, err = stop(child, sig)
    said = assert_stopped(elapsed, child, out, err)
    assert f"interrupted: distill sft stopped before it finished; {out_dir} holds no finished model" in said
    assert not (out_dir / "manifest.json").exists()


#: The CLI, with each run's in-process model load taking a minute (a line appended to
#: ``$LOADING`` as it starts): a load is no model call, and no cancel event can cut it short.
SLOW_LOAD_CLI = """
import os, time
from pathlib import Path
import agent_runtime.runtime as runtime
def slow_load(callers):
    with Path(os.environ["LOADING"]).open("a") as fh:
        fh.write(f"{time.time()}\\n")
    time.sleep(60)
    yield from ()
runtime._load_in_process = slow_load
from agent_runtime.cli import main
main()
"""


@SIGNALS
def test_eval_runs_still_loading_their_model_end_interrupted(tmp_path, sig, monkeypatch):
    # Before the fix the process exited at once, but the two runs, whose worker threads were
    # still loading their model, stayed "running" in run.json for ever.
    mark = tmp_path / "loading"
    monkeypatch.setenv("LOADING", str(mark))
    with ScriptedOpenAIServer(HangAll().script()) as server:
        http_config(tmp_path / "agent-runtime.toml", server.base_url)
        child = cli(
            tmp_path, "eval", "--policy", "agent", "--tasks", "ClockStartTimer", "--episodes", "2",
            "--workers", "2", "--json", code=SLOW_LOAD_CLI,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not mark.exists() or len(mark.read_text().splitlines()) < 2:  # both runs are loading
            assert child.poll() is None and time.monotonic() < deadline, child.communicate(timeout=60)
            time.sleep(0.05)
        time.sleep(0.2)
        elapsed, out, err = stop(child, sig)
    assert_stopped(elapsed, child, out, err)
    assert run_statuses(tmp_path / "runs") == ["interrupted", "interrupted"]
    for run_json in (tmp_path / "runs").rglob("run.json"):
        [session] = read_run_record(run_json).sessions
        assert session.ended == "interrupted" and session.ended_at is not None
