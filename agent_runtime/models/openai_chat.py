"""A LangChain chat model for any OpenAI-compatible endpoint, over plain httpx.

vLLM, SGLang, Ollama and ``agent-runtime serve`` all speak ``POST /v1/chat/completions``; we talk
to them with httpx rather than the ``openai`` package to keep vLLM's extra fields
(``return_token_ids``) and our retry policy in plain sight. The policy: connection failures,
429 and 5xx are retried ``retries`` times with exponential backoff (honouring ``Retry-After``);
read timeouts and other 4xx are not, because repeating them only multiplies the wait. So a dead
server fails within about ``sum(backoff)`` seconds, never hangs, and the
:class:`~agent_runtime.errors.ModelError` names the URL, the status and what to check.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, NoReturn

import httpx
from pydantic import Field, PrivateAttr, SecretStr

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ModelError
from agent_runtime.models.base import OpenAIShapedChatModel

DOCTOR_HINT = "is the server running? check with: agent-runtime doctor"
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class _Retry(Exception):
    """One failed attempt that may be retried; ``delay`` is the server's Retry-After, if any."""

    def __init__(self, reason: str, status: int | None = None, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.status, self.delay = reason, status, delay


class OpenAIChatModel(OpenAIShapedChatModel):
    """Chat completions from an OpenAI-compatible server (text + ``image_url`` data URLs)."""

    base_url: str = Field(description="the /v1 endpoint, e.g. http://127.0.0.1:8000/v1")
    model: str = Field("auto", description="served model id; 'auto' = the first id GET /models lists")
    api_key: SecretStr = SecretStr("EMPTY")
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(3, ge=0, le=10)
    backoff_s: float = Field(0.5, ge=0, description="delay before the first retry; doubles each time")
    max_backoff_s: float = Field(8.0, ge=0)

    _client: httpx.Client | None = PrivateAttr(None)
    _resolved: str | None = PrivateAttr(None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)  # guards _client
    _resolve_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def from_config(cls, cfg: ModelConfig, **overrides: Any) -> OpenAIChatModel:
        if not cfg.base_url:
            raise ModelError(
                "this model config has no base_url", hint="set base_url or model = 'transformers:/path'"
            )
        fields = {
            "base_url": cfg.base_url,
            "model": cfg.model,
            "api_key": SecretStr(cfg.api_key),
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "timeout_s": cfg.timeout_s,
            "retries": cfg.retries,
        }
        return cls(**(fields | overrides))

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
        return httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0))

    def _http(self) -> httpx.Client:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = httpx.Client(timeout=self._timeout(), headers=self._headers())
        return self._client

    def _delay(self, attempt: int, retry: _Retry) -> float:
        backoff = self.backoff_s * 2 ** (attempt - 1)
        if retry.delay is not None:
            backoff = max(backoff, retry.delay)
        return min(backoff, self.max_backoff_s)

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
        url = self._url(path)
        for attempt in range(1, self.retries + 2):
            try:
                try:
                    resp = self._http().request(method, url, json=body)
                except httpx.HTTPError as exc:
                    self._transport_failure(exc, method, url, attempt)
                return self._read(resp, method, url, attempt), attempt
            except _Retry as retry:
                if attempt > self.retries:
                    raise self._gave_up(retry, method, url, attempt) from None
                time.sleep(self._delay(attempt, retry))
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _asend(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], int]:
        url = self._url(path)
        async with httpx.AsyncClient(timeout=self._timeout(), headers=self._headers()) as client:
            for attempt in range(1, self.retries + 2):
                try:
                    try:
                        resp = await client.request(method, url, json=body)
                    except httpx.HTTPError as exc:
                        self._transport_failure(exc, method, url, attempt)
                    return self._read(resp, method, url, attempt), attempt
                except _Retry as retry:
                    if attempt > self.retries:
                        raise self._gave_up(retry, method, url, attempt) from None
                    await asyncio.sleep(self._delay(attempt, retry))
        raise AssertionError("unreachable")

    def _transport_failure(self, exc: httpx.HTTPError, method: str, url: str, attempt: int) -> NoReturn:
        """Raise :class:`_Retry` for failures worth repeating, :class:`ModelError` for the rest."""
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            raise _Retry(f"connection timed out ({type(exc).__name__})") from exc
        if isinstance(exc, httpx.TimeoutException):
            raise ModelError(
                f"{method} {url} got no reply within {self.timeout_s:g} s",
                hint="the server is up but slow: raise timeout_s or lower max_tokens",
                url=url,
                attempts=attempt,
            ) from exc
        if isinstance(exc, httpx.TransportError):
            raise _Retry(f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc
        raise ModelError(f"{method} {url} failed: {exc}", url=url, attempts=attempt) from exc

    def _read(self, resp: httpx.Response, method: str, url: str, attempt: int) -> dict[str, Any]:
        if resp.status_code in _RETRY_STATUS:
            after = resp.headers.get("retry-after", "")
            raise _Retry(
                f"HTTP {resp.status_code}: {_server_message(resp)}",
                resp.status_code,
                float(after) if after.replace(".", "", 1).isdigit() else None,
            )
        if resp.status_code >= 400:
            hint = {
                401: "check api_key",
                403: "check api_key",
                404: f"check that base_url ends with /v1 and that the model is served; {DOCTOR_HINT}",
            }.get(resp.status_code, "the server rejected the request (see message)")
            raise ModelError(
                f"{method} {url} returned HTTP {resp.status_code}: {_server_message(resp)}",
                hint=hint,
                url=url,
                status=resp.status_code,
                attempts=attempt,
            )
        try:
            data = resp.json()
        except ValueError:
            raise ModelError(
                f"{method} {url} returned non-JSON: {resp.text[:200]!r}",
                hint="is base_url an OpenAI-compatible /v1 endpoint?",
                url=url,
            ) from None
        if not isinstance(data, dict):
            raise ModelError(f"{method} {url} returned {type(data).__name__}, not a JSON object", url=url)
        return data

    def _gave_up(self, retry: _Retry, method: str, url: str, attempts: int) -> ModelError:
        return ModelError(
            f"{method} {url} failed after {attempts} attempt{'s' * (attempts > 1)}: {retry.reason}",
            hint=DOCTOR_HINT,
            url=url,
            status=retry.status,
            attempts=attempts,
        )

    def close(self) -> None:
        """Close the pooled connection (the model stays usable; a new pool opens on demand)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _server_message(resp: httpx.Response) -> str:
    """The error text of an OpenAI-style (``{"error": {"message"}}``) or vLLM-style body."""
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:300] or resp.reason_phrase
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
    return resp.text[:300]
