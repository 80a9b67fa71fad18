"""After a person rejects an action, the live view prints the step's verdict like any other
step's: ``verdict C FAILURE`` with the person's reason (issue 32: it printed no verdict line).

A real ``run`` subprocess on a scripted model server; the confirmation is answered over stdin.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from agent_runtime.traces import load_run
from tests.doubles import ScriptedOpenAIServer, manager_reply, reflector_reply, worker_reply
from tests.test_graphs import write_config
from tests.test_run_cli import CLI

#: The Worker flags its action for a confirmation; after the rejection the Manager finishes.
SCRIPT = {
    "manager": lambda c: manager_reply(["Open Clock"]) if c.index == 0 else manager_reply("Finished"),
    "worker": worker_reply({"action": "open_app", "text": "Clock", "confirm": True}, "open Clock"),
    "reflector": reflector_reply("A"),
}


def test_cli_prints_the_verdict_and_the_reason_after_a_rejection(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, "[roles.notetaker]\nenabled = false\n")
        args = ["run", "Show me the clock", "--device", "simphone:1", "--config", str(cfg)]
        args += ["--runs-dir", "runs"]
        p = subprocess.run(
            [*CLI, *args],
            cwd=tmp_path,
            input="n not while I am in a meeting\n",
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "COLUMNS": "250"},  # one step line per line
        )
    err = p.stderr
    assert "Traceback" not in err, err
    assert "approve?" in err and "person    confirm: reject" in err, err
    lines = err.splitlines()
    answered = next(i for i, line in enumerate(lines) if "person    confirm: reject" in line)
    verdict = next(line for line in lines[answered:] if line.strip().startswith("verdict"))
    assert "C FAILURE" in verdict, verdict
    assert "the person rejected this action: not while I am in a meeting" in verdict, verdict
    [run_dir] = (tmp_path / "runs").iterdir()
    step = next(s for s in load_run(run_dir).steps if s.confirmation)
    assert step.verdict is not None and step.verdict.source == "person"
