"""Episodes on a real Ray cluster: a head and a second node started with ``ray start`` on loopback.

One cluster for the module (Ray costs ~1 GB and seconds to start): the head has custom resource
``node_a``, the second node ``node_b`` and the phone ``adb:test-phone``, one CPU each. Teardown
stops exactly the processes this module started (found by the cluster's own temp dir and port),
never other Ray clusters on the machine, also when a test failed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.config import load_config
from agent_runtime.evaluation import AgentPolicy, ExpertPolicy, evaluate
from agent_runtime.evaluation.report import EvalReport
from agent_runtime.execution import Job, LocalBackend, Workplace
from tests.doubles import ScriptedOpenAIServer
from tests.test_scale_out import SCRIPT

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

RAY = Path(sys.executable).with_name("ray")
TASKS = "ClockAlarmTimeQuestion,SettingsToggle*,ShopPriceQuestion"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_start(*args: str) -> None:
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}  # a token in ~/.ray would split the nodes
    cmd = [str(RAY), "start", *args, *common]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]


def _stop_ours(temp_dir: str, port: int) -> None:
    """Stop the processes of this cluster only (``ray stop`` would stop every cluster here)."""
    import psutil

    marks = (temp_dir, f":{port}")
    roots = []
    for p in psutil.process_iter(["cmdline"]):
        if any(m in arg for arg in p.info["cmdline"] or [] for m in marks):
            roots.append(p)
    procs = {p.pid: p for p in roots}
    for p in roots:
        try:
            procs.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.NoSuchProcess:
            pass
    for p in procs.values():
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(list(procs.values()), timeout=10)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """``{"address", "nodes": {"node_a": NODE_ID, "node_b": NODE_ID}}`` of a two-node cluster."""
    previous_auth = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # the driver speaks to the nodes as they were started
    temp_dir = tempfile.mkdtemp(prefix="rt-")  # short: Ray's socket paths are length-limited
    port = _free_port()
    address = f"127.0.0.1:{port}"
    try:
        _ray_start(
            "--head",
            f"--port={port}",
            f"--temp-dir={temp_dir}",
            "--include-dashboard=false",
            f"--ray-client-server-port={_free_port()}",
            f"--dashboard-agent-listen-port={_free_port()}",
            '--resources={"node_a": 1}',
        )
        _ray_start(
            f"--address={address}",
            f"--dashboard-agent-listen-port={_free_port()}",
            '--resources={"node_b": 1, "adb:test-phone": 1}',
        )
        # Workers import this module's policies and job bodies as pytest did: from tests/.
        here = Path(__file__).parent
        paths = {"PYTHONPATH": os.pathsep.join([str(here.parent), str(here)])}
        ray.init(
            address=address, logging_level="WARNING", log_to_driver=False, runtime_env={"env_vars": paths}
        )
        nodes = {
            label: node["NodeID"]
            for node in ray.nodes()
            if node["Alive"]
            for label in ("node_a", "node_b")
            if label in node["Resources"]
        }
        assert set(nodes) == {"node_a", "node_b"}, ray.nodes()
        yield {"address": address, "nodes": nodes}
    finally:
        ray.shutdown()
        _stop_ours(temp_dir, port)
        if previous_auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = previous_auth


def _outcomes(report: EvalReport) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {(r.task, r.seed): (r.success, r.score, r.steps, r.status, r.answer) for r in report.results}


def test_episodes_land_on_both_nodes_with_the_local_outcomes(cluster: dict[str, Any]) -> None:
    from agent_runtime.execution.ray_backend import RayBackend

    policy = ExpertPolicy(screenshots=False)
    local = evaluate(policy, tasks=TASKS, episodes=2, seed=0, backend=LocalBackend(1))
    backend = RayBackend(cluster["address"], workers=2)
    try:
        remote = evaluate(policy, tasks=TASKS, episodes=2, seed=0, workers=2, backend=backend)
    finally:
        backend.close()
    assert remote.n == local.n >= 6
    assert _outcomes(remote) == _outcomes(local)
    assert remote.success_rate == local.success_rate
    assert set(backend.placements.values()) == set(cluster["nodes"].values())


def where(place: Workplace) -> str:
    return place.node


def test_a_phone_is_played_on_the_node_it_is_plugged_into(cluster: dict[str, Any]) -> None:
    from agent_runtime.execution.ray_backend import RayBackend

    backend = RayBackend(cluster["address"], workers=1)
    try:
        jobs = [Job(f"phone/{i}", where, device="adb:test-phone") for i in range(3)]
        nodes = {job.key: node for job, node in backend.run(jobs)}
    finally:
        backend.close()
    assert nodes == {f"phone/{i}": cluster["nodes"]["node_b"] for i in range(3)}


# -- a worker killed mid-episode ----------------------------------------------------------------------
class DiesOnce(AgentPolicy):
    """The agent, whose worker process is killed (SIGKILL, by its own pid) in the middle of the
    first try of the episode with seed ``victim``, after the run has started writing its trace."""

    def __init__(self, config: Any, marker: Path, victim: int) -> None:
        super().__init__(config)
        self.marker, self.victim = marker, victim

    def __call__(self, task: Any, device: Any) -> Any:
        from agent_runtime.events import StepStarted

        if task.seed == self.victim and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            runtime = self._runtime(self.config)
            for event in runtime.stream(
                task.goal, device=device, max_steps=task.max_steps, interactive=False
            ):
                if isinstance(event, StepStarted):
                    os.kill(os.getpid(), signal.SIGKILL)
        return super().__call__(task, device)


def test_a_worker_killed_mid_episode_is_retried_and_its_trace_recorded_once(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    from agent_runtime.execution.ray_backend import RayBackend
    from agent_runtime.traces import iter_runs, load_run

    runs = tmp_path / "runs"
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "scripted-http"\nretries = 0\n'
            f'timeout_s = 20\n[roles.rag]\nenabled = false\n[runs]\ndir = "{runs}"\n'
        )
        marker = tmp_path / "killed"
        policy = DiesOnce(load_config(cfg), marker, victim=0)
        backend = RayBackend(cluster["address"], workers=2)
        try:
            report = evaluate(
                policy, tasks="ShopPriceQuestion", split="all", episodes=3, seed=0, backend=backend
            )
        finally:
            backend.close()
    assert marker.exists(), "the victim episode never ran"
    assert backend.retries == 1
    assert report.n == 3 and report.success_rate == 1.0, report.failures()
    dirs = list(iter_runs(runs))
    assert len(dirs) == 3, dirs  # the killed try left nothing here: the episode is recorded once
    recorded = sorted(Path(r.run_dir or "").resolve() for r in report.results)
    assert recorded == sorted(d.resolve() for d in dirs)
    for d in dirs:
        loaded = load_run(d)
        assert loaded.run.status == "completed" and loaded.steps, d
        assert loaded.run.eval is not None and loaded.run.eval["task_success"] is True
    assert not [p for p in runs.iterdir() if p.name.startswith(".incoming")]


# -- the CLI ------------------------------------------------------------------------------------------
def test_cli_eval_with_ray_local_gives_the_local_outcomes(tmp_path: Path) -> None:
    """``eval --ray local`` (its own cluster on this machine) against ``eval`` without --ray."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "AGENT_RUNTIME_"))}
    args = [sys.executable, "-m", "agent_runtime.cli", "eval", "--policy", "oracle", "--json"]
    args += ["--tasks", TASKS, "--episodes", "2", "--workers", "2"]
    outs, episodes = [], []
    for extra in ([], ["--ray", "local"]):
        res = subprocess.run(args + extra, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        outs.append(json.loads(res.stdout))
        episodes.append(_episode_lines(res.stderr))
    plain, on_ray = outs
    assert on_ray["success_rate"] == plain["success_rate"] and on_ray["n"] == plain["n"] >= 6
    assert _untimed(on_ray["per_task"]) == _untimed(plain["per_task"])
    assert [_untimed(f) for f in on_ray["failures"]] == [_untimed(f) for f in plain["failures"]]
    assert episodes[0] == episodes[1] and len(episodes[0]) == plain["n"]


def _untimed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without wall-clock numbers (the only thing a backend may change)."""
    timed = ("duration_s", "seconds_per_step")
    return {k: _untimed(v) if isinstance(v, dict) else v for k, v in data.items() if k not in timed}


def _episode_lines(stderr: str) -> set[tuple[str, str]]:
    """``{(TEMPLATE/SEED, "success, N steps")}`` from --json's one stderr line per episode."""
    found = re.findall(r"^\[\d+/\d+\] (\S+): (.*?), \d+ s \(", stderr, flags=re.M)
    return set(found)


# -- a phone no node holds ------------------------------------------------------------------------------
def test_a_phone_no_node_holds_is_recorded_lost_and_the_batch_goes_on(cluster: dict[str, Any]) -> None:
    import time

    from agent_runtime.errors import ClusterError
    from agent_runtime.execution.ray_backend import RayBackend

    def lost(error: ClusterError) -> str:
        return f"lost: {error}"

    jobs = [Job(f"gone/{i}", where, device="adb:unplugged", lost=lost) for i in range(2)]
    jobs += [Job(f"here/{i}", where) for i in range(3)]
    backend = RayBackend(cluster["address"], workers=2, schedule_timeout_s=3)
    started = time.monotonic()
    try:
        results = {job.key: result for job, result in backend.run(jobs)}
        with pytest.raises(ClusterError, match="adb:unplugged within 3 s"):  # no lost result: it stops
            list(backend.run([Job("gone/2", where, device="adb:unplugged")]))
    finally:
        backend.close()
    assert time.monotonic() - started < 30  # one wait per batch, not one per episode, not forever
    assert {k: r for k, r in results.items() if k.startswith("here")} == {
        f"here/{i}": backend.placements[f"here/{i}"] for i in range(3)
    }
    for key in ("gone/0", "gone/1"):
        assert results[key].startswith(f"lost: episode {key}: no node could take a worker for device "
                                       "adb:unplugged within 3 s"), results[key]  # fmt: skip
    assert backend.lost == ["gone/0", "gone/1"]
