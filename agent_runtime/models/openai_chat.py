"""A LangChain chat model for any OpenAI-compatible endpoint, over plain httpx.

vLLM, SGLang, Ollama and ``agent-runtime serve`` all speak ``POST /v1/chat/completions``; we talk
to them with httpx rather than the ``openai`` package to keep vLLM's extra fields
(``return_token_ids``) and our retry policy in plain sight.

Every request is bounded, whatever the server does:

* **Deadline.** ``timeout_s`` is a wall-clock deadline for one attempt: connecting, sending,
  the headers and the whole body together (httpx's own timeouts are per read, so a server that
  trickles a byte every few seconds would never trip them). The sync API runs the same async
  code as the async one, under ``asyncio.timeout``, so the deadline cuts a read off mid-way.
* **Retries.** Connection failures, a connection dropped mid-reply, 408/429 and 5xx are retried
  ``retries`` times (at most 10) with exponential backoff from ``backoff_s``, honouring a
  ``Retry-After`` (seconds or an HTTP date); every wait is capped at ``max_backoff_s``. A reply
  that does not come within the deadline, other 4xx, and replies that are not a chat completion
  are not retried: repeating them only multiplies the wait.
* **Total bound.** One call therefore ends, with a reply or a :class:`~agent_runtime.errors.ModelError`,
  within ``(retries + 1) * timeout_s + retries * max_backoff_s`` seconds (plus scheduling noise);
  with the defaults (120 s, 3 retries, 8 s) that is 504 s, and a dead server (connection refused)
  fails within about ``sum(backoff)`` seconds.
* **Cancellation.** A request abandons its connection within 0.05 s of its run's cancel
  event (Ctrl-C; :mod:`agent_runtime.models.cancel`) and raises ``RunCancelled``.
* **Size.** At most :meth:`~OpenAIChatModel.reply_cap` bytes of a reply are read
  (``max_reply_bytes`` per completion asked for, more when logprobs are asked); a bigger reply
  — announced by ``Content-Length`` or found while reading, compressed or not — is a
  ``ModelError``, and what was read is dropped, so nothing huge reaches the traces.

The ``ModelError`` names the URL, the status and what to check.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import os
import ssl
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn, TypeVar

import httpx
from pydantic import Field, PrivateAttr, SecretStr

from agent_runtime.config import DEFAULT_MAX_REPLY_BYTES, ModelConfig
from agent_runtime.errors import ModelError
from agent_runtime.models.base import OpenAIShapedChatModel
from agent_runtime.models.cancel import current_cancel, until_cancelled

DOCTOR_HINT = "is the server running? check with: agent-runtime doctor"
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
#: Most bytes of an error reply read for its message (the rest is not needed, and may be huge).
_ERROR_BODY_BYTES = 64 * 1024
_T = TypeVar("_T")


class _Retry(Exception):
    """One failed attempt that may be retried; ``delay`` is the server's Retry-After, if any."""

    def __init__(self, reason: str, status: int | None = None, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.status, self.delay = reason, status, delay


class OpenAIChatModel(OpenAIShapedChatModel):
    """Chat completions from an OpenAI-compatible server (text + ``image_url`` data URLs).

    A call ends within ``(retries + 1) * timeout_s + retries * max_backoff_s`` seconds (see the
    module docstring).
    """

    base_url: str = Field(description="the /v1 endpoint, e.g. http://127.0.0.1:8000/v1")
    model: str = Field("auto", description="served model id; 'auto' = the first id GET /models lists")
    api_key: SecretStr = SecretStr("EMPTY")
    default_url: bool = Field(
        False,
        description="base_url is the built-in default, not set in the config: a refused connection "
        "fails at once and says so, instead of being retried",
    )
    timeout_s: float = Field(
        120.0, gt=0, description="wall-clock deadline of one attempt: connect + send + the whole reply"
    )
    retries: int = Field(3, ge=0, le=10)
    backoff_s: float = Field(0.5, ge=0, description="delay before the first retry; doubles each time")
    max_backoff_s: float = Field(8.0, ge=0, description="cap of every wait, Retry-After included")
    max_reply_bytes: int = Field(
        DEFAULT_MAX_REPLY_BYTES, gt=0, description="most bytes read of a reply, per completion asked for"
    )

    @classmethod
    def from_config(cls, cfg: ModelConfig, **overrides: Any) -> OpenAIChatModel:
        if not cfg.base_url:
            raise ModelError(
                "this model config has no base_url", hint="set base_url or model = 'transformers:/path'"
            )
        fields = {
            "base_url": cfg.base_url,
            "default_url": "base_url" not in cfg.model_fields_set,
            "model": cfg.model,
            "api_key": SecretStr(cfg.api_key),
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "timeout_s": cfg.timeout_s,
            "retries": cfg.retries,
            "max_reply_bytes": cfg.max_reply_bytes,
        }
        return cls(**(fields | overrides))

    _resolved: str | None = PrivateAttr(None)
    _resolve_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    # --- model id ---------------------------------------------------------------------------------

    def _model_id(self) -> str:
        if self.model != "auto":
            return self.model
        if self._resolved is None:
            with self._resolve_lock:
                if self._resolved is None:
                    self._resolved = self._pick_model(self._send("GET", "/models")[0])
        return self._resolved

    async def _aprepare(self) -> None:
        if self.model == "auto" and self._resolved is None:
            reply, _ = await self._asend("GET", "/models")
            self._resolved = self._pick_model(reply)

    def _pick_model(self, reply: dict[str, Any]) -> str:
        try:
            return str(reply["data"][0]["id"])
        except (KeyError, IndexError, TypeError):
            raise ModelError(
                f"{self._url('/models')} lists no models",
                hint="start the server with a model loaded",
                url=self._url("/models"),
            ) from None

    # --- transport --------------------------------------------------------------------------------

    def _complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        return self._send("POST", "/chat/completions", body)

    async def _acomplete(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        return await self._asend("POST", "/chat/completions", body)

    def _url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key.get_secret_value()}"}

    def _timeout(self) -> httpx.Timeout:
        # Per-operation limits as a second line; the deadline of the whole attempt is asyncio's.
        return httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0))

    def reply_cap(self, body: dict[str, Any] | None = None) -> int:
        """Most bytes read of the reply to ``body``: ``max_reply_bytes`` per completion (``n``),
        times ``2 + top_logprobs`` when logprobs are asked (each token then carries its own entry).

        >>> m = OpenAIChatModel(base_url="http://h/v1", max_reply_bytes=1000)
        >>> m.reply_cap(), m.reply_cap({"n": 4}), m.reply_cap({"n": 2, "logprobs": True, "top_logprobs": 3})
        (1000, 4000, 10000)
        """
        body = body or {}
        per_choice = self.max_reply_bytes
        if body.get("logprobs"):
            per_choice *= 2 + int(body.get("top_logprobs") or 0)
        return per_choice * max(1, int(body.get("n") or 1))

    def close(self) -> None:
        """Nothing to close: each call opens its own connection (kept for API compatibility)."""

    def _delay(self, attempt: int, retry: _Retry) -> float:
        backoff = self.backoff_s * 2 ** (attempt - 1)
        if retry.delay is not None:
            backoff = max(backoff, retry.delay)
        return min(backoff, self.max_backoff_s)

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
        # The run's cancel event is read here: _run_sync may run the request in another thread.
        return _run_sync(self._asend(method, path, body, cancel=current_cancel()))

    async def _asend(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> tuple[dict[str, Any], int]:
        """The request with its retries, abandoned as soon as the run's cancel event is set."""
        event = cancel if cancel is not None else current_cancel()
        return await until_cancelled(self._attempts(method, path, body), event, f"{method} {self._url(path)}")

    async def _attempts(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], int]:
        url = self._url(path)
        cap = self.reply_cap(body)
        async with httpx.AsyncClient(
            timeout=self._timeout(), headers=self._headers(), verify=_ssl_context()
        ) as client:
            for attempt in range(1, self.retries + 2):
                try:
                    return await self._attempt(client, method, url, body, cap, attempt), attempt
                except _Retry as retry:
                    if attempt > self.retries:
                        raise self._gave_up(retry, method, url, attempt) from None
                    await asyncio.sleep(self._delay(attempt, retry))
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        cap: int,
        attempt: int,
    ) -> dict[str, Any]:
        """One request under the deadline: the parsed JSON object, or ``_Retry`` / ``ModelError``."""
        received = 0
        chunks = bytearray()
        deadline = asyncio.timeout(self.timeout_s)
        try:
            async with deadline, client.stream(method, url, json=body) as resp:
                if resp.status_code >= 400:
                    text = (await _read_capped(resp, _ERROR_BODY_BYTES)).decode("utf-8", "replace")
                    self._http_error(resp, text, method, url, attempt)
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > cap:
                    raise self._too_large(method, url, cap, attempt, f"it announced {int(declared)} bytes")
                async for chunk in resp.aiter_bytes():  # decoded: a gzip bomb counts at full size
                    received += len(chunk)
                    if received > cap:
                        raise self._too_large(method, url, cap, attempt, f"over {cap} bytes arrived")
                    chunks += chunk
        except TimeoutError:
            if not deadline.expired():
                raise
            self._late(method, url, attempt, received, None)
        except httpx.HTTPError as exc:
            self._transport_failure(exc, method, url, attempt, received)
        return _parse_json(bytes(chunks), method, url, attempt)

    def _late(self, method: str, url: str, attempt: int, received: int, exc: Exception | None) -> NoReturn:
        got = f" ({received} bytes of it had arrived)" if received else ""
        raise ModelError(
            f"{method} {url} got no complete reply within {self.timeout_s:g} s{got}",
            hint="the server is up but slow or stalled: raise timeout_s (a deadline for the whole "
            "reply) or lower max_tokens",
            url=url,
            attempts=attempt,
        ) from exc

    def _too_large(self, method: str, url: str, cap: int, attempt: int, why: str) -> ModelError:
        return ModelError(
            f"{method} {url} sent a reply larger than max_reply_bytes allows ({cap} bytes): {why}; "
            "the rest was not read and none of it was kept",
            hint="a runaway or misconfigured server? lower max_tokens, or raise max_reply_bytes in "
            "the model config if replies this large are expected",
            url=url,
            attempts=attempt,
        )

    def _transport_failure(
        self, exc: httpx.HTTPError, method: str, url: str, attempt: int, received: int = 0
    ) -> NoReturn:
        """Raise :class:`_Retry` for failures worth repeating, :class:`ModelError` for the rest."""
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            raise _Retry(f"connection timed out ({type(exc).__name__})") from exc
        if isinstance(exc, httpx.TimeoutException):
            self._late(method, url, attempt, received, exc)
        if isinstance(exc, httpx.ConnectError) and self.default_url:
            raise ModelError(
                f"{method} {url} failed: nothing listens at {self.base_url}, the default base_url "
                "(no base_url is set for this model)",
                hint="set base_url = 'http://HOST:PORT/v1' in its [models.NAME] table (or the role's), "
                "start a server there, or use model = 'demo' for the offline demo model",
                url=url,
                attempts=attempt,
            ) from exc
        if isinstance(exc, httpx.TransportError):
            where = f" after {received} bytes of the reply" if received else ""
            raise _Retry(f"{type(exc).__name__}{where}: {_describe(exc)}".rstrip(": ")) from exc
        raise ModelError(f"{method} {url} failed: {exc}", url=url, attempts=attempt) from exc

    def _http_error(self, resp: httpx.Response, text: str, method: str, url: str, attempt: int) -> NoReturn:
        message = _server_message(text, resp.reason_phrase)
        if resp.status_code in _RETRY_STATUS:
            raise _Retry(
                f"HTTP {resp.status_code}: {message}",
                resp.status_code,
                _retry_after(resp.headers.get("retry-after", "")),
            )
        hint = {
            401: "check api_key",
            403: "check api_key",
            404: f"check that base_url ends with /v1 and that the model is served; {DOCTOR_HINT}",
        }.get(resp.status_code, "the server rejected the request (see message)")
        raise ModelError(
            f"{method} {url} returned HTTP {resp.status_code}: {message}",
            hint=hint,
            url=url,
            status=resp.status_code,
            attempts=attempt,
        )

    def _gave_up(self, retry: _Retry, method: str, url: str, attempts: int) -> ModelError:
        if retry.status == 429:
            hint = f"the server is rate-limiting: run fewer requests at once or raise retries; {DOCTOR_HINT}"
        elif retry.status is not None:
            hint = f"the server failed to answer: see its log; {DOCTOR_HINT}"
        else:
            hint = DOCTOR_HINT
        return ModelError(
            f"{method} {url} failed after {attempts} attempt{'s' * (attempts > 1)}: {retry.reason}",
            hint=hint,
            url=url,
            status=retry.status,
            attempts=attempts,
        )


def _describe(exc: BaseException) -> str:
    """``str(exc)`` plus the OS's reason found down its chain (anyio says only "All connection
    attempts failed" where the cause is ``[Errno 111] Connection refused``)."""
    text, cause = str(exc), exc
    for _ in range(8):  # a chain is short; a cycle must not loop
        if isinstance(cause, OSError) and cause.errno is not None:
            reason = os.strerror(cause.errno)
            return text if reason in text else f"{text} ({reason})"
        follow = cause.__cause__ or cause.__context__
        if follow is None:
            break
        cause = follow
    return text


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion from sync code, also when this thread already runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="agent-runtime-http") as pool:
        return pool.submit(asyncio.run, coro).result()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once (building it costs milliseconds per client)."""
    return httpx.create_ssl_context()


async def _read_capped(resp: httpx.Response, cap: int) -> bytes:
    """At most ``cap`` bytes of the body (an error page's message needs no more)."""
    data = bytearray()
    async for chunk in resp.aiter_bytes():
        data += chunk
        if len(data) >= cap:
            break
    return bytes(data[:cap])


def _parse_json(raw: bytes, method: str, url: str, attempt: int) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        shown = raw[:200].decode("utf-8", "replace")
        raise ModelError(
            f"{method} {url} returned a reply that is not JSON ({len(raw)} bytes, starting {shown!r})",
            hint="is base_url an OpenAI-compatible /v1 endpoint?",
            url=url,
            attempts=attempt,
        ) from None
    if not isinstance(data, dict):
        raise ModelError(
            f"{method} {url} returned a JSON {type(data).__name__}, not an object",
            hint="is base_url an OpenAI-compatible /v1 endpoint?",
            url=url,
            attempts=attempt,
        )
    return data


def _retry_after(value: str) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or None.

    >>> _retry_after("2"), _retry_after("0.5"), _retry_after("soon"), _retry_after("-3")
    (2.0, 0.5, None, 0.0)
    """
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(text: str, reason: str = "") -> str:
    """The error text of an OpenAI-style (``{"error": {"message"}}``) or vLLM-style body."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return " ".join(text[:300].split()) or reason
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
        if data.get("message"):
            return str(data["message"])[:300]
        if data.get("detail"):
            return str(data["detail"])[:300]
    return " ".join(text[:300].split()) or reason
