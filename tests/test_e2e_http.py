"""End to end over real HTTP: `agent-runtime serve` (tiny offline Qwen2.5-VL), then `agent-runtime run`.

The tiny model answers garbage, so every role reply fails to parse: re-asks, the first-plan
fallback, Worker format failures and the step budget are all exercised through the real server,
the real OpenAI client and a real subprocess. The run must end cleanly (exit 1, a terminal
status) and leave a complete, readable trace.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
import pytest

from agent_runtime.traces import load_run

pytestmark = [pytest.mark.slow, pytest.mark.train]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_server(tiny_vlm_dir, tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agent_runtime.cli",
                "serve",
                "--backend",
                "transformers",
                "--model",
                str(tiny_vlm_dir),
                "--port",
                str(port),
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"agent-runtime serve exited early:\n{log.read_text()}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail(f"agent-runtime serve did not come up:\n{log.read_text()}")
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_garbage_model_run_ends_cleanly_with_a_readable_trace(tiny_server, tmp_path):
    cfg = tmp_path / "agent-runtime.toml"
    # Every role points at the tiny server; small images and short replies keep it to seconds.
    cfg.write_text(
        f'[models.tiny]\nbase_url = "{tiny_server}"\nmodel = "auto"\nmax_tokens = 24\nmax_pixels = 200704\n'
        "retries = 0\ntimeout_s = 120\n"
        + "".join(f'[roles.{r}]\nmodel = "tiny"\n' for r in ("manager", "worker", "reflector", "notetaker"))
        + '[roles.rag]\nmodel = "tiny"\nenabled = false\n[graph]\nreask = 1\n',
        encoding="utf-8",
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_runtime.cli",
            "run",
            "Turn on Wi-Fi",
            "--device",
            "simphone",
            "--max-steps",
            "3",
            "--json",
            "--config",
            str(cfg),
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    out = json.loads(p.stdout)
    assert out["success"] is False and out["status"] in {"max_steps", "gave_up", "failed"}

    run = load_run(out["run_dir"])
    assert run.run.status == out["status"] and run.run.finished_at is not None
    assert run.run.models["worker"]["base_url"] == tiny_server and run.run.tokens.total_tokens > 0
    assert len(run.steps) == out["steps"] >= 1
    roles = {c.role for c in run.calls}
    assert {"manager", "worker"} <= roles
    errors = [c for c in run.calls if c.parse_error]
    assert errors, "the tiny model's replies should not parse"
    assert any(c.attempt == 1 for c in errors)  # re-asked with the error appended
    reask = next(c for c in run.calls if c.attempt == 1)
    assert (
        reask.messages[-1]["role"] == "user"
        and "could not be used" in reask.messages[-1]["content"][0]["text"]
    )
    assert all(c.model and c.latency_ms > 0 for c in run.calls)
    # Messages reference the saved screenshots, which are on disk.
    image = run.calls[0].messages[0]["content"][1]
    assert image["type"] == "image_ref" and run.screen(image["ref"]).startswith(b"\x89PNG")
    assert all(s.format_failure == (s.action is None) for s in run.steps)
