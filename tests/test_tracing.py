"""Sinks of a run's data: third-party tracing is opt-in, and every sink gets redacted data.

A real local HTTP server poses as the LangSmith API (``LANGSMITH_ENDPOINT``); the environment
switches LangChain's tracing on (``LANGSMITH_TRACING=true``, a dummy key), as a user's shell
might. With the default configuration the server must hear nothing; with ``[tracing]
langsmith = true`` it hears the run, with the sensitive value and the screenshots taken out.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agent_runtime.config import MemoryConfig, RoleConfig, RuntimeConfig, TracingConfig
from agent_runtime.events import RoleOutputEvent, RunFinished, RunStarted
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.tracing import IMAGE_PLACEHOLDER, Redactor, langsmith_anonymizer, private_run
from tests.doubles import ScriptedChatModel, notetaker_reply, worker_reply

SECRET = "hunter2"
PNG_BASE64 = "iVBORw0KGgo"  # how every base64 PNG starts
JPEG_BASE64 = ";base64,/9j/"  # a base64 JPEG data URL (screenshots are sent as JPEG by default)
ROLES = ("manager", "worker", "reflector", "notetaker")


class FakeLangSmith:
    """Records every request (method, path, decoded body) and answers like an accepting API."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding not in ("", "identity"):  # we could not look inside: say so
                    body = f"<undecodable {encoding} body>".encode()
                with owner._lock:
                    owner.requests.append((self.command, self.path, body.decode("utf-8", "replace")))
                reply = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = do_PATCH = do_PUT = _answer  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def bodies(self) -> str:
        with self._lock:
            return "\n".join(body for _, _, body in self.requests)

    def run_posts(self) -> list[tuple[str, str, str]]:
        with self._lock:
            return [r for r in self.requests if r[0] in ("POST", "PATCH") and "/runs" in r[1]]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _clear_langsmith_caches() -> None:
    """LangSmith caches what it read from the environment and its default client: start clean."""
    import langsmith.run_trees as run_trees
    import langsmith.utils as ls_utils

    ls_utils.get_env_var.cache_clear()
    ls_utils.get_tracer_project.cache_clear()
    run_trees._CLIENT = None


@pytest.fixture
def langsmith(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLangSmith]:
    server = FakeLangSmith()
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        monkeypatch.setenv(name, "true")
    for name in ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT"):
        monkeypatch.setenv(name, server.url)
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.setenv(name, "lsv2_dummy_key")
    monkeypatch.setenv("LANGSMITH_PROJECT", "agent-runtime-test")
    _clear_langsmith_caches()
    try:
        yield server
    finally:
        from langchain_core.tracers.langchain import wait_for_all_tracers

        wait_for_all_tracers()
        monkeypatch.undo()
        _clear_langsmith_caches()
        server.close()


def _script() -> dict[str, Any]:
    return {
        "manager": "### Plan ###\n1. Type the password hunter2",
        "worker": [
            worker_reply({"action": "type", "text": SECRET}, f"type {SECRET}"),
            worker_reply({"action": "answer", "text": f"typed {SECRET}"}),
        ],
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply(f"- password is {SECRET}"),
    }


def _run(tmp_path, tracing: TracingConfig) -> tuple[list[Any], ScriptedChatModel]:
    config = RuntimeConfig(
        roles={"rag": RoleConfig(enabled=False)},
        memory=MemoryConfig(sensitive=[SECRET]),
        tracing=tracing,
    )
    model = ScriptedChatModel(script=_script())
    runtime = Runtime(config, models=dict.fromkeys(ROLES, model), runs_dir=tmp_path)
    events = list(runtime.stream(f"Log in with password {SECRET}", device=SimPhone(seed=0)))
    assert isinstance(events[-1], RunFinished) and events[-1].status == "completed", events[-1]
    return events, model


def test_the_fake_endpoint_hears_plain_langchain_tracing(langsmith):
    """The control: outside a run, the environment alone sends a model call to the endpoint."""
    from langchain_core.tracers.langchain import wait_for_all_tracers

    ScriptedChatModel(script={"unknown": "hello"}).invoke("a prompt that mentions the Manager")
    wait_for_all_tracers()
    assert langsmith.run_posts(), langsmith.requests
    assert "a prompt that mentions the Manager" in langsmith.bodies()


def test_a_run_sends_nothing_to_langsmith_by_default(tmp_path, langsmith):
    events, model = _run(tmp_path, TracingConfig())
    assert len(model.calls_for("notetaker")) >= 1  # the thread-pool call ran too
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
    assert langsmith.requests == []
    # After the run, the process's own setting is untouched: LangChain traces again.
    from langsmith.utils import tracing_is_enabled

    assert tracing_is_enabled() is True


def test_langsmith_when_switched_on_gets_redacted_runs_without_screenshots(tmp_path, langsmith):
    events, model = _run(tmp_path, TracingConfig(langsmith=True))
    assert SECRET in model.calls_for("worker")[0].prompt  # the model itself saw it
    posts = langsmith.run_posts()
    assert posts, langsmith.requests
    bodies = langsmith.bodies()
    assert "<undecodable" not in bodies
    assert "Type the password [REDACTED]" in bodies  # the manager's reply, redacted
    assert "role:notetaker" in bodies  # the thread-pool call went through the same client
    assert SECRET not in bodies
    assert PNG_BASE64 not in bodies and JPEG_BASE64 not in bodies and IMAGE_PLACEHOLDER in bodies


def test_langsmith_with_screenshots_switched_on_gets_them(tmp_path, langsmith):
    _run(tmp_path, TracingConfig(langsmith=True, screenshots=True))
    bodies = langsmith.bodies()
    assert JPEG_BASE64 in bodies and SECRET not in bodies


def test_events_and_result_are_redacted(tmp_path):
    config = RuntimeConfig(roles={"rag": RoleConfig(enabled=False)}, memory=MemoryConfig(sensitive=[SECRET]))
    model = ScriptedChatModel(script=_script())
    runtime = Runtime(config, models=dict.fromkeys(ROLES, model), runs_dir=tmp_path)
    events = list(runtime.stream(f"Log in with password {SECRET}", device=SimPhone(seed=0)))
    text = json.dumps([e.to_dict() for e in events])
    assert SECRET not in text and "[REDACTED]" in text
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.task == "Log in with password [REDACTED]"
    assert any(isinstance(e, RoleOutputEvent) and e.role == "worker" for e in events)
    assert events[-1].answer == "typed [REDACTED]"
    result = Runtime(
        config, models=dict.fromkeys(ROLES, ScriptedChatModel(script=_script())), runs_dir=tmp_path
    ).run(f"Log in with password {SECRET}", device=SimPhone(seed=0))
    assert result.answer == "typed [REDACTED]"


def test_private_run_closes_an_abandoned_run_and_passes_errors():
    closed: list[bool] = []

    def run():
        try:
            yield RunStarted(run_id="r", task=f"pw {SECRET}", run_dir="d", device="x")
            yield RunStarted(run_id="r", task="second", run_dir="d", device="x")
        finally:
            closed.append(True)
        return "done"

    config = RuntimeConfig(memory=MemoryConfig(sensitive=[SECRET]))
    guarded = private_run(run(), config)
    assert next(guarded).task == "pw [REDACTED]"
    guarded.close()
    assert closed == [True]

    def failing():
        raise ValueError("boom")
        yield  # pragma: no cover

    with pytest.raises(ValueError, match="boom"):
        list(private_run(failing(), config))


def test_anonymizer_and_redactor():
    scrub = langsmith_anonymizer([SECRET, ""])
    data = {"inputs": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAA"}}]}
    assert scrub(data) == {"inputs": [{"type": "image_url", "image_url": {"url": IMAGE_PLACEHOLDER}}]}
    assert scrub({"error": f"bad {SECRET}", "n": 3}) == {"error": "bad [REDACTED]", "n": 3}
    assert langsmith_anonymizer([], screenshots=True)(data) == data
    assert not Redactor([""]) and Redactor(["ab", "abc"]).text("abcd ab") == "[REDACTED]d [REDACTED]"
