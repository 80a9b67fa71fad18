"""OpenTelemetry export: real SimPhone runs, spans caught by the SDK's in-memory exporter or sent
over OTLP/gRPC to a real in-process collector endpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent import futures

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent_runtime import telemetry
from agent_runtime.config import GraphConfig, MemoryConfig, RoleConfig, RuntimeConfig, TracingConfig
from agent_runtime.errors import ConfigError, DependencyError
from agent_runtime.traces import load_run
from tests.doubles import notetaker_reply, reflector_reply
from tests.test_graph import phone_with_wifi_off, run, wifi_manager, wifi_worker

SECRET = "SECRET-42"
TASK = f"Turn on Wi-Fi (booking code {SECRET})"


def otel_config(otel: bool = True) -> RuntimeConfig:
    return RuntimeConfig(
        roles={"rag": RoleConfig(enabled=False)},
        graph=GraphConfig(),
        tracing=TracingConfig(otel=otel),
        memory=MemoryConfig(sensitive=[SECRET]),
    )


@pytest.fixture
def exporter():
    """Spans of the runs in this test, synchronously, through the module's provider seam."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.use_tracer_provider(provider)
    yield spans
    telemetry.use_tracer_provider(None)
    provider.shutdown()


def wifi_script(phone, *, worker_first: str | None = None) -> dict:
    worker = wifi_worker(phone)
    return {
        "manager": wifi_manager(phone),
        # a first reply that does not parse: a re-ask, and a parse error quoting the secret
        "worker": [worker_first, *[worker] * 10] if worker_first else worker,
        "reflector": reflector_reply("A"),
        "notetaker": notetaker_reply(f"- the booking code is {SECRET}"),
    }


def strings(span: ReadableSpan) -> list[str]:
    """Everything a span exports as text: its name, status and every attribute value."""
    out = [span.name, span.status.description or ""]
    for value in (span.attributes or {}).values():
        out.extend(str(v) for v in (value if isinstance(value, tuple) else (value,)))
    return out


def by_operation(spans, operation: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == operation]


def test_run_exports_one_span_per_call_step_and_action_with_secrets_redacted(exporter, tmp_path, monkeypatch):
    monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, "true")  # prompts exported too: redacted
    phone = phone_with_wifi_off()
    script = wifi_script(phone, worker_first=f"no JSON here, only {SECRET}")
    _, events = run(phone, script, config=otel_config(), tmp_path=tmp_path, task=TASK)
    assert events[-1].status == "completed"
    loaded = load_run(events[-1].run_dir)
    spans = exporter.get_finished_spans()

    # One run span, the root of a single trace.
    (root,) = by_operation(spans, "invoke_agent")
    assert root.parent is None and root.name == "invoke_agent mobile_agent_v3"
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    assert [s for s in spans if s.parent is None] == [root]
    attrs = root.attributes
    assert attrs["agent_runtime.status"] == "completed" and attrs["agent_runtime.success"] is True
    assert attrs["agent_runtime.steps"] == 3 and attrs["gen_ai.agent.name"] == "mobile_agent_v3"
    assert attrs["agent_runtime.task"] == "Turn on Wi-Fi (booking code [REDACTED])"
    assert attrs["gen_ai.usage.input_tokens"] == loaded.run.tokens.prompt_tokens
    assert attrs["gen_ai.usage.output_tokens"] == loaded.run.tokens.completion_tokens

    # A step span per committed step, children of the run span.
    steps = {s.attributes["agent_runtime.step"]: s for s in spans if s.name.startswith("agent_runtime.step ")}
    assert sorted(steps) == [r.step for r in loaded.steps] == [0, 1, 2]
    for record in loaded.steps:
        span = steps[record.step]
        assert span.parent.span_id == root.context.span_id
        assert span.attributes["agent_runtime.verdict.outcome"] == "A"
        assert span.attributes["agent_runtime.critical_path_ms"] == record.timings_ms["critical_path"]
        assert span.attributes["agent_runtime.action.type"] == "click"

    # A chat span per call record (the re-ask included), tokens as recorded, under its step.
    chats = by_operation(spans, "chat")
    assert len(chats) == len(loaded.calls)

    def key(step, role, attempt, tokens_in, tokens_out):
        return (step, role, attempt, tokens_in, tokens_out)

    assert sorted(
        key(
            c.attributes["agent_runtime.step"],
            c.attributes["agent_runtime.role"],
            c.attributes["agent_runtime.attempt"],
            c.attributes["gen_ai.usage.input_tokens"],
            c.attributes["gen_ai.usage.output_tokens"],
        )
        for c in chats
    ) == sorted(
        key(c.step, c.role, c.attempt, c.usage.prompt_tokens, c.usage.completion_tokens) for c in loaded.calls
    )
    for chat in chats:
        step = chat.attributes["agent_runtime.step"]
        parent = root if step < 0 else steps[step]
        assert chat.parent.span_id == parent.context.span_id
        assert chat.name == "chat scripted" and chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.end_time >= chat.start_time
    (reask,) = [c for c in chats if c.status.status_code is StatusCode.ERROR]
    assert (
        reask.attributes["agent_runtime.role"] == "worker" and reask.attributes["agent_runtime.attempt"] == 0
    )
    assert "[REDACTED]" in reask.attributes["agent_runtime.parse_error"]
    assert "[REDACTED]" in reask.attributes["gen_ai.output.messages"]

    # A device action span per executed step, under the step's span.
    actions = by_operation(spans, "execute_tool")
    assert sorted(a.attributes["agent_runtime.step"] for a in actions) == [0, 1, 2]
    for action in actions:
        assert action.parent.span_id == steps[action.attributes["agent_runtime.step"]].context.span_id
        assert action.name == "execute_tool click" and action.attributes["agent_runtime.action.ok"] is True

    # The secret reached the exporter (task, prompts, a parse error, notes) and never left it.
    assert len(spans) == 1 + 3 + len(loaded.calls) + 3
    assert any("[REDACTED]" in s for span in spans for s in strings(span))
    assert not [s for span in spans for s in strings(span) if SECRET in s]


def test_prompts_are_not_exported_unless_asked(exporter, tmp_path, monkeypatch):
    monkeypatch.delenv(telemetry.CAPTURE_CONTENT_ENV, raising=False)
    phone = phone_with_wifi_off()
    run(phone, wifi_script(phone), config=otel_config(), tmp_path=tmp_path, task=TASK)
    chats = by_operation(exporter.get_finished_spans(), "chat")
    assert chats and not [c for c in chats if "gen_ai.input.messages" in c.attributes]


def test_off_by_default_exports_nothing(exporter, tmp_path):
    assert RuntimeConfig().tracing.otel is False
    phone = phone_with_wifi_off()
    _, events = run(phone, wifi_script(phone), config=otel_config(otel=False), tmp_path=tmp_path)
    assert events[-1].status == "completed"
    assert exporter.get_finished_spans() == ()


def test_a_run_that_stops_on_an_error_ends_its_spans_with_the_error(exporter, tmp_path):
    phone = phone_with_wifi_off()
    script = wifi_script(phone)
    del script["reflector"]  # the Reflector's model fails in step 0
    _, events = run(phone, script, config=otel_config(), tmp_path=tmp_path, task=TASK)
    assert events[-1].status == "error"
    spans = exporter.get_finished_spans()
    (root,) = by_operation(spans, "invoke_agent")
    assert root.attributes["agent_runtime.status"] == "error"
    assert root.status.status_code is StatusCode.ERROR and root.status.description
    (step,) = [s for s in spans if s.name == "agent_runtime.step 0"]
    assert step.attributes["agent_runtime.step.committed"] is False  # the step the run stopped in
    assert step.parent.span_id == root.context.span_id


def test_without_the_extra_otel_off_runs_and_otel_on_names_the_extra(tmp_path):
    """With OpenTelemetry unimportable, a run with otel off never touches it, and otel on stops
    with a DependencyError that names the extra. (Only a blocked import can show the first part:
    langsmith, which every run loads, imports OpenTelemetry itself whenever it is installed.)"""
    code = f"""
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
sys.path.insert(0, ".")
from agent_runtime.errors import DependencyError
from agent_runtime.config import RoleConfig, RuntimeConfig
from agent_runtime.telemetry import open_telemetry
from tests.doubles import notetaker_reply, reflector_reply
from tests.test_graph import phone_with_wifi_off, run, wifi_manager, wifi_worker

def config(otel):
    return RuntimeConfig(roles={{"rag": RoleConfig(enabled=False)}}, tracing={{"otel": otel}})

phone = phone_with_wifi_off()
script = {{
    "manager": wifi_manager(phone),
    "worker": wifi_worker(phone),
    "reflector": reflector_reply("A"),
    "notetaker": notetaker_reply("- none"),
}}
assert open_telemetry(config(False), "r") is None
_, events = run(phone, script, config=config(False), tmp_path={str(tmp_path)!r})
print(events[-1].status)
try:
    run(phone, script, config=config(True), tmp_path={str(tmp_path)!r})
except DependencyError as exc:
    print(exc.message, "|", exc.hint)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    status, error = out.stdout.strip().splitlines()[-2:]
    assert status == "completed"
    assert "opentelemetry-sdk" in error and "pip install 'agent-runtime[otel]'" in error


def test_spans_reach_an_otlp_grpc_endpoint_configured_by_the_environment(tmp_path, monkeypatch):
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list = []

    class Collector(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: N802 (the OTLP service's name)
            received.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Collector(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "phone-agents")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", raising=False)
    provider = telemetry.provider_from_env()
    telemetry.use_tracer_provider(provider)
    try:
        phone = phone_with_wifi_off()
        _, events = run(phone, wifi_script(phone), config=otel_config(), tmp_path=tmp_path, task=TASK)
        assert provider.force_flush(10_000)
    finally:
        telemetry.use_tracer_provider(None)
        provider.shutdown()
        server.stop(None)
    calls = load_run(events[-1].run_dir).calls
    resources = [rs for request in received for rs in request.resource_spans]
    names = {
        a.value.string_value for rs in resources for a in rs.resource.attributes if a.key == "service.name"
    }
    assert names == {"phone-agents"}
    spans = [s for rs in resources for ss in rs.scope_spans for s in ss.spans]
    assert len([s for s in spans if s.name.startswith("chat ")]) == len(calls)
    assert SECRET not in json.dumps([str(s) for s in spans])


@pytest.mark.parametrize("protocol", ["http/json", "carrier-pigeon"])
def test_an_unknown_otlp_protocol_is_a_config_error(monkeypatch, protocol):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL") as info:
        telemetry.provider_from_env()
    assert "grpc" in (info.value.hint or "")


def test_a_missing_otlp_exporter_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", raising=False)
    with pytest.raises(DependencyError, match="opentelemetry-exporter-otlp-proto-grpc") as info:
        telemetry.provider_from_env()
    assert info.value.hint == "pip install 'agent-runtime[otel]'"


def test_an_application_tracer_provider_receives_the_spans(tmp_path):
    """A process that configured OpenTelemetry itself (its global provider) gets the run's spans
    there. In a subprocess: the global provider can be set only once per process."""
    code = f"""
import sys
sys.path.insert(0, ".")
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agent_runtime.config import RoleConfig, RuntimeConfig
from tests.doubles import notetaker_reply, reflector_reply
from tests.test_graph import phone_with_wifi_off, run, wifi_manager, wifi_worker

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
phone = phone_with_wifi_off()
script = {{
    "manager": wifi_manager(phone),
    "worker": wifi_worker(phone),
    "reflector": reflector_reply("A"),
    "notetaker": notetaker_reply("- none"),
}}
config = RuntimeConfig(roles={{"rag": RoleConfig(enabled=False)}}, tracing={{"otel": True}})
run(phone, script, config=config, tmp_path={str(tmp_path)!r})
print(sorted({{s.name.split()[0] for s in spans.get_finished_spans()}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (
        out.stdout.strip().splitlines()[-1]
        == "['agent_runtime.step', 'chat', 'execute_tool', 'invoke_agent']"
    )


def test_a_persons_decision_is_a_span_under_its_step(exporter, tmp_path):
    """An off-task action denied in an unattended run: an ``agent_runtime.person confirm`` span
    under the step's span, with the decision and who made it."""
    from agent_runtime.runtime import Runtime
    from agent_runtime.simphone import SimPhone
    from tests.doubles import ScriptedChatModel
    from tests.test_human import off_task_script

    model = ScriptedChatModel(script=off_task_script())
    roles = ("manager", "worker", "reflector", "notetaker")
    runtime = Runtime(otel_config(), models=dict.fromkeys(roles, model), runs_dir=tmp_path)
    phone = SimPhone(seed=1)
    runtime.run("Turn off the 10:05 PM alarm", device=phone)
    phone.close()
    spans = exporter.get_finished_spans()
    person = [s for s in spans if s.name == "agent_runtime.person confirm"]
    assert person, [s.name for s in spans]
    attrs = person[0].attributes
    assert (
        attrs["agent_runtime.person.decision"] == "reject" and attrs["agent_runtime.person.by"] == "default"
    )
    assert any("Shop" in r for r in attrs["agent_runtime.person.reasons"])
    parent = next(s for s in spans if s.context.span_id == person[0].parent.span_id)
    assert parent.name == f"agent_runtime.step {attrs['agent_runtime.step']}"
    assert parent.attributes["agent_runtime.confirmation"] == "reject"
