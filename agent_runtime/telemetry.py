"""OpenTelemetry export of a run: spans that follow the GenAI semantic conventions.

Off by default (``[tracing] otel = true`` turns it on; it needs the ``otel`` extra). One run
session is one trace::

    invoke_agent {graph kind}               the run (status, success, steps, token totals)
    ├── chat {model}                        calls before the first step (RAG, Manager init)
    └── agent_runtime.step N                one per committed step (verdict, critical path, action)
        ├── chat {model}                    one per role call, every attempt (re-asks included)
        └── execute_tool {action type}      the device action and the observation after it

**Explicit timestamps.** Spans are made from the run's own records — a
:class:`~agent_runtime.traces.CallRecord` knows when it started and how long it took, a
:class:`~agent_runtime.traces.StepRecord` its timings — and carry their parents explicitly, so
nothing depends on OpenTelemetry's thread-local context across LangGraph's worker threads and the
Notetaker's pool. A device span is placed right after the acting role's last call of its step
(the step record keeps durations, not start times).

**Redaction before export.** Every string attribute, span name and status description goes
through the run's :class:`~agent_runtime.tracing.Redactor` (``[memory] sensitive``), like the
trace files. Prompts and completions are exported only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (as ``gen_ai.input.messages`` /
``gen_ai.output.messages``, screenshots as references), redacted too.

**Where spans go.** The provider set with :func:`use_tracer_provider`, else the global one an
application configured (``opentelemetry.trace.set_tracer_provider``, ``opentelemetry-instrument``),
else one built once per process from the standard environment: an OTLP exporter
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_EXPORTER_OTLP_PROTOCOL``
— ``grpc`` by default, ``http/protobuf`` with ``opentelemetry-exporter-otlp-proto-http``
installed), ``OTEL_SERVICE_NAME`` (default ``agent-runtime``), ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*`` and ``OTEL_SDK_DISABLED``. Spans are batched and the rest
are delivered when the process exits. Nothing here imports OpenTelemetry while export is off.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from agent_runtime.errors import ConfigError, DependencyError
from agent_runtime.tracing import Redactor

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from agent_runtime.config import RuntimeConfig
    from agent_runtime.traces import CallRecord, InterventionRecord, RunRecord, StepRecord, Usage

#: The environment variable of the GenAI conventions that allows prompts and replies in spans.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
DEFAULT_SERVICE_NAME = "agent-runtime"
_SCOPE = "agent_runtime"

_lock = threading.Lock()
#: Set by :func:`use_tracer_provider` (an application's or a test's), else None.
_chosen: TracerProvider | None = None
#: Built from the environment on the first exported run, then reused by every run.
_from_env: TracerProvider | None = None


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Send the spans of later runs to ``provider`` (e.g. one with an ``InMemorySpanExporter``);
    None goes back to the global provider or the one built from the environment."""
    global _chosen
    with _lock:
        _chosen = provider


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _otlp_exporter() -> Any:
    """The OTLP span exporter ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` names; it reads the
    endpoint, headers, timeout and TLS settings from the environment itself."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise DependencyError(
                "opentelemetry-exporter-otlp-proto-grpc", "otel", "OTLP export over grpc"
            ) from None
        return OTLPSpanExporter()
    if protocol == "http/protobuf":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
                OTLPSpanExporter as HttpSpanExporter,
            )
        except ImportError:
            raise ConfigError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf needs the "
                "'opentelemetry-exporter-otlp-proto-http' package, which is not installed",
                hint="pip install opentelemetry-exporter-otlp-proto-http, "
                "or set OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
            ) from None
        return HttpSpanExporter()
    raise ConfigError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not a protocol agent-runtime exports with",
        hint="use grpc (the default) or http/protobuf",
    )


def provider_from_env() -> TracerProvider:
    """A tracer provider configured by the standard ``OTEL_*`` variables (see the module)."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = SdkTracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
    return provider


def _provider() -> TracerProvider:
    global _from_env
    from opentelemetry import trace

    with _lock:
        if _chosen is not None:
            return _chosen
        current = trace.get_tracer_provider()
        if not isinstance(current, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return current  # the application configured OpenTelemetry itself
        if _from_env is None:
            _from_env = provider_from_env()
        return _from_env


def open_telemetry(config: RuntimeConfig, run_id: str) -> RunTelemetry | None:
    """The run's span exporter when ``[tracing] otel`` is on, else None (nothing imported)."""
    if not config.tracing.otel:
        return None
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise DependencyError(
            "opentelemetry-sdk", "otel", "OpenTelemetry export ([tracing] otel = true)"
        ) from None
    from agent_runtime.version import __version__

    tracer = _provider().get_tracer(_SCOPE, __version__)
    capture = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"
    return RunTelemetry(tracer, run_id, Redactor(config.memory.sensitive), capture_content=capture)


class RunTelemetry:
    """The spans of one run session. Build it with :func:`open_telemetry`; the run context feeds it
    every call record (:meth:`call`, from any thread) and committed step (:meth:`step`), the runtime
    starts and ends the run span (:meth:`start_run`, :meth:`end_run`)."""

    def __init__(
        self, tracer: Tracer, run_id: str, redactor: Redactor, *, capture_content: bool = False
    ) -> None:
        self.tracer = tracer
        self.run_id = run_id
        self.redactor = redactor
        self.capture_content = capture_content
        self._run: Span | None = None
        #: step -> its span (ended ones too: a late Notetaker call still finds its parent).
        self._steps: dict[int, Span] = {}
        self._open: set[int] = set()
        #: step -> (role, end time) of each call, to place the device action after the actor's call.
        self._call_ends: dict[int, list[tuple[str, float]]] = {}
        self._lock = threading.Lock()

    # -- attributes -----------------------------------------------------------------------------
    def _text(self, value: str) -> str:
        return self.redactor.text(value)

    def _attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Attributes ready to set: None dropped, every string redacted."""
        return {k: self._text(v) if isinstance(v, str) else v for k, v in attrs.items() if v is not None}

    def _error(self, span: Span, description: str, error_type: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, self._text(description)))

    def _context(self, span: Span | None) -> Any:
        from opentelemetry.trace import set_span_in_context

        return set_span_in_context(span) if span is not None else None

    # -- the run --------------------------------------------------------------------------------
    def start_run(self, record: RunRecord, *, kind: str, device: str, started: float) -> None:
        """Open the run span (a root span: its trace is this run session)."""
        from opentelemetry.context import Context
        from opentelemetry.trace import SpanKind

        attrs = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": kind,
            "gen_ai.conversation.id": record.run_id,
            "agent_runtime.run_id": record.run_id,
            "agent_runtime.task": record.task,
            "agent_runtime.device": device,
        }
        self._run = self.tracer.start_span(
            self._text(f"invoke_agent {kind}"),
            context=Context(),
            kind=SpanKind.INTERNAL,
            attributes=self._attrs(attrs),
            start_time=_ns(started),
        )

    def end_run(
        self, record: RunRecord | None, usage: Usage | None, *, error: BaseException | None = None
    ) -> None:
        """Close every step span still open (a step the run stopped in) and the run span, with
        the run's final status; ``error`` is the exception that stopped it, if any."""
        now = time.time()
        with self._lock:
            still_open = [self._steps[s] for s in sorted(self._open)]
            self._open.clear()
        for span in still_open:
            span.set_attribute("agent_runtime.step.committed", False)
            span.end(end_time=_ns(now))
        run, self._run = self._run, None
        if run is None:
            return
        if record is not None:
            run.set_attributes(
                self._attrs(
                    {
                        # "running": the consumer stopped early; the run is resumable
                        "agent_runtime.status": record.status,
                        "agent_runtime.success": bool(record.success),
                        "agent_runtime.steps": record.steps,
                        "agent_runtime.answer": record.answer,
                    }
                )
            )
            if record.status == "error":
                failure = record.error or {}
                kind = failure.get("type") or (type(error).__name__ if error is not None else "error")
                self._error(run, str(failure.get("message") or error or "the run stopped on an error"), kind)
        if usage is not None:
            run.set_attributes(
                {
                    "gen_ai.usage.input_tokens": usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": usage.completion_tokens,
                }
            )
        run.end(end_time=_ns(now))

    # -- steps ----------------------------------------------------------------------------------
    def _step_span(self, step: int, start: float) -> Span:
        """The span of ``step``, opened at ``start`` when it has none yet. Holds ``_lock``."""
        span = self._steps.get(step)
        if span is None:
            span = self.tracer.start_span(
                f"agent_runtime.step {step}",
                context=self._context(self._run),
                attributes={"agent_runtime.step": step, "agent_runtime.run_id": self.run_id},
                start_time=_ns(start),
            )
            self._steps[step] = span
            self._open.add(step)
        return span

    def call(self, record: CallRecord) -> None:
        """One ``chat`` span per role call, child of its step's span (step -1: of the run span)."""
        from opentelemetry.trace import SpanKind

        end = record.started_at + record.latency_ms / 1000
        with self._lock:
            parent = self._run if record.step < 0 else self._step_span(record.step, record.started_at)
            self._call_ends.setdefault(record.step, []).append((record.role, end))
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": record.model or None,
            "gen_ai.response.model": record.model or None,
            "gen_ai.usage.input_tokens": record.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": record.usage.completion_tokens,
            "agent_runtime.run_id": record.run_id,
            "agent_runtime.step": record.step,
            "agent_runtime.role": record.role,
            "agent_runtime.attempt": record.attempt,
            "agent_runtime.parse_error": record.parse_error,
        }
        if self.capture_content:  # JSON text, redacted below like every string attribute
            reply = [{"role": "assistant", "parts": [{"type": "text", "content": record.completion}]}]
            attrs["gen_ai.input.messages"] = json.dumps(record.messages, ensure_ascii=False)
            attrs["gen_ai.output.messages"] = json.dumps(reply, ensure_ascii=False)
        span = self.tracer.start_span(
            self._text(f"chat {record.model}".strip()),
            context=self._context(parent),
            kind=SpanKind.CLIENT,
            attributes=self._attrs(attrs),
            start_time=_ns(record.started_at),
        )
        if record.parse_error is not None:
            self._error(span, record.parse_error, "ParseError")
        span.end(end_time=_ns(end))

    def step(self, record: StepRecord) -> None:
        """Close a committed step's span with what came of it, plus its device action's span."""
        t = record.timings_ms
        now = time.time()
        with self._lock:
            span = self._step_span(record.step, now - t.get("critical_path", 0.0) / 1000)
            self._open.discard(record.step)
            ends = self._call_ends.get(record.step, [])
        action = record.action_screen or record.action or {}
        verdict = record.verdict
        span.set_attributes(
            self._attrs(
                {
                    "agent_runtime.step.committed": True,
                    "agent_runtime.graph": record.graph,
                    "agent_runtime.actor": record.actor,
                    "agent_runtime.action.type": action.get("action"),
                    "agent_runtime.verdict.outcome": verdict.outcome if verdict is not None else None,
                    "agent_runtime.verdict.success": verdict.success if verdict is not None else None,
                    "agent_runtime.format_failure": record.format_failure,
                    "agent_runtime.confirmation": (record.confirmation or {}).get("decision"),
                    "agent_runtime.critical_path_ms": t.get("critical_path"),
                    "agent_runtime.critical_calls": int(t["critical_calls"])
                    if "critical_calls" in t
                    else None,
                }
            )
        )
        if record.action_result is not None:
            acted = [end for role, end in ends if role == record.actor]
            start = max(acted) if acted else now - t.get("critical_path", 0.0) / 1000
            self._device_span(record, span, start)
        span.end(end_time=_ns(now))

    def intervention(self, record: InterventionRecord) -> None:
        """What a person was asked and decided: an ``agent_runtime.person {kind}`` span under its
        step's span, from the request to the reply (the time the run waited for them)."""
        with self._lock:
            parent = self._step_span(record.step, record.asked_at)
        span = self.tracer.start_span(
            f"agent_runtime.person {record.kind}",
            context=self._context(parent),
            attributes=self._attrs(
                {
                    "agent_runtime.step": record.step,
                    "agent_runtime.request_id": record.request_id,
                    "agent_runtime.person.decision": record.decision,
                    "agent_runtime.person.by": record.by,
                    "agent_runtime.person.target": record.target or None,
                    "agent_runtime.person.reasons": list(record.reasons) or None,
                }
            ),
            start_time=_ns(record.asked_at),
        )
        span.end(end_time=_ns(record.answered_at))

    def _device_span(self, record: StepRecord, parent: Span, start: float) -> None:
        """The executed action and the observation after it, as a GenAI ``execute_tool`` span."""
        result = record.action_result or {}
        action = record.action_screen or record.action or {}
        kind = str(action.get("action", "action"))
        execute_ms = record.timings_ms.get("execute", 0.0)
        observe_ms = record.timings_ms.get("observe", 0.0)
        span = self.tracer.start_span(
            self._text(f"execute_tool {kind}"),
            context=self._context(parent),
            attributes=self._attrs(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": kind,
                    "agent_runtime.step": record.step,
                    "agent_runtime.action.ok": bool(result.get("ok")),
                    "agent_runtime.action.message": result.get("message") or None,
                    "agent_runtime.device.execute_ms": execute_ms,
                    "agent_runtime.device.observe_ms": observe_ms,
                }
            ),
            start_time=_ns(start),
        )
        if not result.get("ok"):
            self._error(span, str(result.get("error") or "the action failed"), "ActionFailed")
        span.end(end_time=_ns(start + (execute_ms + observe_ms) / 1000))
