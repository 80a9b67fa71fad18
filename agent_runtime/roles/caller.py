"""One traced role call: render the prompt, ask the model, parse, re-ask on a parse error.

Every role call in Mobile-Agent-v3 is a single user turn (text + screenshots) with no chat
history. When the reply cannot be parsed, the caller appends the bad reply and a short message
naming the problem (``reask.j2``) and asks again, up to ``reask`` times. Every attempt becomes a
:class:`~agent_runtime.traces.CallRecord` — trainers learn from the failures too. A reply that
never parses is returned as a failed :class:`RoleResult`, never raised: model output cannot crash
a run. Failures of the model *endpoint* are infrastructure errors and raise :class:`ModelError`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from agent_runtime.config import ModelConfig
from agent_runtime.coords import Size
from agent_runtime.errors import AgentRuntimeError, ConfigError, ModelError, ParseError
from agent_runtime.roles.templates import PromptTemplate, load_template
from agent_runtime.traces import CallRecord, Usage

T = TypeVar("T", bound=BaseModel)

#: The ``response_metadata`` key whose dict a reply adds to its call record's ``extra``.
RECORD_LABELS = "record_labels"
#: Longest completion kept verbatim in a re-ask (a runaway reply is cut, not resent whole).
_REASK_ECHO_CHARS = 4000


@dataclass(frozen=True)
class ImageInput:
    """A screenshot a role looks at: its PNG bytes and its trace ref (``screens/0003.png``)."""

    png: bytes
    ref: str


@dataclass(frozen=True)
class Turn:
    """One message of a conversation a model profile lays out: its role and its parts in order,
    each a text or a screenshot (:meth:`RoleCaller.call_turns`)."""

    role: Literal["system", "user", "assistant"]
    parts: tuple[str | ImageInput, ...]


_MESSAGE_TYPES: dict[str, type[BaseMessage]] = {
    "system": SystemMessage,
    "user": HumanMessage,
    "assistant": AIMessage,
}


@dataclass
class RoleResult(Generic[T]):
    """What one role call produced: ``output`` or, after every re-ask failed, ``error``."""

    output: T | None
    error: str | None = None
    attempts: int = 1
    latency_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    completion: str = ""

    @property
    def ok(self) -> bool:
        return self.output is not None


def message_text(message: BaseMessage) -> str:
    """The text of a chat reply whose content may be a string or a list of parts."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def _usage(message: BaseMessage) -> Usage:
    meta = getattr(message, "usage_metadata", None) or {}
    return Usage(
        prompt_tokens=int(meta.get("input_tokens", 0)), completion_tokens=int(meta.get("output_tokens", 0))
    )


class RoleCaller:
    """A role bound to its chat model, model config, prompt template and the run's call log.

    ``template`` may be None for a role that only makes plain text calls (RAG's ``ask_text``).
    ``system_template``, when given, renders a system message from the same variables (GUI-Owl's
    tool definitions); ``images_first`` puts the screenshots before the prompt text in the user
    turn, the order a role was trained with (Hi-Agent's levels, as TRL's GRPO rows hold them).

    ``record`` receives each :class:`CallRecord` (the run's trace writer); ``encode`` turns a
    screenshot into ``(content part, size the model sees)`` for this model's image budget.
    Thread-safe as long as the chat model is: the Notetaker runs beside the Reflector.
    """

    def __init__(
        self,
        role: str,
        chat_model: BaseChatModel,
        model_config: ModelConfig,
        template: PromptTemplate | None,
        *,
        run_id: str = "",
        record: Callable[[CallRecord], None] | None = None,
        reask: int = 2,
        encode: Callable[[bytes, ModelConfig], tuple[dict[str, Any], Size]] | None = None,
        system_template: PromptTemplate | None = None,
        images_first: bool = False,
    ) -> None:
        self.role = role
        self.system_template = system_template
        self.images_first = images_first
        self.chat_model = chat_model
        self.model_config = model_config
        self.template = template
        self.run_id = run_id
        self.record = record
        self.reask = reask
        self.encode = encode or _encode_image
        self._reask_template = load_template("reask.j2")

    @property
    def model_id(self) -> str:
        return getattr(self.chat_model, "model_name", None) or self.model_config.model

    def call(
        self,
        variables: dict[str, Any],
        parse: Callable[[str], T],
        *,
        images: Sequence[ImageInput] = (),
        step: int,
        sections: tuple[str, ...] = (),
        reply_format: str = "",
        extra: dict[str, Any] | None = None,
    ) -> RoleResult[T]:
        """Render, ask, parse; re-ask with the parse error appended; record every attempt.

        A re-ask names the reply's ``sections`` (``### Thought ###`` …), or, for a role that
        answers in tags instead, shows its ``reply_format``.
        """
        if self.template is None:
            raise ConfigError(f"the {self.role} role has no prompt template")
        prompt = self.template.render(**variables)
        content: list[dict[str, Any]] = []
        traced: list[dict[str, Any]] = []
        for image in images:
            part, size = self.encode(image.png, self.model_config)
            content.append(part)
            traced.append({"type": "image_ref", "ref": image.ref, "size": [size.width, size.height]})
        text_part = {"type": "text", "text": prompt}
        content = [*content, text_part] if self.images_first else [text_part, *content]
        traced = [*traced, text_part] if self.images_first else [text_part, *traced]
        messages: list[BaseMessage] = [HumanMessage(content=content)]  # type: ignore[arg-type]
        trace_messages: list[dict[str, Any]] = [{"role": "user", "content": traced}]
        if self.system_template is not None:
            system = self.system_template.render(**variables)
            messages = [SystemMessage(content=system), *messages]
            trace_messages = [
                {"role": "system", "content": [{"type": "text", "text": system}]},
                *trace_messages,
            ]
        return self._ask(
            messages,
            trace_messages,
            parse,
            step=step,
            sections=sections,
            reply_format=reply_format,
            extra=extra,
        )

    def call_turns(
        self,
        turns: Sequence[Turn],
        parse: Callable[[str], T],
        *,
        step: int,
        reply_format: str = "",
        extra: dict[str, Any] | None = None,
        model_config: ModelConfig | None = None,
    ) -> RoleResult[T]:
        """Ask with a whole conversation a model profile laid out (system, earlier screens and
        replies, the current screen), parse and re-ask like :meth:`call`.

        Images are encoded with ``model_config`` (the profile's effective config: its image
        format and size rule), else this caller's.
        """
        cfg = model_config or self.model_config
        messages: list[BaseMessage] = []
        trace_messages: list[dict[str, Any]] = []
        for turn in turns:
            content: list[dict[str, Any]] = []
            traced: list[dict[str, Any]] = []
            for part in turn.parts:
                if isinstance(part, ImageInput):
                    image_part, size = self.encode(part.png, cfg)
                    content.append(image_part)
                    traced.append({"type": "image_ref", "ref": part.ref, "size": [size.width, size.height]})
                else:
                    content.append({"type": "text", "text": part})
                    traced.append({"type": "text", "text": part})
            messages.append(_MESSAGE_TYPES[turn.role](content=content))  # type: ignore[arg-type]
            trace_messages.append({"role": turn.role, "content": traced})
        return self._ask(messages, trace_messages, parse, step=step, reply_format=reply_format, extra=extra)

    def _ask(
        self,
        messages: list[BaseMessage],
        trace_messages: list[dict[str, Any]],
        parse: Callable[[str], T],
        *,
        step: int,
        sections: tuple[str, ...] = (),
        reply_format: str = "",
        extra: dict[str, Any] | None = None,
    ) -> RoleResult[T]:
        """The ask-parse-re-ask loop of :meth:`call` and :meth:`call_turns`."""
        total_ms = 0.0
        usage = Usage()
        error = ""
        completion = ""
        for attempt in range(self.reask + 1):
            sampling = self.sampling(attempt)
            reply, latency_ms, model_name = self._invoke(
                messages, step=step, attempt=attempt, sampling=sampling
            )
            completion = message_text(reply)
            call_usage = _usage(reply)
            total_ms += latency_ms
            usage = usage + call_usage
            parsed: T | None = None
            try:
                parsed = parse(completion)
            except ParseError as exc:
                error = exc.message
            except (ValueError, TypeError) as exc:  # a parser bug must not kill the run either
                error = f"{type(exc).__name__}: {exc}"
            if self.record is not None:
                self.record(
                    CallRecord(
                        run_id=self.run_id,
                        step=step,
                        role=self.role,
                        model=model_name,
                        attempt=attempt,
                        messages=list(trace_messages),
                        completion=completion,
                        parsed=parsed.model_dump(mode="json") if parsed is not None else None,
                        parse_error=None if parsed is not None else error,
                        latency_ms=latency_ms,
                        usage=call_usage,
                        extra=dict(extra or {})
                        | rl_fields(reply, self._used(sampling))
                        | reply_labels(reply),
                    )
                )
            if parsed is not None:
                return RoleResult(parsed, None, attempt + 1, total_ms, usage, completion)
            feedback = self._reask_template.render(
                error=error, sections=list(sections), reply_format=reply_format
            )
            echoed = completion[:_REASK_ECHO_CHARS]
            messages = [*messages, AIMessage(content=echoed), HumanMessage(content=feedback)]
            trace_messages = [
                *trace_messages,
                {"role": "assistant", "content": echoed},
                {"role": "user", "content": [{"type": "text", "text": feedback}]},
            ]
        return RoleResult(None, error, self.reask + 1, total_ms, usage, completion)

    def ask_text(self, prompt: str, *, step: int = -1) -> str:
        """A plain text call (RAG's query writing and summarising), recorded like the others."""
        reply, latency_ms, model_name = self._invoke([HumanMessage(content=prompt)], step=step, attempt=0)
        text = message_text(reply)
        if self.record is not None:
            self.record(
                CallRecord(
                    run_id=self.run_id,
                    step=step,
                    role=self.role,
                    model=model_name,
                    messages=[{"role": "user", "content": [{"type": "text", "text": prompt}]}],
                    completion=text,
                    parsed={"text": text},
                    latency_ms=latency_ms,
                    usage=_usage(reply),
                )
            )
        return text

    def sampling(self, attempt: int) -> dict[str, Any]:
        """What attempt ``attempt`` changes in the chat model's sampling (nothing for the first).

        A re-ask samples at ``reask_temperature`` when the model config sets one (a greedy
        model asked again would answer the same). Its seed: when the chat model has its own
        seed, one derived from it and the attempt (:func:`reask_seed`) — the rollouts of an RL
        group each have their own sampling seed, so each re-asks with its own random stream
        instead of all replaying one; otherwise the attempt number, so that a re-run of the same
        episode re-asks the same way.
        """
        own_seed = getattr(self.chat_model, "seed", None)
        reask_temperature = self.model_config.reask_temperature
        if attempt == 0 or (own_seed is None and reask_temperature is None):
            return {}
        out: dict[str, Any] = {"seed": attempt if own_seed is None else reask_seed(own_seed, attempt)}
        if reask_temperature is not None:
            out["temperature"] = reask_temperature
        return out

    def _used(self, sampling: dict[str, Any]) -> dict[str, Any]:
        """The temperature and seed a call sampled with: its overrides, else the chat model's."""
        return {
            key: sampling.get(key, getattr(self.chat_model, key, None)) for key in ("temperature", "seed")
        }

    def _invoke(
        self, messages: list[BaseMessage], *, step: int, attempt: int, sampling: dict[str, Any] | None = None
    ) -> tuple[BaseMessage, float, str]:
        config = {
            "tags": [f"role:{self.role}"],
            "metadata": {"agent_runtime_role": self.role, "agent_runtime_step": step, "attempt": attempt},
        }
        model: Any = self.chat_model.bind(**sampling) if sampling else self.chat_model
        start = time.perf_counter()
        try:
            reply = model.invoke(messages, config=config)
        except AgentRuntimeError:
            raise
        except Exception as exc:  # a user-supplied LangChain model may raise anything
            raise ModelError(
                f"the {self.role} model call failed: {type(exc).__name__}: {exc}",
                role=self.role,
                step=step,
                hint="check the model endpoint with 'agent-runtime doctor'",
            ) from exc
        latency_ms = (time.perf_counter() - start) * 1000
        meta = getattr(reply, "response_metadata", None) or {}
        model_name = str(meta.get("model") or meta.get("model_name") or self.model_id)
        return reply, latency_ms, model_name


def reply_labels(reply: BaseMessage) -> dict[str, Any]:
    """Labels a chat model attached to its reply for the call record (``response_metadata``
    under :data:`RECORD_LABELS`), else nothing.

    An in-process model that knows more about its reply than the text says puts it here — the
    SimPhone oracle marks the calls that are no training target — so the record still comes
    from this caller, like every other one.
    """
    meta = getattr(reply, "response_metadata", None) or {}
    labels = meta.get(RECORD_LABELS)
    return dict(labels) if isinstance(labels, dict) else {}


def reask_seed(seed: int, attempt: int) -> int:
    """The sampling seed of re-ask ``attempt`` of a chat model seeded with ``seed``: a hash of
    both (31 bits), so no two rollouts' or attempts' streams coincide by arithmetic accident.

    >>> reask_seed(7, 1) == reask_seed(7, 1) != reask_seed(8, 1)
    True
    """
    digest = hashlib.sha256(f"{seed}/reask/{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def rl_fields(reply: BaseMessage, sampling: dict[str, Any] | None = None) -> dict[str, Any]:
    """What online RL needs from a reply, when the model was asked for it (else nothing).

    A chat model built with ``logprobs=True, return_token_ids=True`` (vLLM's fields, also
    answered by ``agent-runtime serve`` and the in-process backend) returns the prompt's token
    ids as the server tokenised them (image placeholders expanded), the completion's token ids
    and each sampled token's log-probability. They are kept under ``extra["rl"]`` — log-probs as
    plain floats — with the finish reason; ``truncated`` flags a reply cut by ``max_tokens``.
    ``sampling`` is the ``temperature`` and ``seed`` the call actually sampled with (a re-ask
    may differ from the model's own, :meth:`RoleCaller.sampling`): the trainer keeps out of the
    loss a call sampled at another temperature than the one its loss assumes.
    """
    meta = getattr(reply, "response_metadata", None) or {}
    if meta.get("token_ids") is None and meta.get("logprobs") is None:
        return {}
    logprobs = meta.get("logprobs")
    finish = meta.get("finish_reason")
    return {
        "rl": {
            "prompt_token_ids": meta.get("prompt_token_ids"),
            "token_ids": meta.get("token_ids"),
            "logprobs": None if logprobs is None else [float(e["logprob"]) for e in logprobs],
            "finish_reason": finish,
            "truncated": finish == "length",
            "temperature": (sampling or {}).get("temperature"),
            "seed": (sampling or {}).get("seed"),
        }
    }


def _encode_image(png: bytes, model_config: ModelConfig) -> tuple[dict[str, Any], Size]:
    """Resize with the model's budget and encode in its ``image_format``, once per screenshot
    (shared LRU cache: every role that sends the same screenshot reuses the one encode)."""
    from agent_runtime.models.images import encode_for

    encoded = encode_for(png, model_config)
    return encoded.part(), encoded.size
