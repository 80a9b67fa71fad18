"""What the HTTP and in-process chat models share: request building and reply reading.

Both backends turn LangChain messages into one OpenAI chat-completions body and read one
OpenAI-shaped reply, so a role sees the same :class:`AIMessage` whichever backend answered:

* ``content`` — the text of the choice;
* ``usage_metadata`` — ``input_tokens``/``output_tokens``/``total_tokens``. With ``n > 1`` the prompt
  is counted on the first message only and each message carries its own completion tokens where
  the server reports them (``token_ids``), else the first carries them all, so summing the
  messages gives the request's usage;
* ``response_metadata`` — ``model_name``, ``finish_reason``, ``latency_ms``, ``attempts``,
  ``choice_index``, ``token_usage`` (the request's raw usage), ``id``; plus ``logprobs`` (the
  choice's ``logprobs.content`` list), ``token_ids`` and ``prompt_token_ids`` when asked for.

A call made after its run was cancelled raises :class:`~agent_runtime.models.cancel.RunCancelled`
at once (see :mod:`agent_runtime.models.cancel`).
"""

from __future__ import annotations

import asyncio
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult, Generation
from pydantic import Field

from agent_runtime.errors import ModelError
from agent_runtime.models.cancel import raise_if_cancelled

#: Request fields a call may override through ``invoke(..., key=value)`` / ``generate(..., key=value)``.
CALL_OPTIONS = (
    "temperature",
    "max_tokens",
    "n",
    "seed",
    "top_p",
    "logprobs",
    "top_logprobs",
    "return_token_ids",
)


class OpenAIShapedChatModel(BaseChatModel):
    """Base of our chat models; subclasses only move a request body to a reply dict."""

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, gt=0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    n: int = Field(1, ge=1, le=16, description="completions per call (vLLM/OpenAI `n`)")
    seed: int | None = None
    logprobs: bool = Field(False, description="ask for per-token logprobs (RL)")
    top_logprobs: int | None = Field(None, ge=0, le=20)
    return_token_ids: bool = Field(False, description="ask for prompt/completion token ids (vLLM extension)")

    # --- what subclasses provide ------------------------------------------------------------------

    @abstractmethod
    def _model_id(self) -> str:
        """The model id to put in the request."""

    @abstractmethod
    def _complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Send one request; return the reply JSON and the number of attempts it took."""

    async def _acomplete(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        return await asyncio.to_thread(self._complete, body)

    async def _aprepare(self) -> None:
        """Async set-up before a body is built (the HTTP model resolves ``model="auto"`` here)."""

    # --- shared -----------------------------------------------------------------------------------

    def build_body(
        self, messages: Sequence[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The OpenAI chat-completions body for ``messages`` (images as ``image_url`` parts)."""
        unknown = set(kwargs) - set(CALL_OPTIONS)
        if unknown:
            raise TypeError(f"unknown call options {sorted(unknown)}; known: {', '.join(CALL_OPTIONS)}")
        opts = {k: getattr(self, k) for k in CALL_OPTIONS} | kwargs
        body: dict[str, Any] = {
            "model": self._model_id(),
            "messages": convert_to_openai_messages(list(messages)),
            "temperature": opts["temperature"],
            "max_tokens": opts["max_tokens"],
        }
        if opts["n"] != 1:
            body["n"] = opts["n"]
        for key in ("seed", "top_p", "top_logprobs"):
            if opts[key] is not None:
                body[key] = opts[key]
        if opts["logprobs"]:
            body["logprobs"] = True
        if opts["return_token_ids"]:
            body["return_token_ids"] = True
        if stop:
            body["stop"] = stop
        return body

    def to_result(self, reply: dict[str, Any], *, latency_ms: float, attempts: int) -> ChatResult:
        """Read an OpenAI-shaped reply into one generation per choice.

        A reply of the wrong shape (no ``choices``, a choice without a ``message``, content or
        usage of the wrong type) is a :class:`ModelError` naming the first bad field.
        """
        choices, texts, usage = _check_reply(reply)
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        generations = []
        for i, (choice, text) in enumerate(zip(choices, texts, strict=True)):
            own = choice.get("token_ids")
            out_tokens = len(own) if own is not None else (completion if i == 0 else 0)
            meta: dict[str, Any] = {
                "model_name": reply.get("model", self._model_id()),
                "finish_reason": choice.get("finish_reason"),
                "latency_ms": round(latency_ms, 1),
                "attempts": attempts,
                "choice_index": choice.get("index", i),
                "token_usage": usage,
                "id": reply.get("id"),
            }
            if choice.get("logprobs") is not None:
                meta["logprobs"] = choice["logprobs"].get("content")
            if own is not None:
                meta["token_ids"] = own
            if reply.get("prompt_token_ids") is not None:
                meta["prompt_token_ids"] = reply["prompt_token_ids"]
            in_tokens = prompt if i == 0 else 0
            message = AIMessage(
                content=text,
                response_metadata=meta,
                usage_metadata=UsageMetadata(
                    input_tokens=in_tokens, output_tokens=out_tokens, total_tokens=in_tokens + out_tokens
                )
                if usage
                else None,
            )
            generations.append(
                ChatGeneration(message=message, generation_info={"finish_reason": meta["finish_reason"]})
            )
        return ChatResult(
            generations=generations, llm_output={"token_usage": usage, "model_name": meta["model_name"]}
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise_if_cancelled()
        body = self.build_body(messages, stop, **kwargs)
        start = time.perf_counter()
        reply, attempts = self._complete(body)
        return self.to_result(reply, latency_ms=(time.perf_counter() - start) * 1000, attempts=attempts)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise_if_cancelled()
        await self._aprepare()
        body = self.build_body(messages, stop, **kwargs)
        start = time.perf_counter()
        reply, attempts = await self._acomplete(body)
        return self.to_result(reply, latency_ms=(time.perf_counter() - start) * 1000, attempts=attempts)

    def sample(self, messages: LanguageModelInput, n: int, **kwargs: Any) -> list[AIMessage]:
        """``n`` completions of one prompt in one request (GRPO-style group sampling)."""
        result = self.generate([self._convert_input(messages).to_messages()], n=n, **kwargs)
        return _ai_messages(result.generations[0])

    async def asample(self, messages: LanguageModelInput, n: int, **kwargs: Any) -> list[AIMessage]:
        result = await self.agenerate([self._convert_input(messages).to_messages()], n=n, **kwargs)
        return _ai_messages(result.generations[0])


def _bad_reply(what: str) -> ModelError:
    return ModelError(
        f"the reply is not an OpenAI chat completion: {what}",
        hint="is base_url an OpenAI-compatible /v1 endpoint (vLLM, SGLang, Ollama, agent-runtime serve)?",
    )


def _check_reply(reply: Any) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """The choices (by index), their texts and the usage of a reply, or :class:`ModelError`.

    >>> _check_reply({"choices": [{"message": {"content": "hi"}}]})[1]
    ['hi']
    >>> _check_reply({"choices": "x"})
    Traceback (most recent call last):
    ...
    agent_runtime.errors.ModelError: the reply is not an OpenAI chat completion: 'choices' is str, not a list
      hint: is base_url an OpenAI-compatible /v1 endpoint (vLLM, SGLang, Ollama, agent-runtime serve)?
    """
    if not isinstance(reply, dict):
        raise _bad_reply(f"it is a JSON {type(reply).__name__}, not an object")
    if "choices" not in reply:
        raise _bad_reply(f"missing 'choices' (keys: {', '.join(sorted(map(str, reply))[:8]) or 'none'})")
    raw = reply["choices"]
    if not isinstance(raw, list):
        raise _bad_reply(f"'choices' is {type(raw).__name__}, not a list")
    if not raw:
        raise _bad_reply("'choices' is empty")
    for k, choice in enumerate(raw):
        if not isinstance(choice, dict):
            raise _bad_reply(f"choices[{k}] is {type(choice).__name__}, not an object")
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _bad_reply(f"choices[{k}].message is missing or not an object")
        if not isinstance(message.get("content"), str | None):
            raise _bad_reply(f"choices[{k}].message.content is {type(message['content']).__name__}")
        if not isinstance(choice.get("index", 0), int):
            raise _bad_reply(f"choices[{k}].index is not an integer")
        if not isinstance(choice.get("logprobs"), dict | None):
            raise _bad_reply(f"choices[{k}].logprobs is not an object")
        if not isinstance(choice.get("token_ids"), list | None):
            raise _bad_reply(f"choices[{k}].token_ids is not a list")
    usage = reply.get("usage") or {}
    if not isinstance(usage, dict):
        raise _bad_reply(f"'usage' is {type(usage).__name__}, not an object")
    for key in ("prompt_tokens", "completion_tokens"):
        if not isinstance(usage.get(key) or 0, int):
            raise _bad_reply(f"usage.{key} is not an integer")
    choices = sorted(raw, key=lambda c: c.get("index", 0))
    return choices, [c["message"].get("content") or "" for c in choices], usage


def _ai_messages(generations: Sequence[Generation]) -> list[AIMessage]:
    """The replies of one prompt's generations (a chat model's are ``ChatGeneration``s of AI messages)."""
    messages = []
    for g in generations:
        if not isinstance(g, ChatGeneration) or not isinstance(g.message, AIMessage):
            raise ModelError(f"expected a chat generation with an AI message, got {type(g).__name__}")
        messages.append(g.message)
    return messages
