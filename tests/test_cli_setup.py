"""`agent-runtime --help`, `init`, `doctor` — run as real processes."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest


def cli(*args, cwd=None, env=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agent_runtime.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=60,
    )


def test_help_and_version():
    out = cli("--help")
    assert out.returncode == 0
    for command in ("init", "doctor"):
        assert command in out.stdout
    assert cli("--version").stdout.startswith("agent-runtime ")


def test_init_writes_a_valid_commented_config(tmp_path):
    out = cli("init", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "agent-runtime.toml").read_text()
    assert text.startswith("#") and "[models.default]" in text
    again = cli("init", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


@pytest.fixture
def models_server():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"object": "list", "data": [{"id": "tiny", "object": "model"}]}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_doctor_fails_clearly_when_no_endpoint_answers(tmp_path):
    (tmp_path / "agent-runtime.toml").write_text('[models.default]\nbase_url = "http://127.0.0.1:9/v1"\n')
    out = cli("doctor", cwd=tmp_path, env={"COLUMNS": "200"})
    assert out.returncode == 1
    assert "FAIL" in out.stdout and "Connect" in out.stdout and "127.0.0.1:9" in out.stdout
    assert "agent-runtime selftest" in out.stderr  # what to do next


def test_doctor_passes_against_a_live_endpoint(tmp_path, models_server):
    (tmp_path / "agent-runtime.toml").write_text(f'[models.default]\nbase_url = "{models_server}"\n')
    out = cli("doctor", cwd=tmp_path, env={"COLUMNS": "200"})
    assert "serves tiny" in out.stdout
    assert out.returncode == 0, out.stdout + out.stderr


def test_doctor_reports_bad_config(tmp_path):
    (tmp_path / "agent-runtime.toml").write_text("[graph]\nmax_steps = 0\n")
    out = cli("doctor", cwd=tmp_path, env={"COLUMNS": "200"})
    assert out.returncode == 1 and "graph.max_steps" in out.stdout


def test_bad_config_gives_no_traceback(tmp_path):
    (tmp_path / "agent-runtime.toml").write_text("[graph\n")
    out = cli("doctor", cwd=tmp_path)
    assert "Traceback" not in out.stderr + out.stdout
