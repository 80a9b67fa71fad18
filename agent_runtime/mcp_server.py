"""``agent-runtime mcp``: the runtime as Model Context Protocol tools for other agents (extra ``mcp``).

An agent that speaks MCP (Claude Desktop, an IDE, another agent-runtime) starts
``agent-runtime mcp`` as a subprocess and talks JSON-RPC over its stdin/stdout. The tools:

* ``run_task(task, device, max_steps, graph)`` plays a task with the configured roles and
  returns the run's summary (the object ``agent-runtime run --json`` prints). Each step is
  reported as it happens through MCP progress notifications (the caller's ``progressToken``).
  When the client supports elicitation, the run's questions and confirmations (see
  :mod:`agent_runtime.control`) are put to its user that way: approve or reject with a reason,
  or an answer; declining is a rejection. Other clients get an unattended run (``[safety]``).
  Runs are played one at a time; cancelling the call interrupts the run (status
  ``interrupted``, resumable with ``agent-runtime run --resume RUN_ID``).
* ``list_devices()`` names the devices a run can use: SimPhone always, the phones an adb server
  lists (when the ``android`` extra is installed and a server answers; none is started), and the
  X display in ``DISPLAY``.
* ``screenshot(device)`` returns what a device shows, as an image.
* ``get_run(run_id)`` reads a finished (or running) run's record and steps from its trace.

stdout carries the protocol only: the SDK points file descriptor 1 at stderr while it serves,
so stray prints (a library's progress bar) cannot corrupt a message, and every log goes to
stderr. Errors the caller can fix (an unknown run id, a bad device spec, a bad graph kind) come
back as tool errors carrying the message and its hint; the server keeps serving.

The tools are defined inside :func:`build_server`, without postponed annotations in this module:
the SDK reads each tool's signature (its input schema) by evaluating the annotations, and the
SDK's types are only importable there, once the optional extra is known to be installed.
"""

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.checks import Outcome, recorded_outcome, recorded_summary
from agent_runtime.config import GraphKind, RuntimeConfig, load_config
from agent_runtime.control import MAX_REFUSED, MAX_REPLY_CHARS, InputReply, InputRequest, cut_for_trace
from agent_runtime.errors import AgentRuntimeError, ConfigError, DependencyError
from agent_runtime.events import (
    ActionExecuted,
    Event,
    InputRequested,
    Notice,
    RunFinished,
    RunStarted,
    StepStarted,
    VerdictEvent,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from agent_runtime.runtime import Runtime

#: How long ``list_devices`` waits for an adb server before saying it found none.
ADB_PROBE_TIMEOUT_S = 2.0


class DeviceEntry(BaseModel):
    """One device a run can use, as ``list_devices`` reports it."""

    spec: str = Field(description="the device spec to pass to run_task and screenshot")
    kind: Literal["simphone", "adb", "desktop"]
    description: str = ""


class DeviceList(BaseModel):
    devices: list[DeviceEntry]


class StepSummary(BaseModel):
    """One executed step, as ``get_run`` reports it (the trace's steps.jsonl has everything)."""

    step: int
    subgoal: str = ""
    action: dict[str, Any] | None = Field(None, description="as the model wrote it")
    ok: bool | None = Field(None, description="whether the device executed the action")
    outcome: str | None = Field(
        None, description="the Reflector's verdict: A success, B wrong page, C no change"
    )
    feedback: str = ""
    before_screen: str | None = Field(None, description="screenshot path, relative to run_dir")
    after_screen: str | None = None


class RunDetails(BaseModel):
    run_id: str
    task: str
    status: str
    success: bool | None = None
    verified: bool | None = Field(None, description="the end-of-run check: null when nothing checked it")
    outcome: Outcome = Field(
        description="one word, the check outranking the claim, as `agent-runtime run --json` says it "
        "(unverified: a claimed success nothing checked)"
    )
    summary: str = Field(description="the line `agent-runtime run` ended the run with")
    answer: str | None = None
    steps: list[StepSummary]
    run_dir: str
    device: dict[str, Any] = Field(default_factory=dict)
    error: dict[str, Any] | None = None


def progress_message(event: Event) -> str | None:
    """The one line a progress notification carries for ``event`` (None: not worth one).

    >>> progress_message(StepStarted(step=2, subgoal="Open Clock"))
    'step 2: Open Clock'
    >>> progress_message(VerdictEvent(step=2, outcome="A", success=True))
    'step 2: verdict A (success)'
    """
    if isinstance(event, RunStarted):
        return f"run {event.run_id} started on {event.device}"
    if isinstance(event, StepStarted):
        return f"step {event.step}: {event.subgoal}"
    if isinstance(event, ActionExecuted):
        mark = "ok" if event.ok else f"failed: {event.message}"
        return f"step {event.step}: {event.action.get('action', '?')} {mark}"
    if isinstance(event, VerdictEvent):
        verdict = "success" if event.success else "failure"
        feedback = f" — {event.feedback}" if event.feedback else ""
        return f"step {event.step}: verdict {event.outcome} ({verdict}){feedback}"
    if isinstance(event, Notice):
        return event.message
    if isinstance(event, RunFinished):
        return f"run {event.run_id} {event.status} after {event.steps} steps"
    return None


def run_summary(final: RunFinished) -> dict[str, Any]:
    """``agent-runtime run --json``'s object for a finished run, plus its error when it stopped on one."""
    from agent_runtime.runtime import finished_summary

    summary = finished_summary(final)
    if final.error:
        summary["error"] = final.error
    return summary


def available_devices() -> DeviceList:
    """SimPhone, the adb server's phones and the desktop in ``DISPLAY`` — never failing."""
    devices = [DeviceEntry(spec="simphone", kind="simphone", description="SimPhone, the virtual phone")]
    devices += _adb_devices()
    display = os.environ.get("DISPLAY")
    if display:
        devices.append(DeviceEntry(spec=f"desktop:{display}", kind="desktop", description="X display"))
    return DeviceList(devices=devices)


def _adb_devices() -> list[DeviceEntry]:
    """The phones a running adb server lists; none when adbutils is missing or no server answers
    (listing never starts a server — that is ``adb:SERIAL``'s job when a run asks for one)."""
    if importlib.util.find_spec("adbutils") is None:
        return []
    from agent_runtime.devices.android.adb import listed_devices

    try:
        listed = listed_devices(ADB_PROBE_TIMEOUT_S)
    except AgentRuntimeError:  # a malformed ANDROID_ADB_SERVER_PORT
        return []
    return [
        DeviceEntry(spec=f"adb:{serial}", kind="adb", description=f"Android device ({state})")
        for serial, state in listed
    ]


def screenshot_of(spec: str, config: RuntimeConfig) -> tuple[bytes, str]:
    """The device's current screenshot and its MIME type (devices send PNG, some JPEG)."""
    from agent_runtime.devices.registry import resolve_device

    with resolve_device(spec, **config.device.options) as device:
        data = device.observe().screenshot
    return data, "image/jpeg" if data[:3] == b"\xff\xd8\xff" else "image/png"


def run_details(runs_dir: Path, run_id: str) -> RunDetails:
    """A run's record and its steps, by id or unique id prefix."""
    from agent_runtime.traces import find_run, load_run, verification_of

    loaded = load_run(find_run(runs_dir, run_id))
    record = loaded.run
    verification = verification_of(record)
    steps = [
        StepSummary(
            step=s.step,
            subgoal=s.subgoal,
            action=s.action,
            ok=s.action_result.get("ok") if s.action_result else None,
            outcome=s.verdict.outcome if s.verdict else None,
            feedback=s.verdict.feedback if s.verdict else "",
            before_screen=s.before_screen,
            after_screen=s.after_screen,
        )
        for s in loaded.steps
    ]
    return RunDetails(
        run_id=record.run_id,
        task=record.task,
        status=record.status,
        success=record.success,
        verified=verification.verified if verification else None,
        outcome=recorded_outcome(record),
        summary=recorded_summary(record),
        answer=record.answer,
        steps=steps,
        run_dir=str(loaded.dir),
        device=record.device,
        error=record.error,
    )


class Confirmation(BaseModel):
    """What an MCP client's user answers to a confirmation (elicitation: primitive fields only)."""

    approve: bool = Field(description="run the action")
    reason: str = Field("", description="why not, when it is rejected (the agent reads it)")


class Answer(BaseModel):
    """What an MCP client's user answers to the agent's question."""

    answer: str = Field(description="the answer to the agent's question")


def typed_text(result: Any) -> str:
    """The free text of an elicitation ``result``: the answer, or the reason of a rejection."""
    data = getattr(result, "data", None)
    return data.answer if isinstance(data, Answer) else data.reason if isinstance(data, Confirmation) else ""


#: How many times a user is asked again after a reply too long to take; then the run waits.
ELICIT_TRIES = 3


def elicited_reply(request: InputRequest, result: Any) -> InputReply:
    """The run's reply from an elicitation ``result`` (accepted with data, declined, cancelled).
    A takeover cannot happen over MCP (there is no pause tool): it is handed straight back. An
    answer or reason longer than a reply carries is a :class:`ConfigError` saying the limit."""
    data = getattr(result, "data", None)
    if request.kind == "takeover":
        return InputReply.resume()
    text = typed_text(result)
    if len(text) > MAX_REPLY_CHARS:
        raise ConfigError(
            f"the reply is {len(text):,} characters, over the {MAX_REPLY_CHARS:,}-character limit",
            hint="answer again, shorter",
        )
    if isinstance(data, Answer) and data.answer.strip():
        return InputReply.answer(data.answer)
    if isinstance(data, Confirmation):
        return InputReply.approve() if data.approve else InputReply.reject(data.reason)
    return InputReply.reject(f"the MCP client's user {getattr(result, 'action', 'did not answer')}")


class RuntimeTools:
    """What the tools do, apart from the protocol: one loaded configuration, one runtime per graph
    kind (model clients, and in-process models, are loaded once and reused across calls)."""

    def __init__(self, config_path: Path | None = None, runs_dir: Path | None = None) -> None:
        self.config_path = config_path
        self.config = load_config(config_path)  # a bad config fails at start, not at the first call
        self.runs_dir = (runs_dir if runs_dir is not None else self.config.runs.dir).expanduser()
        self._runtimes: dict[str, Runtime] = {}

    def runtime(self, graph: str | None) -> "Runtime":
        from agent_runtime.runtime import Runtime

        cfg = self.config if graph is None else load_config(self.config_path, **{"graph.kind": graph})
        kind = cfg.graph.kind
        if kind not in self._runtimes:
            self._runtimes[kind] = Runtime(cfg, runs_dir=self.runs_dir)
        return self._runtimes[kind]


def build_server(tools: RuntimeTools) -> "MCPServer":
    """The MCP server with the four tools bound to ``tools``."""
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ImageContent

    from agent_runtime.version import __version__

    server: MCPServer = MCPServer(
        name="agent-runtime",
        version=__version__,
        instructions="Run GUI-agent tasks on SimPhone, Android phones and desktops; read their traces.",
        log_level="WARNING",
    )
    one_run = anyio.Lock()

    @server.tool()
    async def run_task(
        task: Annotated[str, Field(description="What the agent should do, e.g. 'Turn on Wi-Fi'.")],
        ctx: Context,
        device: Annotated[
            str, Field(description="Device spec: simphone[:SEED] | adb[:SERIAL] | desktop[:DISPLAY].")
        ] = "simphone",
        max_steps: Annotated[
            int | None, Field(ge=1, description="Step budget (default: graph.max_steps in the config).")
        ] = None,
        graph: Annotated[
            GraphKind | None,
            Field(description="Agent graph (default: graph.kind in the config)."),
        ] = None,
    ) -> dict[str, Any]:
        """Run a task on a device with the configured roles; report each step as progress; return
        the run's summary (run_id, success, status, verified, answer, steps, run_dir). On SimPhone
        a task whose text is a SimPhone task's goal is checked at the end (verified)."""
        async with one_run:
            final = await _play_task(tools, ctx, task, device, max_steps, graph)
        if final is None:
            raise ToolError("the run ended without a result")
        return run_summary(final)

    @server.tool()
    def list_devices() -> DeviceList:
        """The devices a run can use: SimPhone always, the phones a running adb server lists, and
        the X display in DISPLAY. Pass an entry's spec as run_task's or screenshot's device."""
        return available_devices()

    @server.tool()
    async def screenshot(
        device: Annotated[
            str, Field(description="Device spec: simphone[:SEED] | adb[:SERIAL] | desktop[:DISPLAY].")
        ] = "simphone",
    ) -> ImageContent:
        """What the device shows now, as an image (a fresh SimPhone shows its home screen)."""
        try:
            data, mime = await anyio.to_thread.run_sync(screenshot_of, device, tools.config)
        except AgentRuntimeError as exc:
            raise _tool_error(exc) from None
        import base64

        return ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime)

    @server.tool()
    def get_run(
        run_id: Annotated[str, Field(description="A run id, or a unique prefix of one.")],
    ) -> RunDetails:
        """A run's outcome and its steps (subgoal, action, verdict, screenshots), from its trace."""
        try:
            return run_details(tools.runs_dir, run_id)
        except AgentRuntimeError as exc:
            raise _tool_error(exc) from None

    return server


def _tool_error(exc: AgentRuntimeError) -> "ToolError":
    """An error the caller can fix, as the tool error the client shows: message and hint."""
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(str(exc))


async def _play_task(
    tools: RuntimeTools, ctx: "Context", task: str, device: str, max_steps: int | None, graph: str | None
) -> RunFinished | None:
    """``run_task``'s run, in a worker thread: each step reported as MCP progress, each request put
    to the client's user by elicitation when the client supports it (else the run is unattended);
    cancelling the call interrupts the run. Returns its ``RunFinished``."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        runtime = tools.runtime(graph)
    except AgentRuntimeError as exc:
        raise _tool_error(exc) from None
    sent = 0
    capabilities = ctx.client_capabilities
    attended = capabilities is not None and capabilities.elicitation is not None

    async def report(event: Event) -> None:
        nonlocal sent
        message = progress_message(event)
        if message is not None:
            sent += 1  # MCP: progress must increase with each notification
            await ctx.report_progress(sent, None, message)

    def play() -> RunFinished | None:
        final = None
        for event in runtime.stream(task, device=device, max_steps=max_steps, interactive=attended):
            final = event if isinstance(event, RunFinished) else final
            anyio.from_thread.run(report, event)
            if isinstance(event, InputRequested):
                reply = anyio.from_thread.run(_elicit, ctx, event.request)
                if reply is not None:  # else no reply: the run ends waiting, resumable
                    runtime.respond(event.request.id, reply)
        return final

    try:
        return await anyio.to_thread.run_sync(play, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        runtime.cancel()  # the caller cancelled: the run records "interrupted" and stops
        raise
    except AgentRuntimeError as exc:
        raise _tool_error(exc) from None
    except Exception as exc:  # a bug: say what it was, not just that the tool failed
        raise ToolError(
            f"internal error: {type(exc).__name__}: {exc} (this is a bug; please report it)"
        ) from exc


async def _elicit(ctx: "Context", request: InputRequest) -> InputReply | None:
    """The user's reply; a reply too long to take is asked again (the trace keeps a bounded
    prefix of it), and after ELICIT_TRIES of those, None: the run waits."""
    schema: type[BaseModel] = Answer if request.kind == "ask" else Confirmation
    message, refused = request.describe(), []
    for _ in range(ELICIT_TRIES):
        result = await ctx.elicit(message, schema)
        try:
            reply = elicited_reply(request, result)
        except ConfigError as exc:
            refused.append(cut_for_trace(typed_text(result), exc.message))
            message = f"Your reply was not taken: {exc.message}. {request.describe()}"
            continue
        return reply.model_copy(update={"refused": refused[-MAX_REFUSED:]})
    return None


def serve(config_path: Path | None = None, runs_dir: Path | None = None) -> None:
    """Serve the tools over stdio until the client closes the connection."""
    if importlib.util.find_spec("mcp") is None:
        raise DependencyError("mcp", "mcp", "agent-runtime mcp")
    tools = RuntimeTools(config_path, runs_dir)
    build_server(tools).run("stdio")


__all__: list[str] = ["DeviceEntry", "DeviceList", "RunDetails", "RuntimeTools", "build_server", "serve"]
