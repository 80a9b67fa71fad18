"""User errors end in one message and exit code 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.config import MAX_STEPS_LIMIT, RuntimeConfig, check_max_steps, load_config
from agent_runtime.errors import ConfigError
from agent_runtime.runtime import Runtime

DEAD = "http://127.0.0.1:9/v1"  # nothing answers: a test that reached a model call would fail


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean place: no config file applies, no AGENT_RUNTIME_* variable is set."""
    for key in list(os.environ):
        if key.upper().startswith("AGENT_RUNTIME_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def config_file(home: Path) -> Path:
    path = home / "c.toml"
    path.write_text(f'[models.default]\nbase_url = "{DEAD}"\nretries = 0\n[roles.rag]\nenabled = false\n')
    return path


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    # An exception other than the exit itself would be a traceback for the user.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.output.split())


def test_a_config_that_is_not_utf8(home):
    bad = home / "bad.toml"
    bad.write_bytes(b'[graph]\nmax_steps = 3\nname = "\xff\xfe"\n')
    code, out = invoke("run", "Open Settings", "--config", str(bad))
    assert code == 2
    assert "bad.toml is not UTF-8 text (byte 0xff on line 3)" in out and "hint: save the file as UTF-8" in out


@pytest.mark.parametrize(
    "text",
    ["x = " + "[" * 10_000 + "]" * 10_000, "[device.options]\nx = " + "{a = " * 100 + "1" + "}" * 100],
    ids=["arrays-10000", "tables-100"],
)
def test_deeply_nested_toml(home, text):
    deep = home / "deep.toml"
    deep.write_text(text, encoding="utf-8")
    code, out = invoke("run", "Open Settings", "--config", str(deep))
    assert code == 2 and "deep.toml nests tables or arrays too deeply" in out


def test_a_config_path_that_is_a_directory(home):
    code, out = invoke("memory", "list", "--config", str(home))
    assert code == 2 and "is a directory" in out


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "AGENT_RUNTIME_GRAPH",
            "{max_steps: 3",
            "cannot read AGENT_RUNTIME_GRAPH: a list or table value must be JSON",
        ),
        ("AGENT_RUNTIME_MEMORY__SENSITIVE", "hunter2", "cannot read AGENT_RUNTIME_MEMORY__SENSITIVE"),
        ("AGENT_RUNTIME_DEVICE__OPTIONS", "[" * 50_000, "holds JSON nested too deeply"),
        (
            "AGENT_RUNTIME_GRAPHS__MAX_STEPS",
            "3",
            "unknown configuration key in AGENT_RUNTIME_GRAPHS__MAX_STEPS",
        ),
        ("AGENT_RUNTIME_FOO", "1", "unknown configuration key in AGENT_RUNTIME_FOO: 'foo' is not one of"),
        ("AGENT_RUNTIME_GRAPH__MAX_STEPZ", "3", "graph.max_stepz: unknown key"),
    ],
)
def test_bad_environment_variables(home, name, value, message):
    code, out = invoke("run", "Open Settings", "--config", str(config_file(home)), env={name: value})
    assert code == 2 and message in out, out
    assert len(out) < 1000  # one paragraph: the value itself is not echoed


def test_environment_variables_that_are_fine(home, monkeypatch):
    monkeypatch.setenv("AGENT_RUNTIME_MEMORY__SENSITIVE", '["hunter2"]')
    monkeypatch.setenv("agent_runtime_graph__max_steps", "7")  # names are case-insensitive
    monkeypatch.setenv("AGENT_RUNTIME_TRACING__LANGSMITH", "false")
    cfg = load_config()
    assert cfg.memory.sensitive == ["hunter2"] and cfg.graph.max_steps == 7
    monkeypatch.setenv("AGENT_RUNTIME_NOPE", "1")
    with pytest.raises(ConfigError, match="AGENT_RUNTIME_NOPE"):
        RuntimeConfig()  # the Python API refuses it too


@pytest.mark.parametrize("steps", [str(10**20), str(MAX_STEPS_LIMIT + 1)])
def test_max_steps_beyond_the_limit(home, steps):
    code, out = invoke("run", "Open Settings", "--config", str(config_file(home)), "--max-steps", steps)
    assert code == 2
    assert f"the step budget must be from 1 to {MAX_STEPS_LIMIT}, got {steps}" in out
    assert not (home / "runs").exists()  # refused before anything was written


def test_max_steps_bounds_everywhere(tmp_path):
    assert check_max_steps(1) == 1 and check_max_steps(MAX_STEPS_LIMIT) == MAX_STEPS_LIMIT
    for bad in (0, -1, MAX_STEPS_LIMIT + 1, 10**5000, True, 2.5):
        with pytest.raises(ConfigError, match="step budget"):
            check_max_steps(bad)  # type: ignore[arg-type]
    runtime = Runtime(RuntimeConfig(), runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="got 100000000000000000000"):
        runtime.run("Open Settings", device="simphone", max_steps=10**20)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["file", "below-a-file"])
def test_runs_dir_that_is_a_file(home, where):
    blocker = home / "runs.txt"
    blocker.write_text("not a directory")
    runs_dir = blocker if where == "file" else blocker / "sub"
    code, out = invoke(
        "run", "Open Settings", "--config", str(config_file(home)), "--runs-dir", str(runs_dir)
    )
    assert code == 2
    expected = "is a file" if where == "file" else f"cannot be created: {blocker} is a file"
    assert f"runs directory {runs_dir} {expected}" in out
    with pytest.raises(ConfigError, match="is a file"):
        Runtime(RuntimeConfig(runs={"dir": runs_dir}))


def test_a_real_process_prints_no_traceback(home):
    """The same as a user sees it: a subprocess, the console script's entry point."""
    env = {**os.environ, "AGENT_RUNTIME_GRAPH": "{junk", "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "agent_runtime.cli", "memory", "list"],
        capture_output=True,
        text=True,
        cwd=home,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "error: cannot read AGENT_RUNTIME_GRAPH" in proc.stderr
