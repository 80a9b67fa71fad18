"""An OpenAI-compatible HTTP server over a chat backend (``agent-runtime serve``).

CI cannot run vLLM (GPU only), so the HTTP path of the runtime is exercised against this server
backed by transformers. It speaks the subset of vLLM's API the runtime uses: ``GET /v1/models``,
``POST /v1/chat/completions`` (string or list content with ``image_url`` data URLs,
``n``/``seed``/``logprobs``/``return_token_ids``), ``GET /health`` and vLLM's runtime LoRA
endpoints, so RL code written against it also works against ``vllm serve --enable-lora``.

Errors are OpenAI-style JSON: 400 for a malformed request (FastAPI's own 422 is turned into 400,
as OpenAI and vLLM answer), 404 for an unknown model, 413 for a body over ``max_body_bytes``,
500 only for a failure of the backend itself. Whatever is the client's fault is a 400 that says
what to change: bad types, a ``seed`` out of range, data that is no image, a decompression bomb,
a prompt longer than the model's context (tokens counted after the chat template, as vLLM does;
a prompt with far more text than could fit is refused before it is even tokenized).

Generation handlers are plain ``def``: FastAPI runs them in its thread pool, so a long
generation does not block ``/health``; the backend serialises the model itself. The limits keep
any one request short: none can hold the model for the minutes a prompt beyond the context took.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_runtime.models.protocol import (
    BadRequest,
    ChatCompletionRequest,
    ChatCompletionResponse,
    LoadLoRARequest,
    ModelList,
    UnloadLoRARequest,
    check_prompt_chars,
    error_body,
)

log = logging.getLogger(__name__)

#: Largest request body accepted (413 above): a few full-resolution screenshots as base64.
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024


class ChatBackend(Protocol):
    """What the server needs from a model (``TransformersEngine`` is one)."""

    served_name: str

    def models(self) -> ModelList: ...

    def chat(self, req: ChatCompletionRequest) -> ChatCompletionResponse: ...

    def load_adapter(self, name: str, path: str) -> None: ...

    def unload_adapter(self, name: str) -> None: ...


def _error(
    status: int, message: str, kind: str = "invalid_request_error", param: str | None = None
) -> JSONResponse:
    return JSONResponse(error_body(message, status=status, kind=kind, param=param), status_code=status)


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    first: dict[str, Any] = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    where = ".".join(loc) or None
    return (
        f"{where}: {first.get('msg', 'invalid request')}" if where else first.get("msg", "invalid request")
    ), where


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 (OpenAI-style JSON).

    ``Content-Length`` is checked before anything is read; a chunked body is counted as it
    arrives and never buffered past the limit. The body read is then replayed to the app.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, send, int(declared))
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, send, None)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, send: Send, declared: int | None) -> None:
        size = f"{declared} bytes" if declared is not None else f"more than {self.limit} bytes"
        response = _error(
            413,
            f"the request body ({size}) is over this server's limit of {self.limit} bytes "
            "(agent-runtime serve --max-body-mb); send smaller images or a shorter prompt",
        )
        response.headers["Connection"] = "close"
        await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def create_app(backend: ChatBackend, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """The FastAPI app serving ``backend``; run it with uvicorn (in a thread or a process).

    A backend with a ``context_length`` attribute (tokens) has prompts with far more text than
    that refused before they reach it; the backend checks the exact token count itself.
    """
    app = FastAPI(title="agent-runtime OpenAI-compatible server", docs_url=None, redoc_url=None)
    app.add_middleware(BodyLimit, limit=max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, where = _validation_message(exc)
        return _error(400, message, param=where)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own errors (a body that is not JSON, an unknown route) in OpenAI's shape too.
        kind = "invalid_request_error" if exc.status_code < 500 else "internal_error"
        return _error(exc.status_code, str(exc.detail), kind=kind)

    @app.exception_handler(BadRequest)
    async def _bad(_: Request, exc: BadRequest) -> JSONResponse:
        kind = "model_not_found" if exc.status == 404 else "invalid_request_error"
        return _error(exc.status, str(exc), kind=kind)

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        return _error(500, f"{type(exc).__name__}: {exc}", kind="internal_error")

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok", "model": backend.served_name}

    @app.get("/v1/models")
    def models() -> ModelList:
        return backend.models()

    @app.post("/v1/chat/completions")
    def chat(req: ChatCompletionRequest) -> ChatCompletionResponse:
        check_prompt_chars(req, getattr(backend, "context_length", None))
        return backend.chat(req)

    @app.post("/v1/load_lora_adapter", response_class=PlainTextResponse)
    def load_lora(req: LoadLoRARequest) -> str:
        backend.load_adapter(req.lora_name, req.lora_path)
        return f"Success: LoRA adapter '{req.lora_name}' added successfully."

    @app.post("/v1/unload_lora_adapter", response_class=PlainTextResponse)
    def unload_lora(req: UnloadLoRARequest) -> str:
        backend.unload_adapter(req.lora_name)
        return f"Success: LoRA adapter '{req.lora_name}' removed successfully."

    return app


class Server(uvicorn.Server):
    """uvicorn's server that knows its bound URL and reports it once it is listening.

    ``--port 0`` binds a free port; the URL printed (and in :attr:`url`) is the real one.
    """

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[str], None] | None = None) -> None:
        super().__init__(config)
        self.on_ready = on_ready
        self.url: str | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.started:
            return
        bound = [s.getsockname() for srv in self.servers for s in (srv.sockets or ())]
        host, port = (bound[0][0], bound[0][1]) if bound else (self.config.host, self.config.port)
        self.url = f"http://{host}:{port}/v1"
        if self.on_ready is not None:
            self.on_ready(self.url)


class ServerThread:
    """Run an app in a daemon thread: ``with ServerThread(app) as url: ...`` (tests, RL scripts)."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, timeout_s: float = 30.0) -> None:
        self.server = Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        self.timeout_s = timeout_s
        self._thread = threading.Thread(target=self.server.run, name="agent-runtime-server", daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + self.timeout_s
        while self.server.url is None:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server thread did not start listening")
            time.sleep(0.01)
        return self.server.url

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=self.timeout_s)
