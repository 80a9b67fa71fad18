"""One run's lifetime: :class:`RunSession` plays a :class:`~agent_runtime.run.plan.Plan` to its
final run.json, and owns everything the run opens on the way.

What the run opens is entered on one ``ExitStack`` as it opens — the device built for the run and
the run directory's lock (both handed over by the plan), the telemetry span, the trace writer,
the run context (its Notetaker threads), its place among the runs in flight at exit, the
checkpoint database — and closed in reverse when the run ends, however it ends. The lock goes
last: every write of the run is done by then.

How a run ends (see :mod:`agent_runtime.runtime` for the guarantees): Ctrl-C and
``Runtime.cancel`` record it ``interrupted``; a consumer that stops early, or a
KeyboardInterrupt raised by code, leaves it ``running`` like a kill (resumable), or ``waiting``
when it was asking a person; its own errors and a runs folder that refuses a write record
``error`` (``waiting`` when a reply failed to apply); a bug is recorded and raised.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agent_runtime.config import Role, RuntimeConfig
from agent_runtime.control import InputReply, InputRequest, as_reply
from agent_runtime.device import DeviceInfo
from agent_runtime.errors import AgentRuntimeError, TraceWriteError
from agent_runtime.events import Event, InputRequested, Notice, RunStarted
from agent_runtime.resume import snapshot_device, with_totals
from agent_runtime.run.callers import build_callers, models_record
from agent_runtime.run.checking import check_tree
from agent_runtime.run.plan import Plan
from agent_runtime.run.request import NewRun, ResumeRun
from agent_runtime.run.signals import RunInterrupted, in_flight
from agent_runtime.runlock import RunLock
from agent_runtime.traces import (
    RunRecord,
    RunStatus,
    TraceWriter,
    Verification,
    session_ended,
    session_started,
    storage_error,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from agent_runtime.graphs.context import RunContext
    from agent_runtime.roles.caller import RoleCaller
    from agent_runtime.telemetry import RunTelemetry
    from agent_runtime.traces import CallRecord


@dataclass(frozen=True)
class RuntimeHooks:
    """What a run borrows from the :class:`~agent_runtime.runtime.Runtime` that plays it."""

    #: The runtime's chat model for a role (one client per distinct model config, across runs).
    chat_model: Callable[[Role], Any]
    #: Makes the run's models ready before its first step, saying so: called with the device's
    #: spec, the run's callers, and whether the run is new.
    ready_models: Callable[[str, Mapping[str, RoleCaller], bool], Iterator[Notice]]
    #: Takes the reply ``Runtime.respond`` left for a request id (None: none yet).
    left_reply: Callable[[str], InputReply | None]


class RunSession:
    """One run, from its plan to its final record (see the module docs); play it once."""

    def __init__(
        self,
        plan: Plan,
        request: NewRun | ResumeRun,
        config: RuntimeConfig,
        hooks: RuntimeHooks,
        *,
        cancel: threading.Event,
        pause: threading.Event,
    ) -> None:
        self.plan, self.request, self.config, self.hooks = plan, request, config, hooks
        self.cancel, self.pause = cancel, pause
        self.reply = request.reply if isinstance(request, ResumeRun) else None
        self.started = time.time()
        self.writer: TraceWriter | None = None
        self.ctx: RunContext | None = None
        #: run.json as last written (None until the run has started).
        self.record: RunRecord | None = None
        self.telemetry: RunTelemetry | None = None
        self.stopped_by: BaseException | None = None
        self.app: Any = None
        self.graph_config: RunnableConfig = {"configurable": {"thread_id": plan.run_id}}

    def play(self) -> Generator[Event, None, RunRecord]:
        """Play the run, yielding its events; returns its final record, once all is closed."""
        from agent_runtime.models.cancel import RunCancelled

        plan = self.plan
        with contextlib.ExitStack() as stack:
            stack.callback(self._unlock)  # first in, last out: every write of this run is done
            if plan.owned:
                stack.callback(plan.device.close)
            try:
                callers, info = self._open(stack)
                yield from self._events(callers, info)
            except (KeyboardInterrupt, GeneratorExit, RunCancelled) as exc:
                # Ctrl-C sets the cancel event (run.signals), then lands here as a KeyboardInterrupt,
                # or as GeneratorExit when it hit the code consuming the events; cancel() as
                # RunCancelled. The run stops where it is, resumable from its last checkpoint.
                self.stopped_by = exc
                if not self._interrupted(exc) or isinstance(exc, GeneratorExit):
                    raise
                if isinstance(exc, KeyboardInterrupt):
                    record = cast(RunRecord, self.record)
                    raise RunInterrupted(record.run_id, plan.run_dir, record.steps) from None
            except Exception as exc:
                # What the run's own errors, and a runs folder that refuses a write (an OSError, a
                # checkpoint's sqlite3 error), end in: one named error, recorded when it can be.
                fault = exc if isinstance(exc, AgentRuntimeError) else storage_fault(exc, plan.run_dir)
                self.stopped_by = fault or exc
                if self.record is None or self.ctx is None:
                    self._discard()
                    if fault is None or fault is exc:
                        raise
                    raise fault from None
                self._record_failure(exc, fault)
                if fault is None:
                    raise
        return cast(RunRecord, self.record)

    # -- opening ---------------------------------------------------------------------------------
    def _open(self, stack: contextlib.ExitStack) -> tuple[dict[str, RoleCaller], DeviceInfo]:
        """Open what the run needs, each on ``stack``; write its first run.json."""
        from agent_runtime.graphs.build import build_graph, sqlite_checkpointer
        from agent_runtime.graphs.context import RunContext
        from agent_runtime.telemetry import open_telemetry

        plan, config = self.plan, self.config
        self.telemetry = open_telemetry(config, plan.run_id)
        stack.callback(self._end_telemetry)  # after the context: a Notetaker call in flight is in
        platform = getattr(plan.device, "platform", "mobile")
        callers = build_callers(
            config, self.hooks.chat_model, run_id=plan.run_id, record=self._record_call, kind=plan.kind
        )
        check_tree(plan.device, callers)
        if plan.lock is None:  # a new run: its directory is made and locked at once
            plan.lock = RunLock.acquire(plan.run_dir, create=True)
        self.writer = writer = stack.enter_context(
            TraceWriter(plan.run_dir, sensitive=config.memory.sensitive)
        )
        self.ctx = ctx = RunContext(
            run_id=plan.run_id,
            device=plan.device,
            writer=writer,
            config=config,
            callers=callers,
            platform=platform,
            device_word="computer" if platform == "desktop" else "phone",
            steps_written=plan.written,
            resumed=plan.previous is not None,
            observation={role: caller.model_config.observation for role, caller in callers.items()},
            on_commit=self._progress,
            telemetry=self.telemetry,
            attended=self.request.attended,
            pause=self.pause,
            interventions_written=set(plan.interventions),
        )
        stack.callback(ctx.close)
        info = plan.device.info()
        self.record = record = (plan.previous or RunRecord(run_id=plan.run_id, task=plan.task)).model_copy(
            update={
                "sessions": session_started(
                    plan.previous.sessions if plan.previous else [],
                    started_at=self.started,
                    from_step=len(plan.written),
                ),
                "status": "running",
                "error": None,
                "finished_at": None,
                "device": info.model_dump(mode="json"),
                "models": models_record(callers),
                "config": config.playing(plan.kind).public(),
                "timings": plan.base.timings,
                "tokens": plan.base.tokens,
                "verification": plan.check.pending() if plan.check else None,
            }
        )
        writer.write_run(with_totals(record, plan.base, ctx, self.started, steps=len(plan.written)))
        stack.enter_context(in_flight(plan.run_id, self._stopping))
        if self.telemetry is not None:
            self.telemetry.start_run(record, kind=plan.kind, device=info.spec, started=self.started)
        conn = sqlite3.connect(plan.run_dir / "checkpoint.sqlite", check_same_thread=False)
        stack.callback(conn.close)
        # WAL (set by SqliteSaver) + synchronous=NORMAL survives a killed process, which is
        # what resume needs, without an fsync per checkpoint (only power loss can lose one).
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        self.app = build_graph(sqlite_checkpointer(conn), kind=plan.kind)
        return callers, info

    # -- playing ---------------------------------------------------------------------------------
    def _events(self, callers: Mapping[str, RoleCaller], info: DeviceInfo) -> Generator[Event, None, None]:
        """From ``RunStarted`` to the final run.json."""
        plan, ctx = self.plan, cast("RunContext", self.ctx)
        yield RunStarted(
            run_id=plan.run_id,
            task=plan.task,
            run_dir=str(plan.run_dir),
            device=info.spec,
            resumed=plan.previous is not None,
        )
        yield from plan.notices
        yield from self.hooks.ready_models(info.spec, callers, plan.previous is None)
        graph_input = yield from self._graph_input(ctx.platform)
        limit = (graph_input or self.app.get_state(self.graph_config).values).get("max_steps", plan.max_steps)
        self.graph_config["recursion_limit"] = limit * 6 + 20
        command, answered = yield from self._with_reply(graph_input)
        waiting = yield from self._play(command, answered)
        final = self.app.get_state(self.graph_config).values
        ctx.close()
        if waiting is not None:
            self.record = self._finish(status="waiting", reason=waits(waiting))
            return
        status: RunStatus = final.get("status") or "error"
        self.record = self._finish(
            status=status,
            success=bool(final.get("success")) and status == "completed",
            answer=final.get("answer"),
            reason=final.get("reason", ""),
            verification=plan.verify(final.get("answer")),
        )
        if "rag" in callers:
            from agent_runtime.roles.rag import record_experience

            remembered = record_experience(plan.run_dir, self.config.memory)
            if remembered:
                yield Notice(message=remembered)

    def _graph_input(self, platform: str) -> Generator[Event, None, Any]:
        """The graph's input: a fresh state, or None to continue from the last checkpoint.

        A run killed while its action was being executed is not replayed blind — the action may
        or may not have reached the device — so it is moved back to before the Worker's choice,
        and the Worker decides again from a fresh look at the screen.
        """
        from agent_runtime.graphs.build import initial_state

        plan = self.plan

        def fresh() -> Any:
            state = initial_state(plan.task, platform=platform, max_steps=plan.max_steps, kind=plan.kind)
            # Who each name reaches as the run starts: the guard does not trust a contact changed later.
            book = plan.device.address_book()
            state["contacts_at_start"] = book.model_dump(mode="json") if book is not None else None
            return state

        if plan.previous is None:
            return fresh()
        snapshot = self.app.get_state(self.graph_config)
        if not snapshot.values:  # killed before the first checkpoint
            return fresh()
        if "execute" in snapshot.next:
            # Back to the node before the acting one: the Manager's plan, or (other kinds) ``advance``.
            from agent_runtime.specs import DEFAULT_GRAPH, graph_spec

            planned = graph_spec(snapshot.values.get("graph", DEFAULT_GRAPH)).planned
            before = "plan" if planned else "advance"
            self.app.update_state(self.graph_config, {"pending": None}, as_node=before)
            who = "the Worker" if planned else "the agent"
            yield Notice(message=f"resumed before the interrupted action; {who} decides again")
        else:
            yield Notice(message=f"resuming at {', '.join(snapshot.next) or 'the end'}")
        return None

    def _with_reply(self, graph_input: Any) -> Generator[Event, None, tuple[Any, str | None]]:
        """What the graph starts from, and the id of the request it answers: ``resume(run_id,
        reply=...)``'s reply goes to the pending request."""
        if self.reply is None:
            return graph_input, None
        pending = pending_request(self.app.get_state(self.graph_config))
        if pending is None:
            yield Notice(
                message="the run was not waiting for a reply; the reply is not used", level="warning"
            )
            return graph_input, None
        from langgraph.types import Command

        command: Any = Command(resume=as_reply(self.reply).check(pending).model_dump(mode="json"))
        cast("RunContext", self.ctx).replying = True
        return command, pending.id

    def _play(self, command: Any, answered: str | None) -> Generator[Event, None, InputRequest | None]:
        """Stream the graph from ``command`` to its end, answering each request it stops on (its
        ``human`` node's ``interrupt()``); returns the request no one answered, if it waits.

        ``answered``: the id of the request ``command`` replies to. When the graph stops again on
        the request just answered, the reply could not be taken (``InputRequest.refused`` says
        why): the run waits for another reply instead of asking the same source again at once."""
        from langgraph.types import Command

        ctx = cast("RunContext", self.ctx)
        while True:
            # The custom stream carries exactly what the nodes emitted: our events.
            for event in self.app.stream(
                command, self.graph_config, context=ctx, stream_mode="custom", durability="sync"
            ):
                yield cast(Event, event)
            waiting = pending_request(self.app.get_state(self.graph_config))
            if waiting is None:
                return None
            if waiting.id == answered and waiting.refused:
                return waiting
            asked = time.monotonic()
            answer = yield from self._person(waiting)
            ctx.started += time.monotonic() - asked  # a time budget does not count the person's time
            if answer is None:
                return waiting  # the run waits, resumable
            command = Command(resume=answer.model_dump(mode="json"))
            ctx.replying, answered = True, waiting.id

    def _person(self, request: InputRequest) -> Generator[Event, None, InputReply | None]:
        """The reply to ``request``, after announcing it: ``on_input``'s, else what
        ``Runtime.respond`` left for it (None: no one answered)."""
        yield InputRequested(request=request)
        on_input = self.request.on_input
        answer: object = on_input(request) if on_input is not None else self.hooks.left_reply(request.id)
        return as_reply(answer).check(request) if answer is not None else None

    # -- ending ----------------------------------------------------------------------------------
    def _finish(
        self,
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
        record, ctx = cast(RunRecord, self.record), cast("RunContext", self.ctx)
        if verification is None:
            pending = record.verification.by if record.verification is not None else None
            verification = Verification(
                by=pending,
                detail="not checked: the run stopped before its end"
                + (" (resume it to have it checked)" if pending else ""),
            )
        now = time.time()
        done = with_totals(
            record, self.plan.base, ctx, self.started, steps=len(ctx.steps_written)
        ).model_copy(
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

    def _interrupted(self, exc: BaseException) -> bool:
        """Record a run stopped in flight ``interrupted``; False when it is not to be (the
        exception goes on as it is)."""
        from agent_runtime.models.cancel import RunCancelled

        if not isinstance(exc, RunCancelled) and not self.cancel.is_set():
            # The consumer stopped early, or code raised KeyboardInterrupt (no signal): like
            # a killed process, the run stays "running" (resumable) — unless it was asking
            # a person (the consumer left at the question): then it waits for the answer.
            pending = self._asking()
            if pending is not None and self.record is not None and self.ctx is not None:
                self.ctx.close()
                self.record = self._finish(status="waiting", reason=waits(pending))
            return False
        self.cancel.set()  # whatever is still in flight (the Notetaker) stops too
        if self.record is None or self.ctx is None:
            self._discard()
            return False
        if self.record.status != "running":  # it had ended (remembering its experience): keep that
            return False
        self.ctx.close()
        self.record = self._finish(status="interrupted", reason="interrupted")
        return True

    def _record_failure(self, exc: Exception, fault: AgentRuntimeError | None) -> None:
        """Record an error that stopped a started run (``fault``: the named one, None for a bug)."""
        pending = self._asking()
        cast("RunContext", self.ctx).close()
        if fault is not None:
            error = fault.to_dict()
            if pending is not None:  # a refused reply, an unwritable answer: the request stays
                reason = f"{waits(pending)} (the reply could not be taken: {fault.message})"
                self.record = self._finish(status="waiting", reason=reason, error=error)
            else:
                self.record = self._finish(status="error", reason=fault.message, error=error)
            return
        error = {"type": type(exc).__name__, "message": str(exc), "hint": "this is a bug; please report it"}
        if pending is not None:  # a bug while a person was asked (an on_input that raised): it waits
            self.record = self._finish(status="waiting", reason=waits(pending), error=error)
        else:
            self.record = self._finish(status="error", reason=f"internal error: {exc}", error=error)

    def _asking(self) -> InputRequest | None:
        """The request the run stopped on, when it stopped while a person was asked (or their
        reply applied): whatever failed there, the request is still pending."""
        if self.app is None or self.record is None or self.ctx is None or self.record.status != "running":
            return None
        try:
            return pending_request(self.app.get_state(self.graph_config))
        except Exception:  # the checkpoint cannot be read: not known to be waiting
            return None

    def _discard(self) -> None:
        """A new run that failed before its run.json was written leaves no empty run directory."""
        if self.plan.previous is None and (self.writer is not None or self.plan.lock is not None):
            if self.writer is not None:
                self.writer.close()
            shutil.rmtree(self.plan.run_dir, ignore_errors=True)

    # -- callbacks -------------------------------------------------------------------------------
    def _record_call(self, record: CallRecord) -> None:
        """A role caller's call record, into the run context (built after the callers)."""
        cast("RunContext", self.ctx).record_call(record)

    def _progress(self) -> None:
        """A step committed: run.json's totals so far, and the device's state for a resume."""
        if self.record is not None and self.ctx is not None and self.writer is not None:
            ctx, plan = self.ctx, self.plan
            self.writer.write_run(
                with_totals(self.record, plan.base, ctx, self.started, steps=len(ctx.steps_written))
            )
            if ctx.steps_written:
                snapshot_device(
                    plan.device,
                    owned=plan.owned,
                    run_dir=plan.run_dir,
                    step=max(ctx.steps_written),
                    redactor=self.writer.redactor,
                )

    def _stopping(self) -> None:
        """The process exits with the run in flight (see :func:`~agent_runtime.run.signals.in_flight`)."""
        if self.record is not None and self.ctx is not None and self.record.status == "running":
            self._finish(status="interrupted", reason="interrupted")

    def _end_telemetry(self) -> None:
        if self.telemetry is not None:
            totals = self.ctx.totals()[0] if self.ctx is not None else None
            self.telemetry.end_run(self.record, totals, error=self.stopped_by)

    def _unlock(self) -> None:
        if self.plan.lock is not None:
            self.plan.lock.release()


def waits(request: InputRequest) -> str:
    """A waiting run's reason: what it waits for (and why the last reply was not taken)."""
    refused = f" (the last reply could not be taken: {request.refused})" if request.refused else ""
    return f"waiting for a person: {request.describe()}{refused}"


def pending_request(snapshot: Any) -> InputRequest | None:
    """The request the graph stopped on (its ``human`` node's ``interrupt()``), if any."""
    for pending in snapshot.interrupts:
        return InputRequest.model_validate(pending.value)
    return None


#: OSErrors that say a file could not be written: no space (or quota), too big, read-only, denied.
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}


def storage_fault(exc: Exception, run_dir: Path) -> TraceWriteError | None:
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
