"""README command (1): `agent-runtime demo` runs the whole pipeline offline, as a real process."""

import os
import subprocess
import sys

import pytest

from agent_runtime.traces import iter_runs, load_run


@pytest.mark.train
def test_demo_runs_end_to_end_with_a_complete_trace(tiny_vlm_dir, tmp_path):
    cache = tmp_path / "cache" / "agent-runtime"
    cache.mkdir(parents=True)
    (cache / "tiny-vlm").symlink_to(tiny_vlm_dir)  # reuse the session's model instead of rebuilding
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_runtime.cli",
            "demo",
            "Turn on Wi-Fi",
            "--max-steps",
            "1",
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "random weights" in out.stderr and "pipeline ok" in out.stderr
    assert "Traceback" not in out.stderr
    (run_dir,) = list(iter_runs(tmp_path / "runs"))
    run = load_run(run_dir)
    assert run.run.status in {"max_steps", "gave_up", "completed", "failed"}
    assert {c.role for c in run.calls} >= {"manager", "worker"}
    assert all(c.model == "tiny-vlm" for c in run.calls)
    assert len(run.steps) == 1 and (run_dir / run.steps[0].before_screen).is_file()
