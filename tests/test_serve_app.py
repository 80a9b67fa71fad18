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


# --- limits: client faults are 400/413 with a JSON error, never 500 ---------------------------------


def _png_claiming(width: int, height: int) -> bytes:
    """A few hundred bytes of PNG whose header claims ``width`` x ``height`` (a decompression bomb)."""
    import io
    import struct
    import zlib

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (1, 1)).save(buf, "PNG")
    png = bytearray(buf.getvalue())
    png[16:24] = struct.pack(">II", width, height)  # IHDR data starts at byte 16
    png[29:33] = struct.pack(">I", zlib.crc32(bytes(png[12:29])))  # IHDR's CRC covers type + data
    return bytes(png)


def _data_url(raw: bytes) -> str:
    import base64

    return "data:image/png;base64," + base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (_png_claiming(30_000, 30_000), "decompression bomb"),  # over PIL's own 2x MAX_IMAGE_PIXELS
        (_png_claiming(8_000, 5_000), "8000x5000 pixels"),  # under PIL's limit, over ours
        (b"GIF89a but not really", "not hold a readable image"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not hold a readable image"),
    ],
)
def test_images_that_are_bombs_or_no_images_are_value_errors(raw: bytes, needle: str) -> None:
    from agent_runtime.models.images import decode_data_url

    with pytest.raises(ValueError, match=needle):
        decode_data_url(_data_url(raw))


class ContextBackend(EchoBackend):
    """The echo double with a 100-token context (the engine's ``context_length``)."""

    context_length = 100


@pytest.fixture(scope="module")
def small_url() -> Iterator[tuple[str, ContextBackend]]:
    backend = ContextBackend()
    with ServerThread(create_app(backend, max_body_bytes=200_000)) as base:
        yield base, backend


def test_body_over_the_limit_is_413_json_announced_or_chunked(small_url: tuple[str, ContextBackend]) -> None:
    url, backend = small_url
    before = len(backend.seen)
    big = {"messages": [{"role": "user", "content": "x" * 300_000}]}
    resp = httpx.post(f"{url}/chat/completions", json=big)
    assert resp.status_code == 413
    err = resp.json()["error"]
    assert "over this server's limit of 200000 bytes" in err["message"] and err["code"] == 413

    def chunks() -> Iterator[bytes]:
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(30):
            yield b"y" * 10_000

    resp = httpx.post(
        f"{url}/chat/completions", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 413 and "more than 200000 bytes" in resp.json()["error"]["message"]
    assert len(backend.seen) == before  # the backend never saw either
    # The client reports it as a ModelError naming the status, not retried.
    with pytest.raises(ModelError, match="HTTP 413") as info:
        OpenAIChatModel(base_url=url, model="echo").invoke("z" * 300_000)
    assert info.value.context["attempts"] == 1


@pytest.mark.parametrize(
    ("extra", "param", "needle"),
    [
        ({"seed": 10**30}, "seed", "less than or equal"),
        ({"seed": "abc"}, "seed", "integer"),
        ({"max_tokens": "lots"}, "max_tokens", "integer"),
        ({"temperature": [1]}, "temperature", "number"),
        ({"stop": [1, 2]}, "stop", ""),
        ({"messages": [{"role": "user", "content": [{"type": "audio"}]}]}, "messages.0.content", ""),
        ({"messages": "hi"}, "messages", "list"),
    ],
)
def test_bad_types_and_huge_seed_are_400_naming_the_field(
    small_url: tuple[str, ContextBackend], extra: dict, param: str, needle: str
) -> None:
    url, _ = small_url
    body = {"messages": [{"role": "user", "content": "hi"}]} | extra
    resp = httpx.post(f"{url}/chat/completions", json=body)
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["param"].startswith(param) and needle in err["message"]


def test_not_json_and_deep_nesting_are_400_json(small_url: tuple[str, ContextBackend]) -> None:
    url, _ = small_url
    for raw in (b"{not json", b"[" * 50_000):
        resp = httpx.post(
            f"{url}/chat/completions", content=raw, headers={"Content-Type": "application/json"}
        )
        assert resp.status_code == 400 and resp.json()["error"]["code"] == 400


def test_prompt_with_far_more_text_than_the_context_is_refused_unread(
    small_url: tuple[str, ContextBackend],
) -> None:
    url, backend = small_url
    before = len(backend.seen)
    resp = httpx.post(f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "w" * 7000}]})
    assert (
        resp.status_code == 400 and "maximum context length is 100 tokens" in resp.json()["error"]["message"]
    )
    assert len(backend.seen) == before
    ok = httpx.post(f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "w" * 600}]})
    assert ok.status_code == 200  # within 64 characters per token: the backend counts tokens itself


def test_tiny_temperature_is_greedy_not_an_overflow(small_url: tuple[str, ContextBackend]) -> None:
    url, backend = small_url
    body = {"messages": [{"role": "user", "content": "hi"}], "temperature": 1e-300}
    assert httpx.post(f"{url}/chat/completions", json=body).status_code == 200
    assert backend.seen[-1].temperature == 0.0
