"""The OpenAI chat-completions wire format, as far as agent-runtime speaks it.

Both our server (``agent-runtime serve``) and the in-process backend produce
:class:`ChatCompletionResponse`, and the client reads replies of that shape from any
OpenAI-compatible server, so all three share one definition. Two vLLM extensions are included for
RL: ``return_token_ids`` (``choices[i].token_ids`` and ``prompt_token_ids``) and chat
``logprobs``/``top_logprobs``; vLLM's LoRA admin requests are here too.
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Temperatures below this are greedy decoding (vLLM's ``_SAMPLING_EPS``).
SAMPLING_EPS = 1e-5
#: More characters per token than any real tokenizer averages: a prompt longer than this many
#: characters per token of context is refused before it is tokenized (a 30 MB prompt must not
#: reach the tokenizer, let alone the model).
MAX_CHARS_PER_TOKEN = 64


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    url: str
    detail: str | None = None


class ImageURLPart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageURL

    @field_validator("image_url", mode="before")
    @classmethod
    def _url_string(cls, v: Any) -> Any:
        # Some clients (LangChain's older formats) send the URL as a bare string.
        return {"url": v} if isinstance(v, str) else v


ContentPart = Annotated[TextPart | ImageURLPart, Field(discriminator="type")]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[ContentPart] | None = None


class ChatCompletionRequest(BaseModel):
    """A ``POST /v1/chat/completions`` body. Unknown OpenAI fields are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1, description="vLLM's extension: 0 or -1 = no limit")
    max_tokens: int | None = Field(None, gt=0)
    max_completion_tokens: int | None = Field(None, gt=0)
    n: int = Field(1, ge=1, le=16)
    seed: int | None = Field(None, ge=-(2**63), le=2**64 - 1, description="what torch.manual_seed takes")
    stop: str | list[str] | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    return_token_ids: bool = False
    stream: bool = False

    @field_validator("temperature")
    @classmethod
    def _greedy_below_epsilon(cls, v: float) -> float:
        # As vLLM: a temperature this small is greedy decoding (sampling at it overflows to inf).
        return 0.0 if v < SAMPLING_EPS else v

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    @property
    def stop_list(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else [s for s in self.stop if s]

    def prompt_chars(self) -> int:
        """Characters of text in the messages (images not counted)."""
        total = 0
        for m in self.messages:
            if isinstance(m.content, str):
                total += len(m.content)
            elif m.content is not None:
                total += sum(len(p.text) for p in m.content if isinstance(p, TextPart))
        return total


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int] | None = None


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob] = Field(default_factory=list)


class ChoiceLogprobs(BaseModel):
    content: list[TokenLogprob]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length"]
    logprobs: ChoiceLogprobs | None = None
    token_ids: list[int] | None = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletionResponse(BaseModel):
    id: str = Field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    object: Literal["chat.completion"] = "chat.completion"
    created: int = Field(default_factory=lambda: int(time.time()))
    model: str
    choices: list[Choice]
    usage: Usage
    prompt_token_ids: list[int] | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = Field(default_factory=lambda: int(time.time()))
    owned_by: str = "agent-runtime"
    root: str | None = None
    parent: str | None = None


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class LoadLoRARequest(BaseModel):
    """vLLM's ``POST /v1/load_lora_adapter`` body."""

    lora_name: str = Field(min_length=1)
    lora_path: str = Field(min_length=1)


class UnloadLoRARequest(BaseModel):
    """vLLM's ``POST /v1/unload_lora_adapter`` body."""

    model_config = ConfigDict(extra="ignore")

    lora_name: str = Field(min_length=1)


class BadRequest(ValueError):
    """A request a backend cannot serve as asked (bad image, unknown adapter, streaming): HTTP 400."""

    status = 400


class UnknownModel(BadRequest):
    """The request names a model or adapter the backend does not serve: HTTP 404."""

    status = 404


def error_body(
    message: str, *, status: int, kind: str = "invalid_request_error", param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error JSON (``{"error": {...}}``), which OpenAI clients and vLLM users expect."""
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def context_length(config: Any) -> int | None:
    """The context window (in tokens) a transformers model config declares, or None.

    >>> from types import SimpleNamespace as NS
    >>> context_length(NS(text_config=NS(max_position_embeddings=4096))), context_length(NS())
    (4096, None)
    """
    for cfg in (getattr(config, "text_config", None), config):
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = getattr(cfg, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def check_prompt_chars(req: ChatCompletionRequest, context: int | None) -> None:
    """Refuse (400) a prompt whose text cannot fit ``context`` tokens, before tokenizing it."""
    if context is None:
        return
    chars = req.prompt_chars()
    if chars > context * MAX_CHARS_PER_TOKEN:
        raise BadRequest(
            f"This model's maximum context length is {context} tokens, and the messages hold "
            f"{chars} characters of text, far more than fits. Please reduce the length of the messages."
        )


def check_context(prompt_tokens: int, req: ChatCompletionRequest, context: int | None) -> None:
    """Refuse (400, vLLM's wording) a request whose prompt plus completion budget exceed ``context``.

    ``prompt_tokens`` are counted after the chat template (and image expansion) were applied.

    >>> req = ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=10)
    >>> check_context(90, req, 100)
    >>> try:
    ...     check_context(91, req, 100)
    ... except BadRequest as exc:
    ...     print(str(exc).split(". ")[1])
    However, you requested 101 tokens (91 in the messages, 10 in the completion)
    """
    if context is None:
        return
    completion = req.token_limit or 1
    if prompt_tokens + completion > context:
        raise BadRequest(
            f"This model's maximum context length is {context} tokens. However, you requested "
            f"{prompt_tokens + completion} tokens ({prompt_tokens} in the messages, {completion} in "
            "the completion). Please reduce the length of the messages or completion."
        )
