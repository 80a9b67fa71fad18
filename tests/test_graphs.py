"""Every graph kind end to end: ``run --graph KIND`` over real HTTP to a scripted OpenAI-compatible
server answering in that kind's formats, on a SimPhone task the run is checked against.

The script replays the SimPhone oracle's actions for the instance (SimPhone is deterministic,
so the phone the CLI builds is the one the oracle played), written in each format: GUI-Owl's
``<tool_call>`` (``single``), Hi-Agent's subgoal + action JSON (``hi_agent``), Mobile-Agent-v3's
sections (``mobile_agent_v3``). The traces must show the designed number of sequential model
calls per step: 1, 2 and 3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.checks import TaskCheck
from agent_runtime.cli import app as cli_app
from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig
from agent_runtime.runtime import Runtime
from agent_runtime.simphone.tasks.oracle import OraclePolicy
from agent_runtime.simphone.tasks.registry import make_task
from agent_runtime.traces import load_run
from tests.doubles import (
    ScriptCall,
    ScriptedChatModel,
    ScriptedOpenAIServer,
    gui_owl_reply,
    high_reply,
    manager_reply,
    notetaker_reply,
    reflector_reply,
    worker_reply,
)
from tests.test_run_cli import cli

TASK, SEED = "ClockToggleAlarm", 1
REFLECT_A = reflector_reply("A")


def oracle_actions(task: str = TASK, seed: int = SEED) -> list[dict[str, Any]]:
    """The oracle's actions for the instance, in screen pixels, ending with its terminate."""
    check = TaskCheck(make_task(task, seed))
    phone = check.phone()
    policy = OraclePolicy(check.task)
    actions: list[dict[str, Any]] = []
    try:
        for _ in range(20):
            action = policy(phone.observe())
            actions.append(action.to_json())
            if action.action in ("terminate", "answer"):
                return actions
            assert phone.execute(action).ok
    finally:
        phone.close()
    raise AssertionError("the oracle did not finish")


def nth(replies: list[str]) -> Any:
    """A scripted reply function: the role's i-th call gets ``replies[i]`` (the last repeats)."""
    return lambda call: replies[min(call.index, len(replies) - 1)]


def script_for(kind: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """Each format's replies that play ``actions`` (the last one the terminate)."""
    moves = actions[:-1]
    if kind == "single":
        return {"single": nth([gui_owl_reply(a, f"did step {i}") for i, a in enumerate(actions)])}
    if kind == "hi_agent":
        return {
            "high": nth([high_reply(f"do step {i}") for i in range(len(actions))]),
            "low": nth([json.dumps(a) for a in actions]),
        }
    plans = [manager_reply([f"do step {i}"]) for i in range(len(moves))]
    return {
        "manager": nth([*plans, manager_reply("Finished", completed=["all done"])]),
        "worker": nth([worker_reply(a, f"do step {i}") for i, a in enumerate(moves)]),
        "reflector": REFLECT_A,
        "notetaker": notetaker_reply("- nothing"),
    }


def write_config(path: Path, base_url: str, extra: str = "") -> Path:
    # Pixel coordinates: the oracle's screen actions are what the scripted model writes.
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted-http"\nretries = 0\ntimeout_s = 10\n'
        f'coords = "pixels"\n[roles.rag]\nenabled = false\n{extra}',
        encoding="utf-8",
    )
    return path


def run_checked_task(tmp_path: Path, base_url: str, kind: str) -> tuple[Any, dict[str, Any]]:
    """``run --task-id TASK/SEED --graph KIND --json`` against the server; it must end verified."""
    cfg = write_config(tmp_path / "c.toml", base_url)
    args = ["--task-id", f"{TASK}/{SEED}", "--graph", kind, "--config", str(cfg), "--runs-dir", "runs"]
    p = cli("run", *args, "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "completed" and out["verified"] is True, out
    return p, out


@pytest.mark.parametrize(("kind", "calls"), [("single", 1), ("hi_agent", 2), ("mobile_agent_v3", 3)])
def test_run_graph_completes_a_simphone_task_over_http(tmp_path: Path, kind: str, calls: int) -> None:
    actions = oracle_actions()
    with ScriptedOpenAIServer(script_for(kind, actions)) as srv:
        p, out = run_checked_task(tmp_path, srv.base_url, kind)
    loaded = load_run(tmp_path / out["run_dir"])
    assert loaded.run.config["graph"]["kind"] == kind
    assert {s.graph for s in loaded.steps} == {kind}
    # The designed critical path: 1 (GUI-Owl), 2 (high, low), 3 (Worker, Reflector, Manager).
    assert [s.timings_ms["critical_calls"] for s in loaded.steps] == [calls] * len(loaded.steps)
    expected_roles = {
        "single": {"single"},
        "hi_agent": {"high", "low"},
        "mobile_agent_v3": {"manager", "worker", "reflector", "notetaker"},
    }[kind]
    assert {c.role for c in loaded.calls} == expected_roles
    assert [s.action for s in loaded.steps if s.action and s.action["action"] != "terminate"] == actions[:-1]
    if kind == "single":
        # GUI-Owl's native prompt: the mobile_use function in a system message, then the user turn.
        first = loaded.calls[0].messages
        assert first[0]["role"] == "system" and '"name": "mobile_use"' in first[0]["content"][0]["text"]
        assert first[1]["content"][0]["text"].startswith("The user query: ")
        assert "Step1: did step 0;" in loaded.calls[1].messages[1]["content"][0]["text"]
    if kind == "hi_agent":
        # The screenshot comes before the text, as the GRPO rows a trained adapter learnt from.
        low = next(c for c in loaded.calls if c.role == "low").messages[0]["content"]
        assert [p["type"] for p in low] == ["image_ref", "text"]
        assert "Instruction: do step 0" in low[1]["text"]


def test_run_graph_auto_over_http_escalates_in_one_run(tmp_path: Path) -> None:
    """``run --graph auto``: two failed single-model steps (1 call each), then the team finishes
    the checked task in the same run (3 calls a step)."""
    actions = oracle_actions()
    tap_nothing = gui_owl_reply({"action": "click", "coordinate": [3, 3]}, "tap the corner")
    with ScriptedOpenAIServer({"single": tap_nothing, **script_for("mobile_agent_v3", actions)}) as srv:
        p, out = run_checked_task(tmp_path, srv.base_url, "auto")
    assert "escalating to the multi-agent graph at step 2: 2 consecutive failed steps" in p.stderr
    steps = load_run(tmp_path / out["run_dir"]).steps
    team = len(actions) - 1
    assert [s.graph for s in steps] == ["single", "single"] + ["mobile_agent_v3"] * team
    assert [s.timings_ms["critical_calls"] for s in steps] == [1, 1] + [3] * team


def in_process(kind: str, script: dict[str, Any], tmp_path: Path, **graph: Any) -> Runtime:
    off = RoleConfig(enabled=False)
    cfg = RuntimeConfig(
        roles={"rag": off, "notetaker": off}, graph=GraphConfig(kind=kind, max_steps=10, **graph)
    )
    model = ScriptedChatModel(script=script)
    roles = ("single", "high", "low", "manager", "worker", "reflector")
    return Runtime(cfg, models={r: model for r in roles}, runs_dir=tmp_path)


@pytest.mark.parametrize("after", [2, 3])
def test_auto_escalates_after_n_failed_steps_in_one_run(tmp_path: Path, after: int) -> None:
    """The single model taps nothing ``after`` times; the team takes over in the same run and
    trace, with the history handed to the Manager, and completes the task."""
    actions = oracle_actions()
    team = script_for("mobile_agent_v3", actions)
    script = {"single": gui_owl_reply({"action": "click", "coordinate": [3, 3]}, "tap the corner"), **team}
    runtime = in_process("auto", script, tmp_path, escalate_after=after, stuck_after=2)
    result = runtime.run(f"{make_task(TASK, SEED).goal}", device=f"simphone:{SEED}")
    assert result.status == "completed" and result.verified is True, result
    loaded = load_run(result.run_dir)
    assert [s.graph for s in loaded.steps] == ["single"] * after + ["mobile_agent_v3"] * (len(actions) - 1)
    assert all(not s.verdict.success for s in loaded.steps[:after] if s.verdict)
    assert [s.step for s in loaded.steps] == list(range(len(loaded.steps)))
    # The Manager's first plan is made from the screen as it is, with the single model's steps
    # handed over (Earlier Steps); the Worker's history keeps them too.
    manager_prompt = next(c for c in loaded.calls if c.role == "manager").messages[0]["content"][0]["text"]
    earlier = manager_prompt.split("### Earlier Steps ###")[1].split("The screen below")[0]
    assert (
        earlier.count('"coordinate": [3, 3]') == after and earlier.count("tap the corner — Failed") == after
    )
    worker_prompt = next(c for c in loaded.calls if c.role == "worker").messages[0]["content"][0]["text"]
    assert "tap the corner" in worker_prompt
    assert [c.role for c in loaded.calls][:after] == ["single"] * after
    shown = CliRunner().invoke(cli_app, ["traces", "show", result.run_id, "--runs-dir", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert "graph:   auto (steps by single → mobile_agent_v3)" in shown.output


def test_auto_escalates_at_once_when_the_single_model_cannot_write_its_format(tmp_path: Path) -> None:
    """A reply that never parses, even after the re-asks, hands over at once (not after
    ``escalate_after`` steps); the team's first plan hears of no step, since none was played."""
    actions = oracle_actions()
    script = {"single": "I would tap the clock, I think.", **script_for("mobile_agent_v3", actions)}
    runtime = in_process("auto", script, tmp_path, escalate_after=3)
    result = runtime.run(make_task(TASK, SEED).goal, device=f"simphone:{SEED}")
    assert result.status == "completed" and result.verified is True
    loaded = load_run(result.run_dir)
    assert [s.graph for s in loaded.steps] == ["single"] + ["mobile_agent_v3"] * (len(actions) - 1)
    assert loaded.steps[0].format_failure and loaded.steps[0].timings_ms["critical_calls"] == 3
    manager_prompt = next(c for c in loaded.calls if c.role == "manager").messages[0]["content"][0]["text"]
    assert "### Earlier Steps ###" not in manager_prompt


def test_auto_does_not_escalate_when_the_single_model_succeeds(tmp_path: Path) -> None:
    actions = oracle_actions()
    runtime = in_process("auto", script_for("single", actions), tmp_path)
    result = runtime.run(make_task(TASK, SEED).goal, device=f"simphone:{SEED}")
    assert result.status == "completed" and result.verified is True
    assert {c.role for c in load_run(result.run_dir).calls} == {"single"}


def test_auto_escalates_when_the_single_model_gives_up(tmp_path: Path) -> None:
    """A terminate-failure of the single model is not the end of an auto run: the team plays on."""
    actions = oracle_actions()
    team = script_for("mobile_agent_v3", actions)
    script = {"single": gui_owl_reply({"action": "terminate", "status": "failure"}, "cannot"), **team}
    result = in_process("auto", script, tmp_path).run(make_task(TASK, SEED).goal, device=f"simphone:{SEED}")
    assert result.status == "completed" and result.verified is True
    loaded = load_run(result.run_dir)
    assert [s.graph for s in loaded.steps][0] == "single" and loaded.steps[1].graph == "mobile_agent_v3"
    manager_prompt = next(c for c in loaded.calls if c.role == "manager").messages[0]["content"][0]["text"]
    assert (
        '{"action": "terminate", "status": "failure"} — cannot — Failed: the agent terminated'
        in manager_prompt
    )


def test_hi_agent_high_level_format_failure_is_a_failed_step_and_reasks(tmp_path: Path) -> None:
    """An unparseable subgoal is re-asked in the subgoal format, then fails the step without acting."""

    def high(call: ScriptCall) -> str:
        return "no tags here" if call.index < 3 else high_reply("stop")

    script = {"high": high, "low": json.dumps({"action": "terminate", "status": "success"})}
    off = RoleConfig(enabled=False)
    cfg = RuntimeConfig(roles={"rag": off}, graph=GraphConfig(kind="hi_agent", max_steps=5))
    model = ScriptedChatModel(script=script)
    result = Runtime(cfg, models={"high": model, "low": model}, runs_dir=tmp_path).run(
        "Toggle my alarm", device="simphone:1"
    )
    loaded = load_run(result.run_dir)
    first = loaded.steps[0]
    assert first.format_failure and first.action is None and first.timings_ms["critical_calls"] == 3
    assert "<instruction>Instruction: ...</instruction>" in model.calls_for("high")[1].prompt
    assert result.status == "completed" and loaded.steps[1].timings_ms["critical_calls"] == 2


def test_hi_agent_run_killed_mid_step_resumes_in_its_graph(tmp_path: Path) -> None:
    """SIGKILL while the low level's second request is in flight; ``--resume`` (no --config: the
    recorded settings, graph kind included) replays the phone and completes the checked task."""
    import os
    import signal
    import subprocess
    import threading

    from tests.test_run_cli import CLI

    actions = oracle_actions()
    script = script_for("hi_agent", actions)
    in_flight, release = threading.Event(), threading.Event()
    replies = [json.dumps(a) for a in actions]

    def blocking_low(call: ScriptCall) -> str:
        if call.index == 1:
            in_flight.set()
            release.wait(30)
        # The reply to the killed request is lost: after the resume, call i asks for action i - 1.
        return replies[call.index if call.index < 2 else call.index - 1]

    with ScriptedOpenAIServer(script | {"low": blocking_low}) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        args = ["run", "--task-id", f"{TASK}/{SEED}", "--graph", "hi_agent", "--config", str(cfg)]
        proc = subprocess.Popen([*CLI, *args, "--runs-dir", "runs"], cwd=tmp_path, stderr=subprocess.DEVNULL)
        try:
            assert in_flight.wait(60), "the run never reached the second low-level call"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        (run_dir,) = list((tmp_path / "runs").iterdir())
        assert [s.step for s in load_run(run_dir).steps] == [0]
        p = cli("run", "--resume", run_dir.name, "--runs-dir", "runs", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "completed" and out["verified"] is True, out
    done = load_run(run_dir)
    assert [s.graph for s in done.steps] == ["hi_agent"] * len(actions)
    assert [s.step for s in done.steps] == list(range(len(actions)))


@pytest.mark.parametrize(("kind", "calls"), [("hi_agent", 3), ("single", 2)])
def test_reflect_adds_the_reflector_to_hi_agent_and_single(tmp_path: Path, kind: str, calls: int) -> None:
    """``graph.reflect``: the Reflector judges each acted step (one more call on its path), and
    its verdict, not the screen diff, decides: a B here fails the step although the screen changed."""
    actions = oracle_actions()
    script = script_for(kind, actions) | {"reflector": reflector_reply("B", "wrong page")}
    runtime = in_process(kind, script, tmp_path, reflect=True)
    result = runtime.run(make_task(TASK, SEED).goal, device=f"simphone:{SEED}")
    loaded = load_run(result.run_dir)
    first = loaded.steps[0]
    assert first.timings_ms["critical_calls"] == calls and first.verdict.outcome == "B"
    assert "reflector" in {c.role for c in loaded.calls}
