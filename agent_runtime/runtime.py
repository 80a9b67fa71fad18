"""The Python API: ``Runtime(config).run(task, device=...)`` → :class:`RunResult`.

A :class:`Runtime` turns a :class:`~agent_runtime.config.RuntimeConfig` into runs of the graph
its ``[graph] kind`` names (Mobile-Agent-v3, Hi-Agent, GUI-Owl's single model, or ``auto``; see
:mod:`agent_runtime.graphs.build`). Each run gets its own directory (``run.json``, ``steps.jsonl``,
``calls.jsonl``, ``screens/``, ``checkpoint.sqlite``), its own device context and its own
checkpointer, so runtimes — or several runs of one runtime — can work side by side in threads.

* ``run(task, device=...)`` runs to the end; ``arun`` is the same in a worker thread.
* ``stream(task, device=...)`` yields typed :mod:`~agent_runtime.events` as the run goes.
* ``resume(run_id)`` continues a run that was interrupted, killed or stopped by an
  infrastructure error.
* ``cancel()`` interrupts the runs in flight from another thread.

Ctrl-C (SIGINT) in the main thread answers at once: the run's model call is abandoned (an HTTP
request within a tenth of a second, in-process generation at the next token; see
:mod:`agent_runtime.models.cancel`), run.json is finalized with status ``interrupted`` and its
totals, the checkpoint is kept, and :class:`RunInterrupted` — a ``KeyboardInterrupt`` naming
the run — is raised. (A KeyboardInterrupt raised by code, not by the signal, is treated like a
kill: the run stays ``running``, resumable.)

Resuming puts the device back where the trace says it is. An in-process SimPhone (a
``simphone[:SEED]`` spec; it died with the killed process) is rebuilt by replaying, on a fresh
phone with the run's seed, the screen actions of every committed step (plus the step in
progress when its execution was checkpointed): SimPhone is deterministic, its clock virtual.
The replayed screen must equal the screen the checkpoint points to, or the resume is refused.
A device that outlived the run (a real phone, SimPhone over adb, a Device object passed in) is
compared with that screen; when they differ — an action in flight at the kill reached it — the
run says so in a warning and continues from what is on the screen now (every node observes the
device afresh after a resume, and an interrupted action is never replayed blind).

run.json's totals (time, model and device time, calls, tokens) accumulate across resumes; they
are rewritten whenever a step commits, and on resume a killed session's calls after its last
rewrite are counted from calls.jsonl and its time up to its last trace write.

Infrastructure errors (a dead model server after its retries, a lost device) end the run with
status ``"error"`` — recorded in run.json and returned, not raised. Bugs are recorded and raised.
A runs folder that refuses a write (full, read-only) is a ``TraceWriteError``, recorded when
run.json can still be written, raised when not. A run stopped while a person was asked — the
consumer left at the question, a reply refused, a failure applying it — ends ``waiting`` with
the request still pending, never ``running`` or ``error``.

One process plays a run at a time: it holds the run directory's lock
(:mod:`agent_runtime.runlock`) from before the run is read to after its last write; another
``run``/``resume`` of it meanwhile gets a ``RunLockedError`` naming the holder.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import shutil
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.config import (
    GRAPH_KINDS,
    OPTIONAL_ROLES,
    ROLES,
    GraphKind,
    Role,
    RuntimeConfig,
    check_max_steps,
    load_config,
    runs_directory,
)
from agent_runtime.control import InputReply, InputRequest, as_reply
from agent_runtime.device import Device
from agent_runtime.errors import AgentRuntimeError, ConfigError, TraceError, TraceWriteError
from agent_runtime.events import Event, InputRequested, Notice, RunFinished, RunStarted
from agent_runtime.resume import (
    Totals,
    carried_totals,
    check_checkpoint,
    restore_device,
    save_simphone,
    with_totals,
)
from agent_runtime.runlock import RunLock
from agent_runtime.traces import (
    RunRecord,
    RunStatus,
    TraceWriter,
    Usage,
    Verification,
    find_run,
    load_run,
    new_run_id,
    session_ended,
    session_started,
    storage_error,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from agent_runtime.checks import Outcome, RunCheck
    from agent_runtime.graphs.context import RunContext

_ROLE_TEMPLATES: dict[str, str] = {
    "manager": "manager.j2",
    "worker": "worker.j2",
    "reflector": "reflector.j2",
    "notetaker": "notetaker.j2",
    "high": "hi_agent_high.j2",
    "low": "hi_agent_low.j2",
    "single": "gui_owl.j2",
}
#: Roles whose prompts exist in one set only: a model's ``prompts = "compact"`` does not apply.
_FULL_ONLY = ("high", "low", "single")
_RESUMABLE = ("running", "error", "interrupted", "waiting")
#: Answers a person's requests for a run: called with the request, returns the reply.
OnInput = Callable[[InputRequest], InputReply]


class RunResult(BaseModel):
    """How a run ended. ``success`` is the agent's claim: True only for status ``completed`` with
    success. ``verification`` is what the end-of-run check found (``verified``: True, False, or
    None when nothing could check the run — see :mod:`agent_runtime.checks`)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task: str
    status: RunStatus
    success: bool
    answer: str | None = None
    steps: int = 0
    run_dir: Path
    reason: str = ""
    error: dict[str, Any] | None = None
    tokens: Usage = Usage()
    timings: dict[str, float] = Field(default_factory=dict)
    verification: Verification | None = None

    @property
    def verified(self) -> bool | None:
        """True: SimPhone's check passed; False: it failed; None: the run could not be checked."""
        return self.verification.verified if self.verification is not None else None

    @property
    def outcome(self) -> Outcome:
        """One word, the check outranking the claim: ``verified``, ``failed_check``,
        ``unverified`` (a claimed success nothing checked), ``failed``, … (see
        :func:`~agent_runtime.checks.outcome`)."""
        from agent_runtime.checks import outcome

        return outcome(self.status, self.success, self.verification)

    def __str__(self) -> str:
        """The line ``agent-runtime run`` ends with (the check's finding first), then the trace.

        >>> print(RunResult(run_id="r", task="t", status="error", success=False, run_dir=Path("runs/r"),
        ...                 reason="no model server"))
        error after 0 steps: no model server (trace: runs/r)
        >>> print(RunResult(run_id="r", task="t", status="completed", success=True, steps=1,
        ...                 run_dir=Path("r"), verification=Verification(detail="adb")))
        unverified after 1 step: the agent says it is done; nothing checked it (not checked: adb) (trace: r)
        """
        from agent_runtime.checks import summary_line

        v = self.verification
        line = summary_line(
            self.status, self.success, self.steps, reason=self.reason, answer=self.answer, verification=v
        )
        if v is not None and v.detail and (v.checked or self.success) and self.status != "error":
            line += f" ({'check' if v.checked else 'not checked'}: {v.detail})"
        return f"{line} (trace: {self.run_dir})"

    def summary(self) -> dict[str, Any]:
        """The object ``agent-runtime run --json`` prints."""
        return {
            "run_id": self.run_id,
            "success": self.success,
            "status": self.status,
            "verified": self.verified,
            "outcome": self.outcome,
            "verification": self.verification.model_dump() if self.verification else None,
            "answer": self.answer,
            "steps": self.steps,
            "run_dir": str(self.run_dir),
        }


def finished_verification(final: RunFinished) -> Verification | None:
    """A finished run's check, read back from its run.json (None when it cannot be read: a run
    that stopped before run.json was written has no check to report)."""
    from agent_runtime.traces import read_run_record, verification_of

    try:
        return verification_of(read_run_record(Path(final.run_dir) / "run.json"))
    except AgentRuntimeError:
        return None


def finished_summary(final: RunFinished) -> dict[str, Any]:
    """The object ``agent-runtime run --json`` prints for a finished run (MCP's ``run_task``
    returns it too): its outcome, and its check from run.json."""
    from agent_runtime.checks import outcome

    verification = finished_verification(final)
    return {
        "run_id": final.run_id,
        "success": final.success,
        "status": final.status,
        "verified": verification.verified if verification else None,
        "outcome": outcome(final.status, final.success, verification),
        "verification": verification.model_dump() if verification else None,
        "answer": final.answer,
        "steps": final.steps,
        "run_dir": final.run_dir,
    }


class Runtime:
    """Runs tasks with the roles, models and limits of one configuration.

    ``models`` maps role names to LangChain chat models you built yourself; roles without an
    entry get :func:`agent_runtime.models.make_chat_model` for their configured model (one
    client per distinct model config, reused across runs).

    With no ``config`` the configuration is read like ``agent-runtime run`` reads it
    (:func:`~agent_runtime.config.load_config`). When it names no model and no server answers at
    the default endpoint, new runs use the offline demo model, announced by a :class:`Notice`
    (:func:`agent_runtime.demo_model.choose`, the one place that decides, for ``run`` too).
    """

    def __init__(
        self,
        config: RuntimeConfig | None = None,
        *,
        models: Mapping[str, Any] | None = None,
        runs_dir: Path | str | None = None,
    ) -> None:
        self.config = config if config is not None else load_config()
        self._config_given = config is not None
        self.runs_dir = runs_directory(runs_dir if runs_dir is not None else self.config.runs.dir)
        unknown = set(models or {}) - set(ROLES)
        if unknown:
            raise ConfigError(f"models given for unknown roles: {', '.join(sorted(unknown))}")
        self._user_models = dict(models or {})
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        #: The cancel events of this runtime's runs in flight (see :meth:`cancel`).
        self._cancels: set[threading.Event] = set()
        #: The pause events of this runtime's runs in flight (see :meth:`pause`).
        self._pauses: set[threading.Event] = set()
        #: Replies given with :meth:`respond`, by request id, until their run takes them.
        self._replies: dict[str, InputReply] = {}
        #: None until the first new run decides; then whether it fell back to the demo model.
        self._demo: bool | None = None

    # -- public API -----------------------------------------------------------------------------
    def run(
        self,
        task: str,
        *,
        device: Device | str | None = None,
        max_steps: int | None = None,
        on_input: OnInput | None = None,
    ) -> RunResult:
        """Run ``task`` to the end on ``device`` (a Device or a spec like ``simphone:3``).

        ``on_input`` answers the run's requests of a person (a question, a confirmation, a pause;
        see :mod:`agent_runtime.control`); without it no one attends the run and each request is
        settled by :func:`~agent_runtime.control.unattended_reply`."""
        return _drain(self._execute(task=task, device=device, max_steps=max_steps, on_input=on_input))

    async def arun(
        self,
        task: str,
        *,
        device: Device | str | None = None,
        max_steps: int | None = None,
        on_input: OnInput | Callable[[InputRequest], Awaitable[InputReply]] | None = None,
    ) -> RunResult:
        """:meth:`run` in a worker thread, for asyncio applications; ``on_input`` may be async."""
        callback = _on_loop(on_input, asyncio.get_running_loop())
        return await asyncio.to_thread(self.run, task, device=device, max_steps=max_steps, on_input=callback)

    def stream(
        self,
        task: str,
        *,
        device: Device | str | None = None,
        max_steps: int | None = None,
        interactive: bool = False,
    ) -> Generator[Event, None, None]:
        """Run ``task`` and yield its events; the last one is :class:`RunFinished`.

        With ``interactive`` a person attends the run: an :class:`InputRequested` event asks
        them, and :meth:`respond` before taking the next event answers; a request left
        unanswered ends the stream with status ``waiting`` (:meth:`resume` with ``reply``
        continues it). Without it, requests are settled unattended."""
        yield from self._execute(task=task, device=device, max_steps=max_steps, attended=interactive)

    def resume(
        self,
        run_id: str,
        *,
        device: Device | str | None = None,
        reply: InputReply | None = None,
        on_input: OnInput | None = None,
    ) -> RunResult:
        """Continue an interrupted, killed, errored or waiting run from its last checkpoint;
        ``reply`` answers the request it waits for (without a reply or ``on_input`` a pending
        request is settled unattended)."""
        return _drain(self._execute(resume=run_id, device=device, reply=reply, on_input=on_input))

    async def aresume(
        self,
        run_id: str,
        *,
        device: Device | str | None = None,
        reply: InputReply | None = None,
        on_input: OnInput | Callable[[InputRequest], Awaitable[InputReply]] | None = None,
    ) -> RunResult:
        """:meth:`resume` in a worker thread, for asyncio applications."""
        callback = _on_loop(on_input, asyncio.get_running_loop())
        return await asyncio.to_thread(self.resume, run_id, device=device, reply=reply, on_input=callback)

    def stream_resume(
        self,
        run_id: str,
        *,
        device: Device | str | None = None,
        reply: InputReply | None = None,
        interactive: bool = False,
    ) -> Generator[Event, None, None]:
        """:meth:`resume`, yielding events (``interactive`` as in :meth:`stream`)."""
        yield from self._execute(resume=run_id, device=device, reply=reply, attended=interactive)

    def respond(self, request_id: str, reply: InputReply) -> None:
        """Answer the request of an :class:`InputRequested` event (an interactive stream):
        call it before taking the stream's next event."""
        with self._lock:
            self._replies[request_id] = reply

    def pause(self) -> None:
        """Ask this runtime's attended runs in flight to stop at the start of their next step and
        hand the device to the person (an ``InputRequested`` of kind ``takeover``; reply
        ``InputReply.resume()`` when done). Callable from any thread; unattended runs go on."""
        with self._lock:
            for event in self._pauses:
                event.set()

    def cancel(self) -> None:
        """Interrupt this runtime's runs in flight; callable from any thread.

        Each run abandons its model call (an HTTP request within a tenth of a second, in-process
        generation at the next token), records status ``interrupted`` with its totals, keeps its
        checkpoint (:meth:`resume` continues it from its last committed step) and ends:
        :meth:`run` returns a result with that status, :meth:`stream` ends with that
        :class:`RunFinished`. Ctrl-C (SIGINT) in the main thread stops a run the same way,
        then raises :class:`RunInterrupted`, a ``KeyboardInterrupt``.
        """
        with self._lock:
            for event in self._cancels:
                event.set()

    # -- building a run -------------------------------------------------------------------------
    def _chat_model(self, role: Role) -> Any:
        if role in self._user_models:
            return self._user_models[role]
        cfg = self.config.model_for(role)
        key = cfg.model_dump_json()
        with self._lock:
            if key not in self._clients:
                from agent_runtime.models import make_chat_model

                self._clients[key] = make_chat_model(cfg)
            return self._clients[key]

    def _callers(self, run_id: str, record: Any, kind: GraphKind) -> dict[str, Any]:
        from agent_runtime.roles import gui_owl
        from agent_runtime.roles.caller import RoleCaller
        from agent_runtime.roles.templates import load_template, role_template

        config = self.config.playing(kind)
        callers: dict[str, RoleCaller] = {}
        for role in config.graph_roles():
            if role not in OPTIONAL_ROLES and not config.role(role).enabled:
                raise ConfigError(f"the {role} role cannot be disabled (the {kind} graph needs it)")
            override = config.role(role).prompt
            prompts = "full" if role in _FULL_ONLY else config.model_for(role).prompts
            template = (
                role_template(_ROLE_TEMPLATES[role], prompts, override) if role in _ROLE_TEMPLATES else None
            )
            callers[role] = RoleCaller(
                role,
                self._chat_model(role),
                config.model_for(role),
                template,
                run_id=run_id,
                record=record,
                reask=config.graph.reask,
                system_template=load_template(gui_owl.SYSTEM_TEMPLATE) if role == "single" else None,
                # Hi-Agent's levels were trained (GRPO rows) with the screenshot before the text.
                images_first=role in ("high", "low"),
            )
        return callers

    def _models_record(self, callers: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for role, caller in callers.items():
            entry = caller.model_config.public()
            entry.update(model_id=caller.model_id, prompt=caller.template.source if caller.template else None)
            out[role] = entry
        return out

    def _device(self, device: Device | str | None, fallback_spec: str | None = None) -> tuple[Device, bool]:
        """The device to use and whether this runtime owns it (and must close it)."""
        if isinstance(device, Device):
            return device, False
        spec = device or fallback_spec or self.config.device.spec
        if not isinstance(spec, str):
            raise ConfigError(f"device must be a Device or a spec string, got {type(device).__name__}")
        from agent_runtime.devices.registry import resolve_device

        return resolve_device(spec, **self.config.device.options), True

    # -- the run loop ---------------------------------------------------------------------------
    def _prepare(
        self,
        task: str | None,
        resume: str | None,
        device: Device | str | None,
        max_steps: int | None,
        reply: InputReply | None = None,
    ) -> _Plan:
        """Validate the request and pick run id, directory and device — before anything is written.

        A resumed run is locked first (:mod:`agent_runtime.runlock`: one process plays a run),
        then read, so what is checked is what this process will continue."""
        if resume is not None:
            run_dir = find_run(self.runs_dir, resume)
            lock = RunLock.acquire(run_dir)
            try:
                plan = self._prepare_resume(run_dir, device, reply)
            except BaseException:
                lock.release()
                raise
            plan.lock = lock
            return plan
        if not task or not task.strip():
            raise ConfigError("the task is empty", hint="describe what the agent should do")
        limit = check_max_steps(max_steps if max_steps is not None else self.config.graph.max_steps)
        if device is None or isinstance(device, str):
            from agent_runtime.devices.registry import split_spec

            split_spec(device or self.config.device.spec)  # a usage error outranks the model fallback
        self._choose_models()
        run_id = new_run_id()
        check, unchecked = self._plan_check(task, device)
        dev, owned = (check.phone(**self.config.device.options), True) if check else self._device(device)
        plan = _Plan(
            run_id, self.runs_dir / run_id, task, limit, dev, owned, check=check, kind=self.config.graph.kind
        )
        if check is not None:
            from agent_runtime.checks import StateChangeCheck

            level = "warning" if isinstance(check, StateChangeCheck) else "info"
            plan.notices.append(Notice(message=check.notice, level=level))
        else:
            plan.unchecked = unchecked
        return plan

    def _prepare_resume(self, run_dir: Path, device: Device | str | None, reply: InputReply | None) -> _Plan:
        """A resumed run's plan (its directory locked by the caller): resumable, its checkpoint
        this run's, ``reply`` one its pending request accepts, its device put back."""
        loaded = load_run(run_dir)
        previous = loaded.run
        if previous.status not in _RESUMABLE:
            raise ConfigError(
                f"run {previous.run_id} already ended with status {previous.status!r}",
                hint="only runs that were interrupted or stopped by an error can be resumed",
            )
        if not (run_dir / "checkpoint.sqlite").is_file():
            raise TraceError(f"run {previous.run_id} has no checkpoint.sqlite to resume from")
        values = check_checkpoint(run_dir, previous.run_id)
        if reply is not None and values.get("request") is not None:
            # A reply the request does not accept is refused now: the run stays waiting.
            as_reply(reply).check(InputRequest.model_validate(values["request"]))
        kind = (previous.config.get("graph") or {}).get("kind", "mobile_agent_v3")
        if kind not in GRAPH_KINDS:
            raise TraceError(f"run {previous.run_id} was played by an unknown graph kind {kind!r}")
        dev, owned = self._device(device, previous.device.get("spec"))
        plan = _Plan(
            previous.run_id,
            run_dir,
            previous.task,
            self.config.graph.max_steps,
            dev,
            owned,
            previous,
            {s.step for s in loaded.steps},
            carried_totals(loaded),
            kind=kind,
            interventions={i.request_id for i in loaded.interventions},
        )
        try:
            plan.check = _resumed_check(plan)
            plan.notices = restore_device(
                dev,
                owned=owned,
                run_dir=run_dir,
                run_id=previous.run_id,
                started_on=previous.device.get("spec", "?"),
                written=plan.written,
                steps=loaded.steps,
                values=values,
            )
        except BaseException:
            if owned:
                dev.close()
            raise
        return plan

    def _plan_check(self, task: str, device: Device | str | None) -> tuple[RunCheck | None, str]:
        """What judges a new run when the runtime builds an in-process SimPhone itself, on the
        phone the run asks for (see :mod:`agent_runtime.checks`); else None and why it
        cannot be checked."""
        if isinstance(device, Device):
            return None, "the device was handed to the runtime, which cannot set it up for a check"
        from agent_runtime.devices.registry import split_spec

        spec = device or self.config.device.spec
        kind, arg = split_spec(spec)
        if kind != "simphone":
            return None, f"only SimPhone tasks can be checked; this run's device is {spec}"
        seed = arg if arg is not None else self.config.device.options.get("seed")
        if seed is not None and not str(seed).isdigit():
            return None, ""  # the device refuses the spec with a usage error
        from agent_runtime.checks import plan_check

        return plan_check(task, None if seed is None else int(seed)), ""

    def _choose_models(self) -> None:
        """Once, before the first new run: fall back to the demo model if nothing is configured."""
        with self._lock:
            if self._demo is not None:
                return
            if self._user_models:
                self._demo = False
                return
            from agent_runtime import demo_model

            self.config, self._demo = demo_model.choose(self.config)

    def _chosen_by(self) -> str:
        """What named this runtime's models, in words: a config file, the configuration given
        in Python, or the environment (never "the config" when no file was read)."""
        if self.config.source is not None:
            return str(self.config.source)
        return "the RuntimeConfig given to Runtime" if self._config_given else "AGENT_RUNTIME_* variables"

    def _model_notices(self, spec: str, callers: Mapping[str, Any]) -> Iterator[Notice]:
        """Say which model plays when it is the demo model; convert and load in-process GGUF
        models before the first step, one clean line each, instead of inside the first call."""
        from agent_runtime import demo_model

        if demo_model.uses_demo(self.config):
            yield Notice(message=demo_model.notice(spec, fallback=bool(self._demo), where=self._chosen_by()))
        seen: set[str] = set()
        for role in callers:
            cfg = self.config.model_for(role)  # type: ignore[arg-type]
            if role in self._user_models or not cfg.model.startswith("gguf:") or cfg.model in seen:
                continue
            seen.add(cfg.model)
            from agent_runtime.models.gguf import cache_root, gguf_model_dir, quiet_progress, resolve
            from agent_runtime.models.transformers_chat import TransformersChatModel

            chat = self._chat_model(role)  # type: ignore[arg-type]
            if not isinstance(chat, TransformersChatModel):
                continue

            label = "the demo model" if cfg.model == demo_model.MODEL_REF else cfg.model.partition("?")[0]
            source = resolve(cfg.model.partition("?")[0])
            if not source.cached:
                yield Notice(
                    message=f"converting {label} once (≈50 s, ~520 MB in {cache_root()}; "
                    "later runs reuse it)…"
                )
                gguf_model_dir(source.spec)
            yield Notice(message=f"loading {label}…")
            with quiet_progress():
                _ = chat.engine

    def _execute(self, **request: Any) -> Generator[Event, None, RunResult]:
        """A run with its sinks guarded: redacted events and result, third-party tracing as configured."""
        from agent_runtime.tracing import private_run

        cancel, pause = threading.Event(), threading.Event()
        run = self._run_graph(cancel=cancel, pause=pause, **request)
        return private_run(self._cancellable(run, cancel, pause), self.config)

    def _cancellable(
        self, run: Generator[Event, None, RunResult], cancel: threading.Event, pause: threading.Event
    ) -> Generator[Event, None, RunResult]:
        """``run`` under its cancel event: the current one for every step of its work (model calls
        watch it), set by :meth:`cancel` and by Ctrl-C while the run is in flight; its pause
        event is set by :meth:`pause`."""
        from agent_runtime.models.cancel import cancel_scope

        with self._lock:
            self._cancels.add(cancel)
            self._pauses.add(pause)
        _sigint_watch(cancel)
        try:
            while True:
                with cancel_scope(cancel):
                    try:
                        event = next(run)
                    except StopIteration as stop:
                        return stop.value  # type: ignore[no-any-return]
                yield event
        finally:
            try:
                with cancel_scope(cancel):
                    run.close()
            finally:
                _sigint_unwatch(cancel)
                with self._lock:
                    self._cancels.discard(cancel)
                    self._pauses.discard(pause)

    def _run_graph(
        self,
        *,
        task: str | None = None,
        resume: str | None = None,
        device: Device | str | None = None,
        max_steps: int | None = None,
        cancel: threading.Event | None = None,
        pause: threading.Event | None = None,
        reply: InputReply | None = None,
        on_input: OnInput | None = None,
        attended: bool = False,
    ) -> Generator[Event, None, RunResult]:
        from langgraph.types import Command

        from agent_runtime.graphs.build import build_graph, sqlite_checkpointer
        from agent_runtime.graphs.context import RunContext
        from agent_runtime.models.cancel import RunCancelled
        from agent_runtime.simphone import SimPhone
        from agent_runtime.telemetry import RunTelemetry, open_telemetry

        plan = self._prepare(task, resume, device, max_steps, reply)
        writer: TraceWriter | None = None
        conn: sqlite3.Connection | None = None
        ctx: RunContext | None = None
        record: RunRecord | None = None
        telemetry: RunTelemetry | None = None
        stopped_by: BaseException | None = None
        started = time.time()
        base = plan.base
        app: Any = None
        graph_config: RunnableConfig = {"configurable": {"thread_id": plan.run_id}}

        def progress() -> None:  # a step committed: run.json's totals so far, the phone's state
            if record is not None and ctx is not None and writer is not None:
                writer.write_run(with_totals(record, base, ctx, started, steps=len(ctx.steps_written)))
                if plan.owned and isinstance(plan.device, SimPhone) and ctx.steps_written:
                    save_simphone(plan.device, plan.run_dir, max(ctx.steps_written), writer.redactor)

        def asking() -> InputRequest | None:
            """The request the run stopped on, when it stopped while a person was asked (or
            their reply applied): whatever failed there, the request is still pending."""
            if app is None or record is None or ctx is None or record.status != "running":
                return None
            try:
                return _pending_request(app.get_state(graph_config))
            except Exception:  # the checkpoint cannot be read: not known to be waiting
                return None

        try:
            telemetry = open_telemetry(self.config, plan.run_id)
            platform = getattr(plan.device, "platform", "mobile")
            sink: list[RunContext] = []
            callers = self._callers(plan.run_id, lambda rec: sink[0].record_call(rec), plan.kind)
            observation = {role: caller.model_config.observation for role, caller in callers.items()}
            _check_tree(plan.device, callers)
            if plan.lock is None:  # a new run: its directory is made and locked at once
                plan.lock = RunLock.acquire(plan.run_dir, create=True)
            writer = TraceWriter(plan.run_dir, sensitive=self.config.memory.sensitive)
            ctx = RunContext(
                run_id=plan.run_id,
                device=plan.device,
                writer=writer,
                config=self.config,
                callers=callers,
                platform=platform,
                device_word="computer" if platform == "desktop" else "phone",
                steps_written=plan.written,
                resumed=plan.previous is not None,
                observation=observation,
                on_commit=progress,
                telemetry=telemetry,
                attended=attended or on_input is not None,
                pause=pause or threading.Event(),
                interventions_written=set(plan.interventions),
            )
            sink.append(ctx)
            info = plan.device.info()
            record = (plan.previous or RunRecord(run_id=plan.run_id, task=plan.task)).model_copy(
                update={
                    "sessions": session_started(
                        plan.previous.sessions if plan.previous else [],
                        started_at=started,
                        from_step=len(plan.written),
                    ),
                    "status": "running",
                    "error": None,
                    "finished_at": None,
                    "device": info.model_dump(mode="json"),
                    "models": self._models_record(callers),
                    "config": self.config.playing(plan.kind).public(),
                    "timings": base.timings,
                    "tokens": base.tokens,
                    "verification": plan.check.pending() if plan.check else None,
                }
            )
            writer.write_run(with_totals(record, base, ctx, started, steps=len(plan.written)))

            def stopping() -> None:  # the process exits with the run in flight: see _interrupt_in_flight
                if record is not None and ctx is not None and record.status == "running":
                    self._finish(record, base, ctx, started, status="interrupted", reason="interrupted")

            with _in_flight_lock:
                _in_flight[plan.run_id] = stopping
            if telemetry is not None:
                telemetry.start_run(record, kind=plan.kind, device=info.spec, started=started)
            conn = sqlite3.connect(plan.run_dir / "checkpoint.sqlite", check_same_thread=False)
            # WAL (set by SqliteSaver) + synchronous=NORMAL survives a killed process, which is
            # what resume needs, without an fsync per checkpoint (only power loss can lose one).
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            app = build_graph(sqlite_checkpointer(conn), kind=plan.kind)
            yield RunStarted(
                run_id=plan.run_id,
                task=plan.task,
                run_dir=str(plan.run_dir),
                device=info.spec,
                resumed=plan.previous is not None,
            )
            yield from plan.notices
            if plan.previous is None:
                yield from self._model_notices(info.spec, callers)
            yield from _load_in_process(callers)
            graph_input = yield from _graph_input(app, graph_config, plan, platform)
            limit = (graph_input or app.get_state(graph_config).values).get("max_steps", plan.max_steps)
            graph_config["recursion_limit"] = limit * 6 + 20
            command: Any = graph_input
            answered: str | None = None
            if reply is not None:  # resume(run_id, reply=...): the answer to the pending request
                pending = _pending_request(app.get_state(graph_config))
                if pending is None:
                    yield Notice(
                        message="the run was not waiting for a reply; the reply is not used", level="warning"
                    )
                else:
                    command = Command(resume=as_reply(reply).check(pending).model_dump(mode="json"))
                    ctx.replying, answered = True, pending.id
            waiting = yield from self._play(app, graph_config, ctx, command, on_input, answered)
            final = app.get_state(graph_config).values
            ctx.close()
            if waiting is not None:
                record = self._finish(record, base, ctx, started, status="waiting", reason=_waits(waiting))
            else:
                status: RunStatus = final.get("status") or "error"
                verification = (
                    plan.check.verify(plan.device, final.get("answer"))
                    if plan.check is not None
                    else Verification(detail=plan.unchecked)
                )
                record = self._finish(
                    record,
                    base,
                    ctx,
                    started,
                    status=status,
                    success=bool(final.get("success")) and status == "completed",
                    answer=final.get("answer"),
                    reason=final.get("reason", ""),
                    verification=verification,
                )
                if "rag" in callers:
                    from agent_runtime.roles.rag import record_experience

                    remembered = record_experience(plan.run_dir, self.config.memory)
                    if remembered:
                        yield Notice(message=remembered)
        except (KeyboardInterrupt, GeneratorExit, RunCancelled) as exc:
            stopped_by = exc
            # Ctrl-C sets the cancel event (_on_sigint), then lands here as a KeyboardInterrupt, or
            # as GeneratorExit when it hit the code consuming the events; cancel() as RunCancelled.
            # The run stops where it is, resumable from its last checkpoint.
            if not isinstance(exc, RunCancelled) and not (cancel is not None and cancel.is_set()):
                # The consumer stopped early, or code raised KeyboardInterrupt (no signal): like
                # a killed process, the run stays "running" (resumable) — unless it was asking
                # a person (the consumer left at the question): then it waits for the answer.
                pending = asking()
                if pending is not None and record is not None and ctx is not None:
                    ctx.close()
                    record = self._finish(
                        record, base, ctx, started, status="waiting", reason=_waits(pending)
                    )
                raise
            if cancel is not None:
                cancel.set()  # whatever is still in flight (the Notetaker) stops too
            if record is None or ctx is None:
                _discard(plan, writer)
                raise
            if record.status != "running":  # it had ended (remembering its experience): keep that
                raise
            ctx.close()
            record = self._finish(record, base, ctx, started, status="interrupted", reason="interrupted")
            if isinstance(exc, GeneratorExit):
                raise
            if isinstance(exc, KeyboardInterrupt):
                raise RunInterrupted(record.run_id, plan.run_dir, record.steps) from None
        except Exception as exc:
            # What the run's own errors, and a runs folder that refuses a write (an OSError, a
            # checkpoint's sqlite3 error), end in: one named error, recorded when it can be.
            fault = exc if isinstance(exc, AgentRuntimeError) else _storage_fault(exc, plan.run_dir)
            stopped_by = fault or exc
            if record is None or ctx is None:
                _discard(plan, writer)
                if fault is None or fault is exc:
                    raise
                raise fault from None
            pending = asking()
            ctx.close()
            if fault is not None:
                error = fault.to_dict()
                if pending is not None:  # a refused reply, an unwritable answer: the request stays
                    reason = f"{_waits(pending)} (the reply could not be taken: {fault.message})"
                    record = self._finish(
                        record, base, ctx, started, status="waiting", reason=reason, error=error
                    )
                else:
                    record = self._finish(
                        record, base, ctx, started, status="error", reason=fault.message, error=error
                    )
            else:
                error = {
                    "type": type(exc).__name__,
                    "message": str(exc),
                    "hint": "this is a bug; please report it",
                }
                if pending is not None:  # a bug while a person was asked (an on_input that raised): it waits
                    record = self._finish(
                        record, base, ctx, started, status="waiting", reason=_waits(pending), error=error
                    )
                else:
                    reason = f"internal error: {exc}"
                    record = self._finish(
                        record, base, ctx, started, status="error", reason=reason, error=error
                    )
                raise
        finally:
            with _in_flight_lock:
                _in_flight.pop(plan.run_id, None)
            try:
                if ctx is not None:
                    ctx.close()
                if telemetry is not None:  # after close(): a Notetaker call still in flight is in
                    telemetry.end_run(record, ctx.totals()[0] if ctx is not None else None, error=stopped_by)
                if writer is not None:
                    writer.close()
                if conn is not None:
                    conn.close()
                if plan.owned:
                    plan.device.close()
            finally:
                if plan.lock is not None:  # last: every write of this run is done
                    plan.lock.release()
        result = RunResult(
            run_id=record.run_id,
            task=record.task,
            status=record.status,
            success=bool(record.success),
            answer=record.answer,
            steps=record.steps,
            run_dir=plan.run_dir,
            reason=_reason(record),
            error=record.error,
            tokens=record.tokens,
            timings=record.timings,
            verification=record.verification,
        )
        yield RunFinished(
            run_id=result.run_id,
            status=result.status,
            success=result.success,
            answer=result.answer,
            steps=result.steps,
            reason=result.reason,
            run_dir=str(plan.run_dir),
            error=result.error,
        )
        return result

    def _play(
        self,
        app: Any,
        graph_config: RunnableConfig,
        ctx: RunContext,
        command: Any,
        on_input: OnInput | None,
        answered: str | None = None,
    ) -> Generator[Event, None, InputRequest | None]:
        """Stream the graph from ``command`` to its end, answering each request it stops on (its
        ``human`` node's ``interrupt()``); returns the request no one answered, if it waits.

        ``answered``: the id of the request ``command`` replies to. When the graph stops again on
        the request just answered, the reply could not be taken (``InputRequest.refused`` says
        why): the run waits for another reply instead of asking the same source again at once."""
        from langgraph.types import Command

        while True:
            # The custom stream carries exactly what the nodes emitted: our events.
            for event in app.stream(
                command, graph_config, context=ctx, stream_mode="custom", durability="sync"
            ):
                yield cast(Event, event)
            waiting = _pending_request(app.get_state(graph_config))
            if waiting is None:
                return None
            if waiting.id == answered and waiting.refused:
                return waiting
            asked = time.monotonic()
            answer = yield from self._person(waiting, on_input)
            ctx.started += time.monotonic() - asked  # a time budget does not count the person's time
            if answer is None:
                return waiting  # the run waits, resumable
            command = Command(resume=answer.model_dump(mode="json"))
            ctx.replying, answered = True, waiting.id

    def _person(
        self, request: InputRequest, on_input: OnInput | None
    ) -> Generator[Event, None, InputReply | None]:
        """The reply to ``request``, after announcing it: ``on_input``'s, else what
        :meth:`respond` left for it (None: no one answered)."""
        yield InputRequested(request=request)
        if on_input is not None:
            answer: object = on_input(request)
        else:
            with self._lock:
                answer = self._replies.pop(request.id, None)
        return as_reply(answer).check(request) if answer is not None else None

    def _finish(
        self,
        record: RunRecord,
        base: Totals,
        ctx: RunContext,
        started: float,
        *,
        status: RunStatus,
        reason: str,
        success: bool = False,
        answer: str | None = None,
        error: dict[str, Any] | None = None,
        verification: Verification | None = None,
    ) -> RunRecord:
        """Write the final run.json: outcome, check, totals (accumulated across resumes), error.

        Without ``verification`` (the run stopped on an error) nothing was checked; a pending
        check keeps naming its task instance, so a resumed run is still checked at its end."""
        if verification is None:
            pending = record.verification.by if record.verification is not None else None
            verification = Verification(
                by=pending,
                detail="not checked: the run stopped before its end"
                + (" (resume it to have it checked)" if pending else ""),
            )
        now = time.time()
        done = with_totals(record, base, ctx, started, steps=len(ctx.steps_written)).model_copy(
            update={
                "status": status,
                "success": success,
                "answer": answer,
                "finished_at": now,
                "sessions": session_ended(record.sessions, status, now),
                "error": error,
                "reason": reason,
                "verification": verification,
            }
        )
        ctx.writer.write_run(done)
        return done


def _waits(request: InputRequest) -> str:
    """A waiting run's reason: what it waits for (and why the last reply was not taken)."""
    refused = f" (the last reply could not be taken: {request.refused})" if request.refused else ""
    return f"waiting for a person: {request.describe()}{refused}"


def _pending_request(snapshot: Any) -> InputRequest | None:
    """The request the graph stopped on (its ``human`` node's ``interrupt()``), if any."""
    for pending in snapshot.interrupts:
        return InputRequest.model_validate(pending.value)
    return None


def _on_loop(
    on_input: OnInput | Callable[[InputRequest], Awaitable[InputReply]] | None,
    loop: asyncio.AbstractEventLoop,
) -> OnInput | None:
    """``on_input`` callable from the run's worker thread: an async callback runs on ``loop``."""
    if on_input is None or not asyncio.iscoroutinefunction(on_input):
        return cast(OnInput | None, on_input)

    def call(request: InputRequest) -> InputReply:
        return asyncio.run_coroutine_threadsafe(on_input(request), loop).result()

    return call


def _load_in_process(callers: Mapping[str, Any]) -> Iterator[Notice]:
    """Load the in-process models not loaded yet (a resumed run's) here, where Ctrl-C reaches,
    not inside the first call: that runs in a graph worker thread, where a load cannot be
    interrupted."""
    from agent_runtime.models.transformers_chat import TransformersChatModel

    seen: set[int] = set()
    for caller in callers.values():
        model = caller.chat_model
        if not isinstance(model, TransformersChatModel) or model.loaded or id(model) in seen:
            continue
        seen.add(id(model))
        from agent_runtime.models.gguf import quiet_progress

        yield Notice(message=f"loading {model.path.partition('?')[0]}…")
        with quiet_progress():
            _ = model.engine


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run: its run.json says ``interrupted`` (totals included) and its
    checkpoint is kept, so ``Runtime.resume(run_id)`` / ``agent-runtime run --resume RUN_ID``
    continues it. A ``KeyboardInterrupt``: code that handles those handles this one."""

    def __init__(self, run_id: str, run_dir: Path, steps: int) -> None:
        super().__init__(f"run {run_id} interrupted after {steps} steps; saved in {run_dir}")
        self.run_id, self.run_dir, self.steps = run_id, run_dir, steps


_in_flight_lock = threading.Lock()
#: The runs this process plays now (by id), each with what records it ``interrupted``.
_in_flight: dict[str, Callable[[], None]] = {}


@atexit.register
def _interrupt_in_flight() -> None:
    """The process exits (Ctrl-C or SIGTERM ends it at once, see :mod:`agent_runtime.cli.signals`)
    while runs still play in other threads — an evaluation's worker thread loading a model, which
    no cancel event cuts short: record each ``interrupted`` (resumable), as it would itself had it
    reached a point where it stops, never left ``running`` by a process that has ended."""
    with _in_flight_lock:
        stops = list(_in_flight.values())
    for stop in stops:
        # A runs folder that refuses the write leaves that run "running": nothing more to do at exit.
        with contextlib.suppress(AgentRuntimeError):
            stop()


_sigint_lock = threading.Lock()
#: The cancel events of the runs in flight that Ctrl-C stops; the handler replaced, while ours is in.
_sigint_runs: set[threading.Event] = set()
_sigint_previous: list[Any] = []


def _on_sigint(signum: int, frame: Any) -> None:
    """SIGINT while runs are in flight: cancel their model calls (in whatever thread they run),
    then do what the replaced handler does (raise KeyboardInterrupt in the main thread)."""
    for event in list(_sigint_runs):
        event.set()
    previous = _sigint_previous[0] if _sigint_previous else None
    if callable(previous):
        previous(signum, frame)
    else:
        raise KeyboardInterrupt


def _sigint_watch(cancel: threading.Event) -> None:
    """Have Ctrl-C set ``cancel``: only from the main thread (where signal handlers live), and
    only when SIGINT has a Python handler (the default one raises KeyboardInterrupt); a handler
    the application installed is still called after."""
    import signal

    with _sigint_lock:
        _sigint_runs.add(cancel)
        if threading.current_thread() is not threading.main_thread() or _sigint_previous:
            return
        current = signal.getsignal(signal.SIGINT)
        if callable(current):
            _sigint_previous.append(current)
            signal.signal(signal.SIGINT, _on_sigint)


def _sigint_unwatch(cancel: threading.Event) -> None:
    """The run ended: put the replaced SIGINT handler back once no run is in flight."""
    import signal

    with _sigint_lock:
        _sigint_runs.discard(cancel)
        if _sigint_runs or not _sigint_previous or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, _sigint_previous[0])
        _sigint_previous.clear()


def _discard(plan: _Plan, writer: TraceWriter | None) -> None:
    """A new run that failed before its run.json was written leaves no empty run directory."""
    if plan.previous is None and (writer is not None or plan.lock is not None):
        if writer is not None:
            writer.close()
        shutil.rmtree(plan.run_dir, ignore_errors=True)


#: OSErrors that say a file could not be written: no space (or quota), too big, read-only, denied.
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}


def _storage_fault(exc: Exception, run_dir: Path) -> TraceWriteError | None:
    """``exc`` as the runs folder refusing a write — an OSError (no space, read-only, no
    permission), or the checkpoint's sqlite3 error saying so — else None (it is a bug)."""
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError) and exc.errno in _STORAGE_ERRNOS:
        return storage_error(exc, exc.filename or run_dir)
    text = str(exc).lower()
    refusals = ("disk is full", "readonly database", "read-only", "unable to open database", "disk i/o error")
    if isinstance(exc, sqlite3.OperationalError) and any(r in text for r in refusals):
        return TraceWriteError(
            f"cannot write {run_dir / 'checkpoint.sqlite'}: {exc}",
            hint="free some space or make the runs directory writable, then resume the run",
        )
    return None


@dataclass
class _Plan:
    """What a run will be: validated before any file is written."""

    run_id: str
    run_dir: Path
    task: str
    max_steps: int
    device: Device
    owned: bool
    previous: RunRecord | None = None
    written: set[int] = field(default_factory=set)
    base: Totals = field(default_factory=Totals)
    #: What restoring a resumed run's device had to say (yielded once the run has started).
    notices: list[Notice] = field(default_factory=list)
    #: What judges the run at its end on the SimPhone built for it, if anything can.
    check: RunCheck | None = None
    #: Why the run cannot be checked (when ``check`` is None).
    unchecked: str = "this run plays no SimPhone task, so nothing could check it"
    #: The graph kind the run plays (a resumed run: the one it started with).
    kind: GraphKind = "mobile_agent_v3"
    #: Ids of the requests a resumed run already recorded in interventions.jsonl.
    interventions: set[str] = field(default_factory=set)
    #: The run directory's lock, held from before the run is read to after its last write.
    lock: RunLock | None = None


def _resumed_check(plan: _Plan) -> RunCheck | None:
    """A resumed run's check (named in its run.json), prepared on the fresh SimPhone the runtime
    built for it — before its steps are replayed — so that the replay and the check see the
    phone the run started with."""
    from agent_runtime.checks import resumed_check
    from agent_runtime.simphone import SimPhone

    if plan.previous is None or not (plan.owned and isinstance(plan.device, SimPhone)):
        return None
    check = resumed_check(plan.previous.verification, plan.task, plan.device.seed)
    if check is not None:
        check.prepare(plan.device)
    return check


def _graph_input(
    app: Any, graph_config: RunnableConfig, plan: _Plan, platform: str
) -> Generator[Event, None, Any]:
    """The graph's input: a fresh state, or None to continue from the last checkpoint.

    A run killed while its action was being executed is not replayed blind — the action may or
    may not have reached the device — so it is moved back to before the Worker's choice, and
    the Worker decides again from a fresh look at the screen.
    """
    from agent_runtime.graphs.build import initial_state

    def fresh() -> Any:
        state = initial_state(plan.task, platform=platform, max_steps=plan.max_steps, kind=plan.kind)
        # Who each name reaches as the run starts: the guard does not trust a contact changed later.
        book = plan.device.address_book()
        state["contacts_at_start"] = book.model_dump(mode="json") if book is not None else None
        return state

    if plan.previous is None:
        return fresh()
    snapshot = app.get_state(graph_config)
    if not snapshot.values:  # killed before the first checkpoint
        return fresh()
    if "execute" in snapshot.next:
        # Back to the node before the acting one: the Manager's plan, or (other kinds) ``advance``.
        team = snapshot.values.get("graph", "mobile_agent_v3") == "mobile_agent_v3"
        app.update_state(graph_config, {"pending": None}, as_node="plan" if team else "advance")
        who = "the Worker" if team else "the agent"
        yield Notice(message=f"resumed before the interrupted action; {who} decides again")
    else:
        yield Notice(message=f"resuming at {', '.join(snapshot.next) or 'the end'}")
    return None


def _check_tree(device: Device, callers: Mapping[str, Any]) -> None:
    """Before anything is written: roles that read the UI tree need a device that has one."""
    from agent_runtime.graphs.inputs import require_tree, tree_roles

    roles = tree_roles({role: caller.model_config for role, caller in callers.items()})
    if roles:
        require_tree(device, roles, device.observe())


def _reason(record: RunRecord) -> str:
    extra = record.model_extra or {}
    return str(extra.get("reason", ""))


def _drain(gen: Generator[Event, None, RunResult]) -> RunResult:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
