"""The server app over real HTTP with a test-double backend (no torch): routing and error shapes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("fastapi", reason="needs the 'serve' extra")

from agent_runtime.errors import ModelError  # noqa: E402
from agent_runtime.models import OpenAIChatModel
from agent_runtime.models.protocol import (
    AssistantMessage,
    ChatCompletionRequest,
    ChatCompletionResponse,
    Choice,
    ModelCard,
    ModelList,
    UnknownModel,
    Usage,
)
from agent_runtime.models.server import ServerThread, create_app


class EchoBackend:
    """Test double: echoes the last text part; ``crash`` makes every chat raise."""

    served_name = "echo"

    def __init__(self) -> None:
        self.crash = False
        self.seen: list[ChatCompletionRequest] = []

    def models(self) -> ModelList:
        return ModelList(data=[ModelCard(id=self.served_name)])

    def chat(self, req: ChatCompletionRequest) -> ChatCompletionResponse:
        self.seen.append(req)
        if self.crash:
            raise RuntimeError("backend exploded")
        content = req.messages[-1].content
        text = content if isinstance(content, str) else content[-1].text  # type: ignore[union-attr]
        choices = [
            Choice(index=i, message=AssistantMessage(content=f"{text}#{i}"), finish_reason="stop")
            for i in range(req.n)
        ]
        return ChatCompletionResponse(
            model=self.served_name,
            choices=choices,
            usage=Usage(prompt_tokens=3, completion_tokens=req.n, total_tokens=3 + req.n),
        )

    def load_adapter(self, name: str, path: str) -> None:
        raise UnknownModel(f"no adapters here ({name})")

    def unload_adapter(self, name: str) -> None:
        raise UnknownModel(f"The lora adapter '{name}' cannot be found.")


@pytest.fixture(scope="module")
def backend() -> EchoBackend:
    return EchoBackend()


@pytest.fixture(scope="module")
def url(backend: EchoBackend) -> Iterator[str]:
    with ServerThread(create_app(backend)) as base:
        yield base


def test_chat_round_trip_through_the_client(url: str, backend: EchoBackend) -> None:
    backend.crash = False
    outs = OpenAIChatModel(base_url=url).sample("ping", 2)
    assert [o.content for o in outs] == ["ping#0", "ping#1"]
    assert backend.seen[-1].model == "echo" and backend.seen[-1].n == 2


def test_backend_crash_is_a_500_json_and_a_model_error(url: str, backend: EchoBackend) -> None:
    backend.crash = True
    try:
        resp = httpx.post(f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
        assert resp.status_code == 500
        assert resp.json()["error"]["message"] == "RuntimeError: backend exploded"
        with pytest.raises(ModelError, match="backend exploded") as info:
            OpenAIChatModel(base_url=url, model="echo", retries=1, backoff_s=0.01).invoke("x")
        assert info.value.context["attempts"] == 2 and info.value.context["status"] == 500
    finally:
        backend.crash = False


def test_validation_errors_name_the_field(url: str) -> None:
    resp = httpx.post(f"{url}/chat/completions", json={"messages": [{"role": "robot", "content": "x"}]})
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert err["param"] == "messages.0.role" and err["type"] == "invalid_request_error"
    resp = httpx.post(
        f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "n": 99}
    )
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "n"


def test_adapter_errors_and_health(url: str) -> None:
    resp = httpx.post(f"{url}/unload_lora_adapter", json={"lora_name": "ghost"})
    assert resp.status_code == 404 and resp.json()["error"]["type"] == "model_not_found"
    resp = httpx.post(f"{url}/load_lora_adapter", json={"lora_name": "a"})
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "lora_path"
    assert httpx.get(url.removesuffix("/v1") + "/health").json() == {"status": "ok", "model": "echo"}
