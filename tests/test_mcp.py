"""``agent-runtime mcp`` through the official MCP SDK's client over stdio: a real subprocess, real
JSON-RPC, a real SimPhone run against a scripted OpenAI-compatible server over HTTP."""

from __future__ import annotations

import base64
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="agent-runtime mcp needs the 'mcp' extra: pip install 'agent-runtime[mcp]'")

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.adb import AdbServer
from agent_runtime.simphone.tasks.registry import make_task
from agent_runtime.traces import load_run
from tests.doubles import ScriptedOpenAIServer, gui_owl_reply
from tests.test_graphs import SEED, TASK, oracle_actions, script_for, write_config

PNG = b"\x89PNG\r\n\x1a\n"


def with_client(
    cwd: Path,
    args: list[str],
    body: Callable[[ClientSession], Awaitable[None]],
    env: dict[str, str] | None = None,
    elicitation: Any = None,
) -> None:
    """Start ``agent-runtime mcp ARGS`` as the SDK's stdio client does, and run ``body`` on a session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_runtime.cli", "mcp", *args],
        cwd=cwd,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), **(env or {})},
    )

    async def main() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=elicitation) as session,
        ):
            await session.initialize()
            await body(session)

    anyio.run(main)


@pytest.fixture()
def scripted(tmp_path: Path) -> Iterator[Path]:
    """A config whose every role call is answered by a script that solves the checked task."""
    with ScriptedOpenAIServer(script_for("single", oracle_actions())) as srv:
        yield write_config(tmp_path / "c.toml", srv.base_url, '[graph]\nkind = "single"\n')


def test_tools_run_a_checked_simphone_task_and_read_it_back(tmp_path: Path, scripted: Path) -> None:
    goal = make_task(TASK, SEED).goal
    progress: list[tuple[float, float | None, str | None]] = []
    seen: dict[str, Any] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        seen["tools"] = {t.name: t for t in listed.tools}
        result = await session.call_tool(
            "run_task", {"task": goal, "device": f"simphone:{SEED}"}, progress_callback=on_progress
        )
        seen["run"] = result
        run_id = result.structured_content["run_id"]
        seen["get_run"] = await session.call_tool("get_run", {"run_id": run_id})
        seen["unknown"] = await session.call_tool("get_run", {"run_id": "no-such-run"})
        seen["screenshot"] = await session.call_tool("screenshot", {"device": f"simphone:{SEED}"})
        seen["bad_device"] = await session.call_tool("screenshot", {"device": "toaster"})
        seen["still_up"] = await session.call_tool("list_devices", {})

    with_client(tmp_path, ["--config", str(scripted), "--runs-dir", "runs"], body)

    tools = seen["tools"]
    assert set(tools) == {"run_task", "list_devices", "screenshot", "get_run"}
    assert tools["run_task"].input_schema["required"] == ["task"]
    assert {"device", "max_steps", "graph"} <= set(tools["run_task"].input_schema["properties"])
    assert tools["get_run"].input_schema["required"] == ["run_id"]

    run = seen["run"]
    assert not run.is_error, run.content
    summary = run.structured_content
    assert summary["status"] == "completed" and summary["success"] is True and summary["verified"] is True
    assert summary["verification"]["by"] == f"simphone:{TASK}/{SEED}"
    run_dir = tmp_path / summary["run_dir"]
    loaded = load_run(run_dir)
    assert loaded.run.status == "completed" and len(loaded.steps) == summary["steps"] > 0
    assert (run_dir / loaded.steps[0].after_screen).read_bytes().startswith(PNG)

    # One progress notification per event worth one, increasing, naming each step.
    values = [v for v, _, _ in progress]
    assert values == sorted(set(values)) and len(values) >= summary["steps"]
    messages = [m or "" for _, _, m in progress]
    assert messages[0].startswith(f"run {summary['run_id']} started on simphone:{SEED}")
    assert any(m.startswith("step 0: ") for m in messages)
    assert messages[-1] == f"run {summary['run_id']} completed after {summary['steps']} steps"

    details = seen["get_run"].structured_content
    assert details["run_id"] == summary["run_id"] and details["verified"] is True
    assert [s["step"] for s in details["steps"]] == [s.step for s in loaded.steps]
    assert details["steps"][0]["action"] == loaded.steps[0].action and details["steps"][0]["ok"] is True

    unknown = seen["unknown"]
    assert unknown.is_error and "no run matching 'no-such-run'" in unknown.content[0].text

    image = seen["screenshot"].content[0]
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == SimPhone(SEED).observe().screenshot

    bad = seen["bad_device"]
    assert bad.is_error and "unknown device spec 'toaster'" in bad.content[0].text
    assert not seen["still_up"].is_error  # errors came back as results; the server kept serving


def test_list_devices_names_simphone_and_the_adb_servers_phones(tmp_path: Path) -> None:
    found: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        found["devices"] = (await session.call_tool("list_devices", {})).structured_content["devices"]
        found["shot"] = await session.call_tool("screenshot", {"device": "adb:emulator-5556"})

    phones = [SimPhone(0, serial="emulator-5554"), SimPhone(1, serial="emulator-5556")]
    env = {"ANDROID_ADB_SERVER_PORT": "", "ADBUTILS_ADB_PATH": "/bin/true", "DISPLAY": ""}
    with AdbServer(phones) as adb:
        env["ANDROID_ADB_SERVER_PORT"] = str(adb.port)
        with_client(tmp_path, ["--runs-dir", "runs"], body, env=env)
    assert [d["spec"] for d in found["devices"]] == ["simphone", "adb:emulator-5554", "adb:emulator-5556"]
    shot = found["shot"].content[0]
    assert shot.type == "image" and base64.b64decode(shot.data) == phones[1].observe().screenshot


def test_list_devices_without_an_adb_server_is_simphone_alone(tmp_path: Path) -> None:
    found: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        found["result"] = await session.call_tool("list_devices", {})

    # Nothing listens on port 9: the probe finds no server and starts none.
    env = {"ANDROID_ADB_SERVER_PORT": "9", "ADBUTILS_ADB_PATH": "/bin/true", "DISPLAY": ":42"}
    with_client(tmp_path, ["--runs-dir", "runs"], body, env=env)
    result = found["result"]
    assert not result.is_error
    assert [d["spec"] for d in result.structured_content["devices"]] == ["simphone", "desktop::42"]


def test_cancelling_run_task_interrupts_the_run(tmp_path: Path) -> None:
    """The caller gives up mid-run: the run stops and records ``interrupted``, resumable."""
    answering = threading.Event()
    release = threading.Event()

    def slow(call: Any) -> str:
        answering.set()
        release.wait(30)  # the model "thinks" until the test is done
        return gui_owl_reply({"action": "click", "coordinate": [3, 3]}, "tap")

    found: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        with anyio.move_on_after(60) as scope:
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await session.call_tool("run_task", {"task": "Open Clock", "device": "simphone"})

                tg.start_soon(call)
                while not answering.is_set():
                    await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
        found["timed_out"] = scope.cancelled_caught
        found["after"] = await session.call_tool("list_devices", {})  # still serving
        with anyio.move_on_after(30):  # the run winds down in its own thread
            while status() in (None, "running"):
                await anyio.sleep(0.1)
        found["status"] = status()

    def status() -> str | None:
        runs = list((tmp_path / "runs").glob("*/run.json"))
        return load_run(runs[0]).run.status if len(runs) == 1 else None

    with ScriptedOpenAIServer({"single": slow}) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, '[graph]\nkind = "single"\n')
        try:
            with_client(tmp_path, ["--config", str(cfg), "--runs-dir", "runs"], body)
        finally:
            release.set()
    assert not found["timed_out"] and not found["after"].is_error
    assert found["status"] == "interrupted"


def test_mcp_without_the_sdk_says_which_extra(tmp_path: Path) -> None:
    """No ``mcp`` package: a one-paragraph error naming the extra, exit 2, no traceback."""
    import subprocess

    code = (
        "import importlib.util, sys; real = importlib.util.find_spec; "
        "importlib.util.find_spec = lambda n, *a: None if n == 'mcp' else real(n, *a); "
        "from agent_runtime.cli import main; sys.argv = ['agent-runtime', 'mcp']; main()"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        timeout=60,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "agent-runtime[mcp]" in p.stderr and p.stdout == ""


def test_a_confirmation_is_put_to_the_clients_user_by_elicitation(tmp_path: Path) -> None:
    """A client that supports elicitation is asked before the Send tap; its user's approval is
    recorded as the person's, and the checked task completes."""
    import mcp_types

    send, seed = "MessagesSendToNumber", 0
    asked: list[mcp_types.ElicitRequestParams] = []

    async def elicitation(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params)
        return mcp_types.ElicitResult(action="accept", content={"approve": True, "reason": ""})

    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        goal = make_task(send, seed).goal
        seen["run"] = await session.call_tool("run_task", {"task": goal, "device": f"simphone:{seed}"})

    with ScriptedOpenAIServer(script_for("single", oracle_actions(send, seed))) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, '[graph]\nkind = "single"\n')
        with_client(tmp_path, ["--config", str(cfg), "--runs-dir", "runs"], body, elicitation=elicitation)

    assert len(asked) == 1 and "Send SMS" in asked[0].message
    assert set(asked[0].requested_schema["properties"]) == {"approve", "reason"}
    summary = seen["run"].structured_content
    assert summary["status"] == "completed" and summary["verified"] is True, seen["run"].content
    [record] = load_run(tmp_path / summary["run_dir"]).interventions
    assert (record.decision, record.by) == ("approve", "person")


def test_elicitation_results_become_replies() -> None:
    from mcp.server.elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation

    from agent_runtime.control import InputRequest
    from agent_runtime.mcp_server import Answer, Confirmation, elicited_reply

    confirm = InputRequest(id="r/1", run_id="r", kind="confirm", step=3)
    ask = InputRequest(id="r/2", run_id="r", kind="ask", step=4, question="Which one?")
    no = elicited_reply(confirm, AcceptedElicitation(data=Confirmation(approve=False, reason="not now")))
    assert (no.decision, no.text) == ("reject", "not now")
    assert elicited_reply(confirm, AcceptedElicitation(data=Confirmation(approve=True))).decision == "approve"
    declined = elicited_reply(confirm, DeclinedElicitation())
    assert declined.decision == "reject" and "decline" in declined.text
    assert elicited_reply(ask, CancelledElicitation()).decision == "reject"
    answered = elicited_reply(ask, AcceptedElicitation(data=Answer(answer="the 7 AM one")))
    assert (answered.decision, answered.text) == ("answer", "the 7 AM one")
