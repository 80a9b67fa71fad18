"""Test doubles (only ever used from tests).

``ScriptedChatModel`` is a LangChain chat model whose replies are chosen per role by a script, so
graph tests can drive Algorithm 1 step by step without a model server. The role of a call is
read from the metadata the runtime's ``RoleCaller`` attaches (``agent_runtime_role``).

``ScriptedOpenAIServer`` serves the same kind of script over a real OpenAI-compatible HTTP
endpoint (stdlib ``http.server`` in a thread), for CLI tests that must talk HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr


@dataclass(frozen=True)
class ScriptCall:
    """What a scripted reply function sees."""

    role: str
    step: int
    prompt: str
    n_images: int
    attempt: int
    index: int  # how many calls this role had before this one


Reply = str | Callable[[ScriptCall], str]


def _prompt_of(messages: Sequence[BaseMessage]) -> tuple[str, int]:
    texts, images = [], 0
    for m in messages:
        content = m.content
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") == "image_url":
                images += 1
    return "\n".join(texts), images


class ScriptedChatModel(BaseChatModel):
    """Replies per role from ``script`` (a list is consumed in order; the last entry repeats).

    ``script`` maps a role to a reply string, a list of them, or a function of
    :class:`ScriptCall`. ``delay_s`` simulates model latency. ``calls`` keeps every call for
    assertions. Thread-safe (the Notetaker calls from a worker thread).
    """

    script: dict[str, Any]
    delay_s: float = 0.0
    model_name: str = "scripted"
    _calls: list[ScriptCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[ScriptCall]:
        with self._lock:
            return list(self._calls)

    def calls_for(self, role: str) -> list[ScriptCall]:
        return [c for c in self.calls if c.role == role]

    def _reply(self, call: ScriptCall) -> str:
        entry = self.script.get(call.role)
        if entry is None:
            raise KeyError(f"ScriptedChatModel has no script for role {call.role!r}")
        if isinstance(entry, list | tuple):
            if not entry:
                raise KeyError(f"empty script for role {call.role!r}")
            entry = entry[min(call.index, len(entry) - 1)]
        return entry(call) if callable(entry) else str(entry)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        meta = (run_manager.metadata if run_manager else None) or {}
        role = str(meta.get("agent_runtime_role", "unknown"))
        prompt, n_images = _prompt_of(messages)
        with self._lock:
            index = sum(1 for c in self._calls if c.role == role)
            call = ScriptCall(
                role=role,
                step=int(meta.get("agent_runtime_step", -1)),
                prompt=prompt,
                n_images=n_images,
                attempt=int(meta.get("attempt", 0)),
                index=index,
            )
            self._calls.append(call)
        if self.delay_s:
            time.sleep(self.delay_s)
        text = self._reply(call)
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": len(prompt) // 4,
                "output_tokens": len(text) // 4,
                "total_tokens": len(prompt) // 4 + len(text) // 4,
            },
            response_metadata={"model": self.model_name},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


# -- canned replies in the Mobile-Agent-v3 formats --------------------------------------------------
def manager_reply(plan: Sequence[str] | str, completed: Sequence[str] = (), thought: str = "ok") -> str:
    plan_text = plan if isinstance(plan, str) else "\n".join(f"{i}. {p}" for i, p in enumerate(plan, 1))
    done = "\n".join(f"- {c}" for c in completed) or "None"
    return (
        f"### Thought ###\n{thought}\n\n### Historical Operations ###\n{done}\n\n### Plan ###\n{plan_text}\n"
    )


def worker_reply(action: Mapping[str, Any], description: str = "do it", thought: str = "thinking") -> str:
    action_json = json.dumps(dict(action))
    return (
        f"### Thought ###\n{thought}\n\n### Action ###\n{action_json}\n\n### Description ###\n{description}\n"
    )


def reflector_reply(outcome: str, error: str = "None") -> str:
    return f"### Outcome ###\n{outcome}\n\n### Error Description ###\n{error}\n"


def notetaker_reply(notes: str) -> str:
    return f"### Important Notes ###\n{notes}\n"


def gui_owl_reply(action: Mapping[str, Any], conclusion: str = "done", function: str = "mobile_use") -> str:
    """A reply in GUI-Owl's native format (the ``single`` role)."""
    call = json.dumps({"name": function, "arguments": dict(action)})
    return (
        f"<thinking>\nthinking\n</thinking>\n<tool_call>\n{call}\n</tool_call>\n"
        f"<conclusion>{conclusion}</conclusion>"
    )


def high_reply(instruction: str, reasoning: str = "reasoning") -> str:
    """A reply of Hi-Agent's high level."""
    return f"<reasoning>{reasoning}</reasoning> <instruction>Instruction: {instruction}</instruction>"


# -- the same over HTTP -----------------------------------------------------------------------------
class ScriptedOpenAIServer:
    """An OpenAI-compatible ``/v1`` endpoint answering from a per-role script.

    The role of a request is recognised by ``classify(prompt_text) -> role`` (default: the role
    word in the prompt's first line, which every built-in template names). Use as a context
    manager; ``base_url`` is ready once entered.
    """

    def __init__(
        self,
        script: Mapping[str, Any],
        *,
        classify: Callable[[str], str] | None = None,
        model: str = "scripted-http",
    ) -> None:
        self.script = dict(script)
        self.model = model
        self.classify = classify or classify_prompt
        self.counts: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply_for(self, prompt: str) -> str:
        role = self.classify(prompt)
        with self._lock:
            index = self.counts.get(role, 0)
            self.counts[role] = index + 1
        entry = self.script.get(role, "")
        if isinstance(entry, list | tuple):
            entry = entry[min(index, len(entry) - 1)] if entry else ""
        call = ScriptCall(role=role, step=-1, prompt=prompt, n_images=0, attempt=0, index=index)
        return entry(call) if callable(entry) else str(entry)

    def __enter__(self) -> ScriptedOpenAIServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, body: dict[str, Any], code: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client was killed mid-request
                    pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send({"object": "list", "data": [{"id": owner.model, "object": "model"}]})
                else:
                    self._send({"error": "not found"}, 404)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                prompt = _request_prompt(body)
                text = owner.reply_for(prompt)
                self._send(
                    {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": owner.model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _request_prompt(body: Mapping[str, Any]) -> str:
    """The first user message's text (the role prompt; re-asks append later turns)."""
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def classify_prompt(prompt: str) -> str:
    """Which built-in role template produced ``prompt`` (by phrases only that template uses)."""
    if prompt.startswith("The user query:"):
        return "single"
    if "generate the next action instruction" in prompt:
        return "high"
    if "Carry out the instruction" in prompt:
        return "low"
    if "### Outcome ###" in prompt:
        return "reflector"
    if "### Important Notes ###\nThe updated notes" in prompt:
        return "notetaker"
    if "### Atomic Actions ###" in prompt:
        return "worker"
    if "high-level plan" in prompt or "### Historical Operations ###" in prompt:
        return "manager"
    return "rag"
