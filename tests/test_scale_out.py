"""The execution backend without Ray: traces that travel, the local backend, ``run --tasks``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app as cli_app
from agent_runtime.errors import ConfigError
from agent_runtime.execution import Job, LocalBackend, Workplace, relocate
from agent_runtime.execution.batch import TaskOutcome, batch_exit_code, read_tasks
from agent_runtime.execution.bundle import pack, unpack
from tests.doubles import ScriptCall, manager_reply, notetaker_reply, worker_reply


# -- a scripted agent that answers ShopPriceQuestion in one step (also used by test_ray_cluster) ----
def shop_price_worker(call: ScriptCall) -> str:
    from agent_runtime.simphone.apps.shop import product_by_name

    product = product_by_name(re.search(r"How much does the (.+?) cost", call.prompt)[1])  # type: ignore[index]
    return worker_reply({"action": "answer", "text": f"It costs ${product.price_cents / 100:.2f}"}, "answer")


SCRIPT = {
    "manager": manager_reply(["Answer with the price"]),  # the Worker's answer ends the run
    "worker": shop_price_worker,
    "reflector": "### Outcome ###\nA\n### Error Description ###\nNone",
    "notetaker": notetaker_reply("- price known"),
}


def test_traces_travel_whole_and_replace_a_partial_one(tmp_path: Path) -> None:
    scratch, home = tmp_path / "scratch", tmp_path / "runs"
    (scratch / "run-1" / "steps").mkdir(parents=True)
    (scratch / "run-1" / "run.json").write_text('{"status": "completed"}')
    (scratch / "run-1" / "steps" / "0.json").write_text("{}")
    (home / "run-1").mkdir(parents=True)
    (home / "run-1" / "partial.json").write_text("{}")  # a dead try's leftovers
    placed = unpack(pack(scratch), home)
    assert placed == [home / "run-1"]
    assert sorted(p.name for p in (home / "run-1").rglob("*")) == ["0.json", "run.json", "steps"]
    assert [p.name for p in home.iterdir()] == ["run-1"]  # no staging left behind
    assert pack(tmp_path / "empty") == b""


def test_relocate_moves_nested_run_dirs_only_under_the_scratch(tmp_path: Path) -> None:
    from agent_runtime.trainers.online.rollouts import EpisodeRecord

    inner = EpisodeRecord(
        task_id="t:1", task_name="t", task_seed=0, sample_seed=1, iteration=0, group_index=0, run_dir="/s/k/r"
    )
    other = inner.model_copy(update={"run_dir": "/elsewhere/r"})
    assert relocate(inner, Path("/s/k"), tmp_path).run_dir == str(tmp_path / "r")
    assert relocate(other, Path("/s/k"), tmp_path) is other


def _stamp(log: list[tuple[str, float, float]], name: str, place: Workplace) -> str:
    start = time.perf_counter()
    time.sleep(0.05)
    log.append((name, start, time.perf_counter()))
    return threading.current_thread().name


def test_local_backend_never_overlaps_tasks_on_one_phone() -> None:
    import functools

    log: list[tuple[str, float, float]] = []
    jobs = [Job(f"p{i}", functools.partial(_stamp, log, f"p{i}"), device="adb:one") for i in range(4)]
    jobs += [Job(f"s{i}", functools.partial(_stamp, log, f"s{i}")) for i in range(4)]
    done = {job.key for job, _ in LocalBackend(4, "thread").run(jobs)}
    assert done == {j.key for j in jobs}
    phone = sorted((a, b) for name, a, b in log if name.startswith("p"))
    assert all(prev_end <= start for (_, prev_end), (start, _) in zip(phone, phone[1:], strict=False))
    sims = sorted((a, b) for name, a, b in log if name.startswith("s"))
    assert any(start < prev_end for (_, prev_end), (start, _) in zip(sims, sims[1:], strict=False))


def test_a_bad_tasks_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tasks.txt"
    path.write_text('# comment\nTurn on Wi-Fi\n\n{"task": "x", "phone": "adb"}\n')
    with pytest.raises(ConfigError, match=r"tasks.txt:4"):
        read_tasks(path)
    path.write_text('Turn on Wi-Fi\n{"task": "Open Clock", "device": "simphone:3"}\n')
    assert [(n, t.task, t.device) for n, t in read_tasks(path)] == [
        (1, "Turn on Wi-Fi", None),
        (2, "Open Clock", "simphone:3"),
    ]


def test_exit_code_is_zero_only_when_every_task_was_verified() -> None:
    def o(word: str) -> TaskOutcome:
        return TaskOutcome(line=1, task="t", device="simphone", status="completed", outcome=word)

    assert batch_exit_code([o("verified"), o("verified")]) == 0
    assert batch_exit_code([o("verified"), o("unverified")]) == 3
    assert batch_exit_code([o("unverified"), o("failed_check")]) == 1


def test_run_tasks_plays_a_file_and_prints_one_summary(tmp_path: Path) -> None:
    from agent_runtime.simphone.tasks import make_task
    from tests.doubles import ScriptedOpenAIServer

    goals = [make_task("ShopPriceQuestion", seed).goal for seed in (0, 1, 2)]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        f"{goals[0]}\n"
        + "".join(
            json.dumps({"task": g, "device": f"simphone:{s}"}) + "\n"
            for s, g in [(1, goals[1]), (2, goals[2])]
        )
    )
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "scripted-http"\nretries = 0\n'
            f'timeout_s = 20\n[roles.rag]\nenabled = false\n[runs]\ndir = "{tmp_path / "runs"}"\n'
        )
        res = CliRunner().invoke(
            cli_app, ["run", "--tasks", str(tasks), "--config", str(cfg), "--workers", "2", "--json"]
        )
    data = json.loads(res.stdout.strip().splitlines()[0])
    assert data["tasks"] == 3 and data["outcomes"] == {"verified": 3}, data
    assert res.exit_code == 0 == data["exit_code"]
    assert [r["line"] for r in data["results"]] == [1, 2, 3]
    assert len(list((tmp_path / "runs").iterdir())) == 3


# -- --ray everywhere: evolve and distill take eval's option; online RL's local rollouts ------------
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "agent_runtime.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_evolve_and_distill_offer_evals_ray_option() -> None:
    from agent_runtime.cli.cluster import RAY_HELP, RAY_METAVAR

    for command in ("eval", "evolve", "distill"):
        shown = _flat(_cli(command, "--help").stdout)
        assert f"--ray {RAY_METAVAR}" in shown and _flat(RAY_HELP) in shown, command
    assert "--ray-address" not in _cli("distill", "--help").stdout  # hidden: deprecated


def test_evolve_ray_reaches_the_backend(tmp_path: Path) -> None:
    # A blank address is refused by the Ray backend when it connects: the flag got there.
    res = _cli("evolve", "--out", str(tmp_path / "out"), "--tasks", "ShopPriceQuestion", "--ray", " ")
    assert res.returncode == 2, res.stderr
    assert "--ray needs local, auto or a cluster address" in res.stderr and "Traceback" not in res.stderr


class _Reached(Exception):
    pass


def test_evolve_ray_beats_the_configs_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_runtime.evaluation import harness

    asked: list[tuple[str | None, float]] = []

    def seam(ray: str | None, workers: int, executor: str, *, schedule_timeout_s: float) -> None:
        asked.append((ray, schedule_timeout_s))
        raise _Reached

    monkeypatch.setattr(harness, "open_backend", seam)
    from agent_runtime import demo_model
    from agent_runtime.config import ClusterConfig

    demo = demo_model.demo_config()  # the config evolve plays without --config, with a [cluster]
    cluster = ClusterConfig(ray_address="cfg-host:6379", schedule_timeout_s=7)
    monkeypatch.setattr(demo_model, "demo_config", lambda: demo.model_copy(update={"cluster": cluster}))
    base = ["evolve", "--out", str(tmp_path / "out"), "--tasks", "ShopPriceQuestion"]
    for extra, expected in (
        ([], "cfg-host:6379"),
        (["--ray", "flag-host:6379", "--overwrite"], "flag-host:6379"),
    ):
        res = CliRunner().invoke(cli_app, [*base, *extra])
        assert isinstance(res.exception, _Reached), res.output
        assert asked[-1] == (expected, 7.0)
    options = json.loads((tmp_path / "out" / "evolve.json").read_text())
    assert options["options"]["ray"] == "flag-host:6379"


def test_distill_ray_and_its_deprecated_alias(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")  # passes the base check: Ray is refused before loading
    args = [
        "distill",
        "--method",
        "trpo",
        "--role",
        "worker",
        "--base",
        str(base),
        "--out",
        str(tmp_path / "o"),
    ]
    args += ["--env", "simphone", "--tasks", "ShopPriceQuestion"]
    cfg = tmp_path / "c.toml"
    cfg.write_text('[cluster]\nray_address = "auto"\n')
    for extra in (["--ray", "auto"], ["--ray-address", "auto"], ["--config", str(cfg)]):
        res = CliRunner().invoke(cli_app, [*args, *extra])
        assert res.exit_code == 2, res.output
        assert "Ray rollout workers sample from a policy server" in res.output, extra
        assert "with --ray" in res.output and "Traceback" not in res.output
        assert ("--ray-address is deprecated" in res.output) == ("--ray-address" in extra)
    res = CliRunner().invoke(cli_app, [*args, "--ray", "local", "--ray-address", "auto"])
    assert res.exit_code == 2 and "disagree" in res.output


class _Recorder:
    """Stands in for a RolloutWorker: records the thread that played each request."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def play(self, request: Any) -> Any:
        from agent_runtime.trainers.online.rollouts import EpisodeRecord, RolloutResult

        time.sleep(0.02)
        self.threads.append(threading.current_thread().name)
        fields = request.model_dump()
        return RolloutResult(episode=EpisodeRecord(task_id=request.task_name, **fields))


def test_local_rollouts_play_on_the_local_backend_in_request_order() -> None:
    from agent_runtime.trainers.online.rollouts import LocalRollouts, group_requests

    requests = group_requests([("ShopPriceQuestion", 0), ("ClockAlarmTimeQuestion", 1)], 3, 1, 0)
    worker = _Recorder()
    runner = LocalRollouts(3)
    results = runner.play(worker, requests)  # type: ignore[arg-type]
    assert [(r.episode.task_name, r.episode.group_index) for r in results] == [
        (q.task_name, q.group_index) for q in requests
    ]
    assert isinstance(runner.backend, LocalBackend)
    assert worker.threads and all(t.startswith("episode") for t in worker.threads)  # the backend's pool


@pytest.mark.parametrize("form", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}", "localhost:{port}"])
def test_a_cluster_address_nothing_listens_on_fails_fast_with_a_hint(form: str) -> None:
    """``ray.init`` retries such an address for minutes; connect says so at once, before it."""
    import socket

    from agent_runtime.errors import ClusterError
    from agent_runtime.execution.ray_backend import connect

    class NeverCalled:  # the real ray.init must not be reached
        def is_initialized(self) -> bool:
            return False

        def init(self, **_: Any) -> None:
            raise AssertionError("ray.init was called")

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = form.format(port=port)
    started = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach the Ray cluster") as caught:
        connect(NeverCalled(), address, workers=1)
    assert time.monotonic() - started < 5
    assert "--ray local" in (caught.value.hint or "")
