"""OpenAIChatModel over real HTTP against a scripted test-double server: retries, errors, shape."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError, ModelError
from agent_runtime.models import OpenAIChatModel, TransformersChatModel, make_chat_model


def completion(texts: list[str], prompt_tokens: int = 7, token_ids: bool = False) -> dict[str, Any]:
    choices = []
    for i, text in enumerate(texts):
        choice: dict[str, Any] = {
            "index": i,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if token_ids:
            choice["token_ids"] = list(range(i + 2))
        choices.append(choice)
    completion_tokens = sum(len(c.get("token_ids", [0, 0])) for c in choices)
    return {
        "id": "chatcmpl-double",
        "object": "chat.completion",
        "created": 0,
        "model": "double-model",
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class FlakyOpenAIServer:
    """Test double: an OpenAI-compatible endpoint that answers from a script of (status, body).

    The last script entry repeats. ``delay_s`` holds every chat reply back (for timeouts).
    """

    def __init__(
        self, script: list[tuple[int, Any]], delay_s: float = 0.0, headers: dict[str, str] | None = None
    ) -> None:
        self.script = list(script)
        self.delay_s = delay_s
        self.headers = headers or {}
        self.requests: list[tuple[str, str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in outer.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                outer.requests.append(("GET", self.path, self.headers.get("Authorization")))
                self._reply(200, {"object": "list", "data": [{"id": "double-model", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(("POST", self.path, body))
                index = min(len([r for r in outer.requests if r[0] == "POST"]), len(outer.script)) - 1
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                self._reply(*outer.script[index])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FlakyOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def posts(self) -> list[Any]:
        return [r[2] for r in self.requests if r[0] == "POST"]


@pytest.fixture
def free_url() -> Iterator[str]:
    """A URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1"


def _model(url: str, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("backoff_s", 0.01)
    return OpenAIChatModel(base_url=url, model="double-model", **kw)


PROMPT = [
    SystemMessage("be brief"),
    HumanMessage(
        content=[
            {"type": "text", "text": "### Thought ###"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    ),
]


def test_two_503_then_success_takes_three_attempts() -> None:
    with FlakyOpenAIServer(
        [(503, {"error": {"message": "busy"}}), (503, "{}"), (200, completion(["ok"]))]
    ) as srv:
        reply = _model(srv.url, retries=3).invoke(PROMPT)
    assert reply.content == "ok"
    assert reply.response_metadata["attempts"] == 3
    assert len(srv.posts) == 3
    assert reply.usage_metadata == {"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}
    meta = reply.response_metadata
    assert meta["model_name"] == "double-model" and meta["finish_reason"] == "stop" and meta["latency_ms"] > 0


def test_request_body_carries_text_images_and_options() -> None:
    with FlakyOpenAIServer([(200, completion(["a"]))]) as srv:
        _model(
            srv.url,
            temperature=0.3,
            max_tokens=64,
            seed=5,
            logprobs=True,
            top_logprobs=2,
            return_token_ids=True,
            api_key="sekrit",
        ).invoke(PROMPT, stop=["###"])
    body = srv.posts[0]
    assert body["model"] == "double-model"
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert {
        k: body[k]
        for k in ("temperature", "max_tokens", "seed", "logprobs", "top_logprobs", "return_token_ids", "stop")
    } == {
        "temperature": 0.3,
        "max_tokens": 64,
        "seed": 5,
        "logprobs": True,
        "top_logprobs": 2,
        "return_token_ids": True,
        "stop": ["###"],
    }
    assert "n" not in body


def test_always_500_gives_model_error_after_retries() -> None:
    with FlakyOpenAIServer([(500, {"error": {"message": "CUDA out of memory"}})]) as srv:
        with pytest.raises(ModelError) as info:
            _model(srv.url, retries=2).invoke("hi")
    assert len(srv.posts) == 3
    err = info.value
    assert err.context["status"] == 500 and err.context["attempts"] == 3
    assert "CUDA out of memory" in err.message and srv.url in err.message
    assert "agent-runtime doctor" in (err.hint or "")


def test_nothing_listening_fails_fast_with_a_hint(free_url: str) -> None:
    model = _model(free_url, retries=3)
    start = time.perf_counter()
    with pytest.raises(ModelError) as info:
        model.invoke("hi")
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"a dead server took {elapsed:.2f} s to report"
    assert info.value.context["attempts"] == 4
    assert "ConnectError" in info.value.message and free_url in info.value.message
    assert "is the server running" in (info.value.hint or "")


def test_backoff_grows_and_honours_retry_after() -> None:
    with FlakyOpenAIServer(
        [(429, {"error": {"message": "slow down"}}), (200, completion(["ok"]))],
        headers={"Retry-After": "0.3"},
    ) as srv:
        start = time.perf_counter()
        reply = _model(srv.url).invoke("hi")
    assert reply.response_metadata["attempts"] == 2
    assert time.perf_counter() - start >= 0.3
    model = _model("http://x/v1", backoff_s=0.5, max_backoff_s=3.0)
    from agent_runtime.models.openai_chat import _Retry

    assert [model._delay(a, _Retry("x")) for a in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_client_errors_are_not_retried() -> None:
    with FlakyOpenAIServer([(400, {"error": {"message": "max_tokens is too large"}})]) as srv:
        with pytest.raises(ModelError, match="HTTP 400: max_tokens is too large") as info:
            _model(srv.url).invoke("hi")
    assert len(srv.posts) == 1 and info.value.context["status"] == 400


def test_read_timeout_is_bounded_and_not_retried() -> None:
    with FlakyOpenAIServer([(200, completion(["late"]))], delay_s=1.0) as srv:
        start = time.perf_counter()
        with pytest.raises(ModelError, match="no complete reply within 0.2 s"):
            _model(srv.url, timeout_s=0.2, retries=3).invoke("hi")
        assert time.perf_counter() - start < 1.0
        assert len(srv.posts) == 1


def test_non_json_and_wrong_shape_replies() -> None:
    with FlakyOpenAIServer([(200, "<html>proxy</html>")]) as srv:
        with pytest.raises(ModelError, match="not JSON"):
            _model(srv.url).invoke("hi")
    with FlakyOpenAIServer([(200, {"object": "list"})]) as srv:
        with pytest.raises(ModelError, match="not an OpenAI chat completion"):
            _model(srv.url).invoke("hi")


def test_auto_model_is_resolved_once_and_sent() -> None:
    with FlakyOpenAIServer([(200, completion(["ok"]))]) as srv:
        model = OpenAIChatModel(base_url=srv.url + "/", api_key="sekrit")
        model.invoke("one")
        model.invoke("two")
    gets = [r for r in srv.requests if r[0] == "GET"]
    assert gets == [("GET", "/v1/models", "Bearer sekrit")]
    assert [b["model"] for b in srv.posts] == ["double-model", "double-model"]
    assert "sekrit" not in repr(model)


def test_n_samples_split_usage_so_that_sums_are_right() -> None:
    with FlakyOpenAIServer([(200, completion(["a", "b", "c"], token_ids=True))]) as srv:
        outs = _model(srv.url, return_token_ids=True).sample("hi", 3)
    assert srv.posts[0]["n"] == 3
    assert [o.content for o in outs] == ["a", "b", "c"]
    assert [o.response_metadata["choice_index"] for o in outs] == [0, 1, 2]
    assert [o.response_metadata["token_ids"] for o in outs] == [[0, 1], [0, 1, 2], [0, 1, 2, 3]]
    assert sum(o.usage_metadata["input_tokens"] for o in outs) == 7
    assert sum(o.usage_metadata["output_tokens"] for o in outs) == 9
    assert all(o.response_metadata["token_usage"]["completion_tokens"] == 9 for o in outs)


def test_async_path_retries_too() -> None:
    with FlakyOpenAIServer([(502, "{}"), (200, completion(["async ok"]))]) as srv:
        model = OpenAIChatModel(base_url=srv.url, backoff_s=0.01)  # model="auto" resolved asynchronously
        reply = asyncio.run(model.ainvoke("hi"))
        outs = asyncio.run(model.asample("hi", 2))
    assert reply.content == "async ok" and reply.response_metadata["attempts"] == 2
    assert len(outs) == 1  # the double answers one choice whatever n is
    assert srv.posts[-1]["n"] == 2 and srv.posts[-1]["model"] == "double-model"


def test_unknown_call_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unknown call options"):
        _model("http://127.0.0.1:9/v1").invoke("hi", frequency_penalty=1)


def test_factory_picks_backend_without_loading_anything() -> None:
    http = make_chat_model(
        ModelConfig(base_url="http://h:1/v1", model="m", retries=5, timeout_s=9, temperature=0.5)
    )
    assert isinstance(http, OpenAIChatModel)
    assert (http.retries, http.timeout_s, http.temperature, http.model) == (5, 9, 0.5, "m")
    local = make_chat_model(ModelConfig(model="transformers:/nowhere", max_tokens=33), n=2)
    assert isinstance(local, TransformersChatModel)
    assert (local.path, local.max_tokens, local.n) == ("/nowhere", 33, 2)
    with pytest.raises(ConfigError, match="no base_url"):
        make_chat_model(ModelConfig(base_url=None, model="m"))
    gguf = make_chat_model(ModelConfig(model="gguf:/x.gguf"))  # in-process too, resolved on first use
    assert isinstance(gguf, TransformersChatModel) and gguf.path == "gguf:/x.gguf"


# --- bounds: a deadline for the whole reply, a cap on its size, wrong shapes ------------------------


def _trickler(gap_s: float):
    from tests.test_faults_http import FaultServer

    def behave(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n")
        while not stop.wait(gap_s):
            conn.sendall(b" ")

    return FaultServer(behave)


def test_trickling_body_is_cut_at_the_deadline_sync_async_and_inside_a_loop() -> None:
    with _trickler(0.1) as srv:
        model = _model(srv.url, timeout_s=0.6, retries=3)
        for call in (
            lambda: model.invoke("hi"),
            lambda: asyncio.run(model.ainvoke("hi")),
            lambda: asyncio.run(_sync_inside_a_loop(model)),  # invoke() from async code
        ):
            start = time.perf_counter()
            with pytest.raises(ModelError, match=r"no complete reply within 0.6 s \(\d+ bytes"):
                call()
            assert time.perf_counter() - start < 1.5
        assert srv.requests == 3  # one per call: a deadline is not retried


async def _sync_inside_a_loop(model: OpenAIChatModel) -> None:
    model.invoke("hi")


def test_reply_cap_scales_with_n_and_logprobs_and_is_enforced() -> None:
    big = completion(["x" * 5000])
    with FlakyOpenAIServer([(200, big)]) as srv:
        with pytest.raises(ModelError, match="larger than max_reply_bytes") as info:
            _model(srv.url, max_reply_bytes=4000).invoke("hi")
        assert "raise max_reply_bytes" in (info.value.hint or "")
        assert _model(srv.url, max_reply_bytes=8000).invoke("hi").content == "x" * 5000
    model = _model("http://x/v1", max_reply_bytes=100)
    assert model.reply_cap({"n": 3, "logprobs": True, "top_logprobs": 5}) == 100 * 3 * 7
    assert make_chat_model(ModelConfig(base_url="http://h/v1", max_reply_bytes=77)).max_reply_bytes == 77


def test_retry_after_as_an_http_date_is_honoured_and_capped() -> None:
    from email.utils import formatdate

    from agent_runtime.models.openai_chat import _Retry, _retry_after

    soon = _retry_after(formatdate(time.time() + 30, usegmt=True))
    assert soon is not None and 28 <= soon <= 31
    model = _model("http://x/v1", backoff_s=0.1, max_backoff_s=2.0)
    assert model._delay(1, _Retry("x", 429, soon)) == 2.0  # a server asking for 30 s gets the cap


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        ({"choices": [{"message": {"content": 5}}]}, "content is int"),
        ({"choices": [{"message": "hi"}]}, "message is missing or not an object"),
        ({"choices": []}, "'choices' is empty"),
        (
            {"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": "many"}},
            "usage.prompt_tokens",
        ),
        ({"choices": [{"message": {"content": "a"}, "logprobs": [1]}]}, "logprobs is not an object"),
        ([1, 2], "not an object"),
    ],
)
def test_wrong_types_in_a_reply_are_model_errors(reply: Any, needle: str) -> None:
    with FlakyOpenAIServer([(200, reply)]) as srv:
        with pytest.raises(ModelError, match=needle):
            _model(srv.url).invoke("hi")
