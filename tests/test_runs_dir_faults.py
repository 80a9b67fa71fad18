"""A runs folder that refuses writes — full, read-only, or impossible to create — ends a run in one
paragraph and exit code 1 (CLI) or a :class:`TraceWriteError` (Python), never a traceback; and
nothing is left half-written: run.json and screens are whole or absent, every JSONL line is a
whole record, no temporary file stays behind, and the run resumes once there is room.

The full and read-only folders are real: a tmpfs mounted (size-limited, or read-only) in a user
and mount namespace of the CLI's own (``unshare -rm``); the test is skipped where the kernel does
not allow that.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from agent_runtime.config import RuntimeConfig
from agent_runtime.errors import TraceWriteError
from agent_runtime.runtime import Runtime
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, ScriptedOpenAIServer
from tests.test_run_cli import CLI, OPEN_SETTINGS, write_config

ROOT = Path(__file__).resolve().parents[1]


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"], capture_output=True
    )
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs unshare -rm and tmpfs (user namespaces)")


def run_on_tmpfs(tmp_path: Path, options: str, base_url: str) -> subprocess.CompletedProcess[str]:
    """``agent-runtime run`` with ``runs/`` a tmpfs mounted with ``options``; what it left there is
    copied to ``out/`` (the mount goes with the namespace)."""
    cfg = write_config(tmp_path / "c.toml", base_url)
    (tmp_path / "runs").mkdir()
    (tmp_path / "out").mkdir()
    script = f'mount -t tmpfs -o {options} tmpfs runs && "$@"; rc=$?; cp -a runs/. out/; exit $rc'
    args = ["run", "Open Settings", "--device", "simphone", "--config", str(cfg), "--runs-dir", "runs"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_RUNTIME_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", *CLI, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def one_paragraph(err: str, says: str) -> None:
    assert "Traceback" not in err, err
    assert says in " ".join(err.split()), err
    assert "hint:" in err


def nothing_half_written(run_dir: Path) -> None:
    """Whatever the run left is whole: run.json parses, every JSONL line is a record, every
    screen is a complete PNG, and no temporary file is left."""
    assert not list(run_dir.rglob("*.tmp")), list(run_dir.rglob("*"))
    json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    for name in ("steps.jsonl", "calls.jsonl", "interventions.jsonl"):
        text = (run_dir / name).read_bytes().decode("utf-8") if (run_dir / name).exists() else ""
        assert text == "" or text.endswith("\n"), name
        for line in text.splitlines():
            json.loads(line)
    for png in (run_dir / "screens").glob("*.png"):
        Image.open(io.BytesIO(png.read_bytes())).load()


@needs_mount
@pytest.mark.parametrize("size", ["48k", "200k"])
def test_a_full_runs_folder_ends_in_one_paragraph_and_leaves_a_resumable_run(
    tmp_path: Path, size: str
) -> None:
    with ScriptedOpenAIServer(OPEN_SETTINGS) as srv:
        p = run_on_tmpfs(tmp_path, f"size={size}", srv.base_url)
        assert p.returncode == 1, p.stderr
        one_paragraph(p.stderr, "the disk is full")
        [run_dir] = (tmp_path / "out").iterdir()
        nothing_half_written(run_dir)
        assert load_run(run_dir).run.status in ("running", "error")
        # Once there is room (here: the copy on the ordinary disk), the run goes on.
        resumed = subprocess.run(
            [*CLI, "run", "--resume", run_dir.name, "--runs-dir", "out", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
    assert json.loads(resumed.stdout)["status"] == "completed", resumed.stderr
    assert [s.step for s in load_run(run_dir).steps] == [0]


@needs_mount
def test_a_read_only_runs_folder_ends_in_one_paragraph(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(OPEN_SETTINGS) as srv:
        p = run_on_tmpfs(tmp_path, "ro", srv.base_url)
    assert p.returncode == 1
    one_paragraph(p.stderr, "the file system is read-only")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_runs_folder_that_cannot_be_created_ends_in_one_paragraph(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(OPEN_SETTINGS) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        args = ["run", "Open Settings", "--device", "simphone", "--config", str(cfg)]
        p = subprocess.run(
            [*CLI, *args, "--runs-dir", "/proc/agent-runtime-test/runs"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert p.returncode == 1
    one_paragraph(p.stderr, "cannot create /proc/agent-runtime-test/runs/")


def test_python_gets_a_named_error(tmp_path: Path) -> None:
    model = ScriptedChatModel(script=OPEN_SETTINGS)
    roles = ("manager", "worker", "reflector", "notetaker")
    runtime = Runtime(
        RuntimeConfig(roles={"rag": {"enabled": False}}),
        models={r: model for r in roles},
        runs_dir="/proc/agent-runtime-test/runs",
    )
    with pytest.raises(TraceWriteError, match="cannot create /proc/agent-runtime-test/runs/"):
        runtime.run("Open Settings", device="simphone")


def test_traces_list_refuses_an_unknown_variable_exactly_as_run_does(tmp_path: Path) -> None:
    """Before: ``traces list --runs-dir DIR`` ignored an ``AGENT_RUNTIME_*`` variable that ``run``
    refuses."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_RUNTIME_")}
    env["AGENT_RUNTIME_GRAPHS__MAX_STEPS"] = "5"
    said = {}
    for command in (["traces", "list", "--runs-dir", "runs"], ["run", "Open Settings", "--runs-dir", "runs"]):
        p = subprocess.run(
            [*CLI, *command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert p.returncode == 2, p.stderr
        said[command[0]] = " ".join(p.stderr.split())
    assert "unknown configuration key in AGENT_RUNTIME_GRAPHS__MAX_STEPS" in said["traces"]
    assert said["traces"] == said["run"]
