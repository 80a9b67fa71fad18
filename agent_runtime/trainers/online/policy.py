"""The policy that rollouts sample from, and how it is refreshed after each update.

Two ways to serve the trained role during rollouts:

* :class:`InProcessPolicy` — the trainer's own PEFT model sits inside a
  :class:`~agent_runtime.models.engine.TransformersEngine`; rollouts call it through the
  in-process ``transformers:`` chat model. The optimizer updates the LoRA weights in place, so
  the refresh only renames the served model to the new version (recorded as ``CallRecord.model``).
* :class:`ServerPolicy` — an OpenAI-compatible server (vLLM with ``--enable-lora`` and
  ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``, or ``agent-runtime serve``) serves the adapter. After
  each update the adapter is saved and published as ``NAME-vNNNN`` with
  ``POST /v1/load_lora_adapter``; the previous version is then dropped with
  ``POST /v1/unload_lora_adapter``. Loading the new name before unloading the old leaves no
  moment in which no policy is served, and the version in the name is what the traces record.

Both ask for ``logprobs`` and ``return_token_ids``. **Log-probs are of the raw distribution**
(vLLM's default ``logprobs_mode``; our server does the same); the loss compares them with the
tempered one, so at a temperature other than 1 the trainer rescores the behaviour log-probs
itself before the update (:mod:`.loop`).

**top-k.** The in-process policy samples with the config's ``top_k`` (:class:`PolicyChatModel`
puts it in the request; the engine honours it per request). The HTTP chat model sends only
OpenAI's fields, so there is no way to pass vLLM's ``top_k`` to a policy server: the loop
refuses ``top_k > 0`` with ``--server-url`` instead of silently sampling without it. Top-k and
top-p truncate the sampler's distribution, but the loss, and any rescoring of behaviour
log-probs, use the tempered *full* distribution on both sides of the ratio (as TRL and vLLM
do): on-policy ratios stay exactly 1, where scoring the truncated μ would put every ratio at the
kept mass (< 1) and clip good samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import Field

from agent_runtime.errors import ModelError
from agent_runtime.models.transformers_chat import TransformersChatModel


def version_name(name: str, version: int) -> str:
    return f"{name}-v{version:04d}"


class PolicyChatModel(TransformersChatModel):
    """The in-process chat model of the trained role: the shared one plus ``top_k``, which the
    shared request body does not carry but the engine samples with (module docstring)."""

    top_k: int = Field(0, ge=0, description="top-k sampling (0: off)")

    def build_body(
        self, messages: Sequence[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        body = super().build_body(messages, stop, **kwargs)
        if self.top_k > 0:
            body["top_k"] = self.top_k
        return body


class InProcessPolicy:
    """The trainer's model, served in-process (see the module docstring)."""

    kind = "in-process"

    def __init__(
        self, engine: Any, name: str, *, temperature: float, top_p: float, max_tokens: int, top_k: int = 0
    ) -> None:
        self.engine = engine
        self.name = name
        self.sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k, "max_tokens": max_tokens}
        self.current = version_name(name, 0)
        engine.served_name = self.current

    def chat_model(self, seed: int) -> Any:
        model = PolicyChatModel(
            path=str(self.engine.path),
            seed=seed,
            logprobs=True,
            return_token_ids=True,
            **self.sampling,
        )
        model._engine = self.engine  # the trainer's engine, not a second copy of the weights
        return model

    def publish(self, version: int, adapter_dir: Path) -> str:
        """The weights are already updated in place; serve them under the new version's name
        (and drop the engine's cached prefixes, computed with the old weights)."""
        self.engine.weights_changed()
        self.current = version_name(self.name, version)
        self.engine.served_name = self.current
        return self.current

    def close(self) -> None:
        """Nothing to release: the engine belongs to the trainer."""


class ServerPolicy:
    """An adapter served by an OpenAI-compatible server with runtime LoRA loading."""

    kind = "server"

    def __init__(
        self,
        base_url: str,
        name: str,
        *,
        temperature: float,
        top_p: float,
        max_tokens: int,
        api_key: str = "EMPTY",
        timeout_s: float = 300.0,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.name = name
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.sampling = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        self.current: str | None = None
        self._http = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {api_key}"})

    def spec(self) -> dict[str, Any]:
        """What a remote rollout worker needs to build the same chat model (picklable)."""
        return {
            "base_url": self.base_url,
            "model": self.current,
            "api_key": self.api_key,
            "timeout_s": self.timeout_s,
            **self.sampling,
        }

    def chat_model(self, seed: int) -> Any:
        return server_chat_model(self.spec(), seed)

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        import httpx

        url = f"{self.base_url}{path}"
        try:
            resp = self._http.post(url, json=body)
        except httpx.HTTPError as exc:
            raise ModelError(
                f"POST {url} failed: {type(exc).__name__}: {exc}",
                hint="is the policy server running (agent-runtime serve, or vllm serve --enable-lora)?",
                url=url,
            ) from None
        return resp.status_code, resp.text[:300]

    def publish(self, version: int, adapter_dir: Path) -> str:
        """Load ``adapter_dir`` as ``NAME-vNNNN``, then unload the previous version."""
        new = version_name(self.name, version)
        body = {"lora_name": new, "lora_path": str(Path(adapter_dir).resolve())}
        status, text = self._post("/load_lora_adapter", body)
        if status == 400 and "already" in text:  # a resumed run re-publishes a version the server kept
            self._post("/unload_lora_adapter", {"lora_name": new})
            status, text = self._post("/load_lora_adapter", body)
        if status >= 400:
            raise ModelError(
                f"the policy server refused to load adapter {new}: HTTP {status}: {text}",
                hint="vLLM needs --enable-lora (with --max-lora-rank >= the LoRA rank) and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; the server must see the adapter directory",
                url=f"{self.base_url}/load_lora_adapter",
                status=status,
            )
        old, self.current = self.current, new
        if old is not None and old != new:
            status, text = self._post("/unload_lora_adapter", {"lora_name": old})
            if status >= 400 and status != 404:
                raise ModelError(f"the policy server could not unload {old}: HTTP {status}: {text}")
        return new

    def close(self) -> None:
        self._http.close()


def server_chat_model(spec: dict[str, Any], seed: int) -> Any:
    """The trained role's HTTP chat model from :meth:`ServerPolicy.spec` and a sampling seed."""
    from agent_runtime.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel(
        base_url=spec["base_url"],
        model=spec["model"],
        api_key=spec["api_key"],
        timeout_s=spec["timeout_s"],
        temperature=spec["temperature"],
        top_p=spec["top_p"],
        max_tokens=spec["max_tokens"],
        seed=seed,
        logprobs=True,
        return_token_ids=True,
    )
