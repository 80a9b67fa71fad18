"""Chat completions computed in-process with transformers.

One :class:`TransformersEngine` serves both ``agent-runtime serve`` and the in-process
``transformers:/path`` backend, and answers with the same :class:`ChatCompletionResponse` a remote
server sends, so the two paths cannot drift apart. Generation holds a lock: a model object is not
safe to run from several threads, and on CPU parallel calls would only compete for the same cores.

Text-only causal LMs are served too (their prompts carry the UI tree instead of a screenshot): a
request with image parts is refused with a 400 that says so, and the reply is otherwise the same.
``path`` may be a ``gguf:`` reference, converted once into the user cache
(:mod:`agent_runtime.models.gguf`).

**Vision special tokens** (``<|image_pad|>``, ``<|video_pad|>``, ``<|vision_start|>`` …, see
:mod:`agent_runtime.models.hf`) are never sampled from a vision-language model: they are image
placeholders, and one in a completion would be counted as an image slot when the prompt and the
completion are scored together (online RL), so generation suppresses them. Log-probs stay those
of the raw distribution (the suppressed tokens keep their share of the normaliser), as vLLM
reports them and as the RL scorer computes them, so scored and behaviour log-probs agree
exactly. Text parts of a request are untrusted: a spelled-out placeholder (from a screen, or an
earlier reply in the history) is defused before templating
(:func:`~agent_runtime.models.hf.defuse_vision_text`), or the processor would expand it into an
image slot no image fills.

A run's cancel event (Ctrl-C; :mod:`agent_runtime.models.cancel`) ends generation at the next
token with ``RunCancelled`` rather than a truncated reply.

LoRA adapters (vLLM's ``load_lora_adapter`` semantics) are attached with transformers' PEFT
integration; a request selects one by naming it as ``model``.

This module imports torch at import time; import it lazily.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList
from transformers.convert_slow_tokenizer import bytes_to_unicode

from agent_runtime.errors import ModelError
from agent_runtime.models.cancel import CANCEL_POLL_S, current_cancel, raise_if_cancelled
from agent_runtime.models.gguf import default_served_name, resolve_model_dir
from agent_runtime.models.hf import (
    defuse_vision_text,
    is_text_only,
    load_model,
    load_processor,
    load_tokenizer,
    quiet_loading,
    vision_token_ids,
)
from agent_runtime.models.images import decode_data_url
from agent_runtime.models.protocol import (
    AssistantMessage,
    BadRequest,
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChatMessage,
    Choice,
    ChoiceLogprobs,
    ImageURLPart,
    ModelCard,
    ModelList,
    TokenLogprob,
    TopLogprob,
    UnknownModel,
    Usage,
    check_context,
    context_length,
)

#: GPT-2/Qwen byte-level alphabet: printable stand-in character -> the byte it encodes.
_BYTE_OF = {ch: b for b, ch in bytes_to_unicode().items()}

#: Completion budget when a request sets none (vLLM would use the whole context).
DEFAULT_MAX_TOKENS = 512


def to_template_messages(messages: list[ChatMessage]) -> tuple[list[dict[str, Any]], list[Any]]:
    """OpenAI messages → chat-template messages with ``{"type": "image"}`` parts, plus the images.

    Images are decoded here, in message order, which is the order the processor pairs them with
    the ``<|image_pad|>`` placeholders the template writes. Text parts are untrusted: a vision
    token spelled out in them is defused (module docstring), so only image parts make image slots.
    """
    out: list[dict[str, Any]] = []
    images: list[Any] = []
    for m in messages:
        role = "system" if m.role == "developer" else m.role
        if m.content is None or isinstance(m.content, str):
            out.append({"role": role, "content": defuse_vision_text(m.content or "")})
            continue
        parts: list[dict[str, Any]] = []
        for part in m.content:
            if isinstance(part, ImageURLPart):
                try:
                    images.append(decode_data_url(part.image_url.url))
                except ValueError as exc:
                    raise BadRequest(str(exc)) from exc
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": defuse_vision_text(part.text)})
        out.append({"role": role, "content": parts})
    return out, images


def to_text_messages(messages: list[ChatMessage], model: str) -> list[dict[str, str]]:
    """OpenAI messages → plain-string chat-template messages for a text-only model.

    Text parts are joined with newlines (as vLLM does for string-content templates); an image
    part is a client configuration error, reported as such rather than silently dropped.
    """
    out: list[dict[str, str]] = []
    for m in messages:
        role = "system" if m.role == "developer" else m.role
        if m.content is None or isinstance(m.content, str):
            out.append({"role": role, "content": m.content or ""})
            continue
        if any(isinstance(part, ImageURLPart) for part in m.content):
            raise BadRequest(
                f"model {model!r} is text-only and cannot read images; "
                "set observation = 'ui_tree' for this role"
            )
        out.append({"role": role, "content": "\n".join(p.text for p in m.content)})  # type: ignore[union-attr]
    return out


class TransformersEngine:
    """A loaded model (image-text-to-text or text-only causal LM) answering chat-completion requests."""

    def __init__(
        self,
        path: str | Path,
        *,
        served_name: str | None = None,
        device_map: str | None = None,
        dtype: str = "auto",
    ) -> None:
        self.source = str(path)
        self.path = resolve_model_dir(path)
        if not self.path.is_dir():
            raise ModelError(
                f"model directory {self.path} does not exist",
                hint="build a test model with: python -m agent_runtime.testing.tiny_vlm DIR",
            )
        self.served_name = served_name or default_served_name(path)
        self.text_only = is_text_only(self.path)
        if self.text_only:
            self.tokenizer = load_tokenizer(self.path)
            if not self.tokenizer.chat_template:
                raise ModelError(
                    f"{self.path} has no chat template",
                    hint="serve an instruct model (its tokenizer config or chat_template.jinja has one)",
                )
            self.processor: Any = self.tokenizer
        else:
            self.processor = load_processor(self.path)
            self.tokenizer = self.processor.tokenizer
        self.model = load_model(self.path, device_map=device_map, dtype=dtype)
        self.context_length = context_length(self.model.config)  # tokens; prompts beyond it are a 400
        self.adapters: dict[str, str] = {}
        self._lock = threading.Lock()
        gen = self.model.generation_config
        eos = gen.eos_token_id if isinstance(gen.eos_token_id, list) else [gen.eos_token_id]
        self._end_ids = {i for i in [*eos, gen.pad_token_id, self.tokenizer.eos_token_id] if i is not None}
        self._pad_id = gen.pad_token_id if gen.pad_token_id is not None else self.tokenizer.pad_token_id
        #: Token ids generation never samples (module docstring): a VLM's vision special tokens.
        self.suppressed_ids: list[int] = (
            [] if self.text_only else vision_token_ids(self.tokenizer, getattr(self.model, "config", None))
        )

    @property
    def modality(self) -> str:
        return "text" if self.text_only else "image+text"

    @property
    def device(self) -> str:
        return str(self.model.device)

    def models(self) -> ModelList:
        cards = [ModelCard(id=self.served_name, root=str(self.path))]
        cards += [
            ModelCard(id=name, root=where, parent=self.served_name) for name, where in self.adapters.items()
        ]
        return ModelList(data=cards)

    # --- LoRA -----------------------------------------------------------------------------------

    def load_adapter(self, name: str, path: str) -> None:
        """Attach a PEFT adapter under ``name`` (as vLLM: a name already loaded is an error)."""
        if name == self.served_name or name in self.adapters:
            raise BadRequest(f"The lora adapter '{name}' has already been loaded.")
        where = Path(path).expanduser()
        if not (where / "adapter_config.json").is_file():
            raise BadRequest(f"{where} is not a PEFT adapter directory (no adapter_config.json)")
        with self._lock:
            try:
                with quiet_loading():
                    self.model.load_adapter(str(where), adapter_name=_peft_name(name))
            except (ImportError, OSError, ValueError, KeyError, RuntimeError) as exc:
                raise BadRequest(f"cannot load adapter {name!r} from {where}: {exc}") from exc
            self.adapters[name] = str(where)

    def unload_adapter(self, name: str) -> None:
        if name not in self.adapters:
            raise UnknownModel(f"The lora adapter '{name}' cannot be found.")
        with self._lock:
            self.model.delete_adapter(_peft_name(name))
            del self.adapters[name]

    def _select(self, requested: str | None) -> str | None:
        """The adapter a request's ``model`` names (None = the base model)."""
        if requested in (None, "", self.served_name, str(self.path), self.source):
            return None
        if requested in self.adapters:
            return requested
        raise UnknownModel(f"The model `{requested}` does not exist.")

    def _activate(self, adapter: str | None) -> None:
        if not self.adapters:
            return
        if adapter is None:
            self.model.disable_adapters()
        else:
            self.model.enable_adapters()
            self.model.set_adapter(_peft_name(adapter))

    # --- generation -----------------------------------------------------------------------------

    def chat(self, req: ChatCompletionRequest) -> ChatCompletionResponse:
        """Answer one chat-completion request (blocking; serialised by a lock)."""
        if req.stream:
            raise BadRequest("stream=true is not supported by this server; send stream=false")
        adapter = self._select(req.model)
        messages: list[dict[str, Any]]
        images: list[Any]
        if self.text_only:
            messages, images = to_text_messages(req.messages, self.served_name), []
        else:
            messages, images = to_template_messages(req.messages)
        cancel = current_cancel()  # the run's Ctrl-C: generation stops at the next token
        # The whole call holds the lock: the fast tokenizer is not safe to share between threads
        # ("Already borrowed") and the model is not either.
        with self._locked(cancel), torch.inference_mode():
            inputs = self._encode(messages, images).to(self.model.device)
            prompt_len = int(inputs["input_ids"].shape[1])
            check_context(prompt_len, req, self.context_length)
            greedy = req.temperature == 0.0
            kwargs: dict[str, Any] = {
                "max_new_tokens": req.token_limit or DEFAULT_MAX_TOKENS,
                "do_sample": not greedy,
                "num_return_sequences": 1 if greedy else req.n,
                "pad_token_id": self._pad_id,
                "return_dict_in_generate": True,
                "output_logits": req.logprobs,
            }
            if not greedy:
                kwargs.update(temperature=req.temperature, top_p=req.top_p, top_k=0)
            if self.suppressed_ids:
                kwargs["suppress_tokens"] = list(self.suppressed_ids)
            if req.stop_list:
                kwargs.update(stop_strings=req.stop_list, tokenizer=self.tokenizer)
            if req.seed is not None:
                torch.manual_seed(req.seed)
            if cancel is not None:
                kwargs["stopping_criteria"] = StoppingCriteriaList([_StopOnCancel(cancel)])
            self._activate(adapter)
            out = self.model.generate(**inputs, **kwargs)
            raise_if_cancelled(cancel, f"generation by {self.served_name}")  # no half reply
            logits = out.logits if req.logprobs else None
            choices = [
                self._choice(
                    i,
                    out.sequences[0 if greedy else i, prompt_len:].tolist(),
                    req,
                    logits,
                    0 if greedy else i,
                )
                for i in range(req.n)
            ]
        completion = sum(len(c.token_ids or []) for c in choices)
        usage = Usage(
            prompt_tokens=prompt_len, completion_tokens=completion, total_tokens=prompt_len + completion
        )
        if not req.return_token_ids:
            choices = [c.model_copy(update={"token_ids": None}) for c in choices]
        return ChatCompletionResponse(
            model=adapter or self.served_name,
            choices=choices,
            usage=usage,
            prompt_token_ids=inputs["input_ids"][0].tolist() if req.return_token_ids else None,
        )

    @contextlib.contextmanager
    def _locked(self, cancel: threading.Event | None) -> Iterator[None]:
        """Hold the generation lock; a cancelled run stops waiting for it (another run's call
        may hold it) within :data:`~agent_runtime.models.cancel.CANCEL_POLL_S`."""
        while not self._lock.acquire(timeout=CANCEL_POLL_S if cancel is not None else -1):
            raise_if_cancelled(cancel, f"generation by {self.served_name}")
        try:
            raise_if_cancelled(cancel, f"generation by {self.served_name}")
            yield
        finally:
            self._lock.release()

    def _encode(self, messages: list[dict[str, Any]], images: list[Any]) -> Any:
        """Chat template + tokenization (+ image preprocessing) → model inputs."""
        try:
            prompt = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            if self.text_only:
                # The template already wrote any BOS it wants (as apply_chat_template(tokenize=True)).
                return self.tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
            return self.processor(text=[prompt], images=images or None, return_tensors="pt")
        except (ValueError, TypeError, KeyError) as exc:
            raise BadRequest(f"cannot build the prompt: {exc}") from exc

    def _choice(
        self,
        index: int,
        row: list[int],
        req: ChatCompletionRequest,
        logits: tuple[torch.Tensor, ...] | None,
        batch_row: int,
    ) -> Choice:
        """One choice from a generated row; ``token_ids`` is always filled (callers may drop it)."""
        end = next((k for k, t in enumerate(row) if t in self._end_ids), None)
        ids = row if end is None else row[: end + 1]  # the end token counts, as in vLLM
        text = self._decode(ids, skip_special_tokens=True)
        finish = "stop" if end is not None else "length"
        for stop in req.stop_list:
            cut = text.find(stop)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        logprobs = None
        if logits is not None:
            logprobs = ChoiceLogprobs(
                content=[
                    self._token_logprob(logits[k][batch_row], tok, req.top_logprobs or 0)
                    for k, tok in enumerate(ids)
                ]
            )
        return Choice(
            index=index,
            message=AssistantMessage(content=text),
            finish_reason=finish,
            logprobs=logprobs,
            token_ids=ids,
        )

    def _decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """The text of one sequence (``decode`` is typed for a batch too; one list gives one str)."""
        text = self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
        if not isinstance(text, str):
            raise TypeError(f"tokenizer.decode returned {type(text).__name__} for one sequence")
        return text

    def _token_bytes(self, tid: int) -> list[int]:
        """The raw bytes of a token: byte-level BPE tokens can hold half a UTF-8 character."""
        piece = self.tokenizer.convert_ids_to_tokens(tid)
        if piece and all(ch in _BYTE_OF for ch in piece):
            return [_BYTE_OF[ch] for ch in piece]
        return list(self._decode([tid]).encode("utf-8"))

    def _token_logprob(self, step_logits: torch.Tensor, token: int, top: int) -> TokenLogprob:
        """The log-probability of ``token`` under the model's raw distribution (vLLM's default)."""
        lp = torch.log_softmax(step_logits.float(), dim=-1)

        def entry(tid: int) -> TopLogprob:
            return TopLogprob(token=self._decode([tid]), logprob=float(lp[tid]), bytes=self._token_bytes(tid))

        tops = [entry(int(t)) for t in torch.topk(lp, top).indices] if top else []
        first = entry(token)
        return TokenLogprob(token=first.token, logprob=first.logprob, bytes=first.bytes, top_logprobs=tops)


class _StopOnCancel(StoppingCriteria):
    """Ends generation at the next token once the run's cancel event is set."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        stop = self.cancel.is_set()
        return torch.full((input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device)  # type: ignore[return-value]


def _peft_name(name: str) -> str:
    """PEFT's name for a served adapter: served names are free text (paths, ``v1.2``), but PEFT
    names become module names, which may not contain dots."""
    import hashlib

    return "lora_" + hashlib.sha1(name.encode("utf-8")).hexdigest()[:16]
