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

This module is the facade: the public API, the models a runtime shares across its runs, and the
result. A run itself is :mod:`agent_runtime.run` — its typed request, its plan, and the session
that owns what it opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.config import ROLES, Role, RuntimeConfig, load_config, runs_directory
from agent_runtime.control import InputReply, InputRequest
from agent_runtime.device import Device
from agent_runtime.errors import AgentRuntimeError, ConfigError
from agent_runtime.events import Event, Notice, RunFinished
from agent_runtime.models.model_ref import ModelRef
from agent_runtime.run.plan import Plan, check_new_run, plan_new, plan_resume
from agent_runtime.run.request import NewRun, OnInput, ResumeRun
from agent_runtime.run.session import RunSession, RuntimeHooks
from agent_runtime.run.signals import RunInterrupted, cancellable
from agent_runtime.traces import RunRecord, RunStatus, Usage, Verification

if TYPE_CHECKING:
    from agent_runtime.checks import Outcome

__all__ = [
    "OnInput",
    "RunInterrupted",
    "RunResult",
    "Runtime",
    "finished_summary",
    "finished_verification",
]


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
        return _drain(self._execute(NewRun(task=task, device=device, max_steps=max_steps, on_input=on_input)))

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
        yield from self._execute(
            NewRun(task=task, device=device, max_steps=max_steps, interactive=interactive)
        )

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
        return _drain(self._execute(ResumeRun(run_id=run_id, device=device, reply=reply, on_input=on_input)))

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
        yield from self._execute(
            ResumeRun(run_id=run_id, device=device, reply=reply, interactive=interactive)
        )

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

    # -- models ---------------------------------------------------------------------------------
    def _chat_model(self, role: Role) -> Any:
        """``role``'s chat model: the one given for it, else one client per distinct model config."""
        if role in self._user_models:
            return self._user_models[role]
        cfg = self.config.model_for(role)
        key = cfg.model_dump_json()
        with self._lock:
            if key not in self._clients:
                from agent_runtime.models import make_chat_model

                self._clients[key] = make_chat_model(cfg)
            return self._clients[key]

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
            ref = ModelRef.parse(cfg.model)
            if role in self._user_models or ref.kind != "gguf" or cfg.model in seen:
                continue
            seen.add(cfg.model)
            from agent_runtime.models.gguf import cache_root, gguf_model_dir, quiet_progress, resolve
            from agent_runtime.models.transformers_chat import TransformersChatModel

            chat = self._chat_model(role)  # type: ignore[arg-type]
            if not isinstance(chat, TransformersChatModel):
                continue

            label = "the demo model" if cfg.model == demo_model.MODEL_REF else ref.base
            source = resolve(ref.base)
            if not source.cached:
                yield Notice(
                    message=f"converting {label} once (≈50 s, ~520 MB in {cache_root()}; "
                    "later runs reuse it)…"
                )
                gguf_model_dir(source.spec)
            yield Notice(message=f"loading {label}…")
            with quiet_progress():
                _ = chat.engine

    def _ready_models(self, spec: str, callers: Mapping[str, Any], new_run: bool) -> Iterator[Notice]:
        """A new run's model notices, then every in-process model loaded (a resumed run's too)."""
        if new_run:
            yield from self._model_notices(spec, callers)
        yield from _load_in_process(callers)

    def _left_reply(self, request_id: str) -> InputReply | None:
        """Take the reply :meth:`respond` left for ``request_id``, if any."""
        with self._lock:
            return self._replies.pop(request_id, None)

    # -- the run --------------------------------------------------------------------------------
    def _execute(self, request: NewRun | ResumeRun) -> Generator[Event, None, RunResult]:
        """A run with its sinks guarded: redacted events and result, third-party tracing as
        configured; under its cancel event, which :meth:`cancel` and Ctrl-C set."""
        from agent_runtime.tracing import private_run

        cancel, pause = threading.Event(), threading.Event()
        run = cancellable(self._run(request, cancel, pause), cancel, self._in_flight(cancel, pause))
        return private_run(run, self.config)

    @contextlib.contextmanager
    def _in_flight(self, cancel: threading.Event, pause: threading.Event) -> Iterator[None]:
        """While a run plays, :meth:`cancel` and :meth:`pause` reach it."""
        with self._lock:
            self._cancels.add(cancel)
            self._pauses.add(pause)
        try:
            yield
        finally:
            with self._lock:
                self._cancels.discard(cancel)
                self._pauses.discard(pause)

    def _run(
        self, request: NewRun | ResumeRun, cancel: threading.Event, pause: threading.Event
    ) -> Generator[Event, None, RunResult]:
        """Plan the run, play it (:class:`~agent_runtime.run.session.RunSession`), say how it ended."""
        plan = self._prepare(request)
        hooks = RuntimeHooks(self._chat_model, self._ready_models, self._left_reply)
        record = yield from RunSession(plan, request, self.config, hooks, cancel=cancel, pause=pause).play()
        result = _result(record, plan.run_dir)
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

    def _prepare(self, request: NewRun | ResumeRun) -> Plan:
        """Validate the request and pick run id, directory and device — before anything is
        written (see :mod:`agent_runtime.run.plan`)."""
        if isinstance(request, ResumeRun):
            return plan_resume(request, self.config, self.runs_dir)
        limit = check_new_run(request, self.config)  # a usage error outranks the model fallback
        self._choose_models()
        return plan_new(request, self.config, self.runs_dir, limit)


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


def _result(record: RunRecord, run_dir: Path) -> RunResult:
    """How the run ended, from its final run.json."""
    return RunResult(
        run_id=record.run_id,
        task=record.task,
        status=record.status,
        success=bool(record.success),
        answer=record.answer,
        steps=record.steps,
        run_dir=run_dir,
        reason=str((record.model_extra or {}).get("reason", "")),
        error=record.error,
        tokens=record.tokens,
        timings=record.timings,
        verification=record.verification,
    )


def _drain(gen: Generator[Event, None, RunResult]) -> RunResult:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
