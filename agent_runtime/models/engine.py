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

**Batched decoding.** Text-only Llama-family models (the demo model, SmolLM, Qwen2/3 text) are
decoded by a :class:`~agent_runtime.models.batching.Batcher`: concurrent calls share one forward
per token, a finished prompt's cache is reused by the next prompt that starts the same way, and
``precision`` picks the weights (:mod:`agent_runtime.models.decoder`): ``"exact"`` (the model's
own modules: the trainers, online-RL rollouts, IRR) or ``"fast"`` (frozen packs: ``run``, ``eval``,
``serve --precision fast``). The fast packs' number formats are decided when the engine starts, by
what the processor can do (:mod:`agent_runtime.models.cpu_formats`: float32 products where bfloat16
would be emulated, the 4-bit decode kernel where it wins); ``formats`` overrides that. Other models
(vision-language ones included) keep transformers' ``generate``, one request at a time.

This module imports torch at import time; import it lazily.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import StoppingCriteria, StoppingCriteriaList
from transformers.convert_slow_tokenizer import bytes_to_unicode

from agent_runtime.errors import ModelError
from agent_runtime.models.cancel import CANCEL_POLL_S, current_cancel, raise_if_cancelled
from agent_runtime.models.cpu_formats import KernelFormats, current
from agent_runtime.models.decoder import Precision
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
from agent_runtime.models.model_ref import ModelRef
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
        path: str | Path | ModelRef,
        *,
        served_name: str | None = None,
        device_map: str | None = None,
        dtype: str = "auto",
        precision: Precision = "exact",
        batching: bool = True,
        max_batch: int | None = None,
        max_cache_mb: float | None = None,
        lookup_tokens: int | None = None,
        formats: KernelFormats | None = None,
    ) -> None:
        ref = ModelRef.parse(path)
        self.source = str(path)
        self.precision: Precision = precision
        self.batching = batching
        self.max_batch = max_batch
        #: The batched key/value cache's bound in MiB; None: the CPU's default
        #: (:data:`~agent_runtime.models.batching.DEFAULT_CPU_CACHE_MB`), no bound on a GPU.
        self.max_cache_mb = max_cache_mb
        #: Lookup decoding's draft tokens per forward; None: the batcher's default
        #: (:data:`~agent_runtime.models.batching.DEFAULT_LOOKUP`), 0: off.
        self.lookup_tokens = lookup_tokens
        self.path = resolve_model_dir(ref)
        if not self.path.is_dir():
            raise ModelError(
                f"model directory {self.path} does not exist",
                hint="build a test model with: python -m agent_runtime.testing.tiny_vlm DIR",
            )
        self.served_name = served_name or default_served_name(ref)
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
        #: The fast packs' number formats (module docstring); None where nothing is packed.
        self.formats: KernelFormats | None = formats
        if (
            formats is None
            and precision == "fast"
            and batching
            and self.text_only
            and self.model.device.type == "cpu"
        ):
            self.formats = current()
        self.context_length = context_length(self.model.config)  # tokens; prompts beyond it are a 400
        self.adapters: dict[str, str] = {}
        self._lock = threading.RLock()  # re-entered: the batcher steps under it
        self._tok_lock = threading.Lock()  # the fast tokenizer is not safe to share between threads
        self._batcher: Any = None
        self._batched_model: Any = None
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
            if self._batcher is not None:
                self._batcher.decoder.forget_adapter(_peft_name(name))
                self._batcher.forget_prefixes(_peft_name(name))

    def _select(self, requested: str | None) -> str | None:
        """The adapter a request's ``model`` names (None = the base model)."""
        if requested in (None, "", self.served_name, str(self.path), self.source):
            return None
        if requested in self.adapters:
            return requested
        raise UnknownModel(f"The model `{requested}` does not exist.")

    def _activate(self, peft_name: str | None) -> None:
        """Make the model's own modules compute with one adapter (PEFT's name), or none."""
        if not self.adapters:
            return
        if peft_name is None:
            self.model.disable_adapters()
        else:
            self.model.enable_adapters()
            self.model.set_adapter(peft_name)

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
        batcher = None if images else self._batcher_for_model()
        if batcher is not None:
            return self._chat_batched(batcher, req, messages, adapter, cancel)
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
                kwargs.update(temperature=req.temperature, top_p=req.top_p, top_k=max(0, req.top_k or 0))
            if self.suppressed_ids:
                kwargs["suppress_tokens"] = list(self.suppressed_ids)
            if req.stop_list:
                kwargs.update(stop_strings=req.stop_list, tokenizer=self.tokenizer)
            if req.seed is not None:
                torch.manual_seed(req.seed)
            if cancel is not None:
                kwargs["stopping_criteria"] = StoppingCriteriaList([_StopOnCancel(cancel)])
            self._activate(None if adapter is None else _peft_name(adapter))
            out = self.model.generate(**inputs, **kwargs)
            raise_if_cancelled(cancel, f"generation by {self.served_name}")  # no half reply
            logits = out.logits if req.logprobs else None
            choices = []
            for i in range(req.n):
                row = 0 if greedy else i
                ids = self._until_end(out.sequences[row, prompt_len:].tolist())
                scored = None if logits is None else _scored(logits, row, ids, req.top_logprobs or 0)
                choices.append(
                    self._choice(i, ids, req, scored, finished=ids[-1:] != [] and ids[-1] in self._end_ids)
                )
        return self._response(req, adapter, inputs["input_ids"][0].tolist(), choices)

    def _response(
        self, req: ChatCompletionRequest, adapter: str | None, prompt_ids: list[int], choices: list[Choice]
    ) -> ChatCompletionResponse:
        completion = sum(len(c.token_ids or []) for c in choices)
        usage = Usage(
            prompt_tokens=len(prompt_ids),
            completion_tokens=completion,
            total_tokens=len(prompt_ids) + completion,
        )
        if not req.return_token_ids:
            choices = [c.model_copy(update={"token_ids": None}) for c in choices]
        return ChatCompletionResponse(
            model=adapter or self.served_name,
            choices=choices,
            usage=usage,
            prompt_token_ids=prompt_ids if req.return_token_ids else None,
        )

    # --- batched decoding ------------------------------------------------------------------------

    def _batcher_for_model(self) -> Any:
        """The batcher for the current model (rebuilt when a trainer swaps ``self.model``), or
        None when this model is decoded by ``generate`` (module docstring)."""
        if not self.batching or not self.text_only:
            return None
        with self._lock:
            if self._batcher is not None and self._batched_model is self.model:
                return self._batcher
            from agent_runtime.models.batching import (
                DEFAULT_CPU_CACHE_MB,
                DEFAULT_LOOKUP,
                DEFAULT_MAX_BATCH,
                Batcher,
            )
            from agent_runtime.models.decoder import SlotDecoder, supports

            if supports(self.model) is not None:
                self.batching = False
                return None
            if self._batcher is not None:
                self._batcher.close()
            self._batcher = Batcher(
                SlotDecoder(self.model, self.precision, self.formats),
                end_ids=self._end_ids,
                decode_text=self._decode_locked,
                activate=self._activate_for_batch,
                lock=self._lock,
                max_batch=self.max_batch or DEFAULT_MAX_BATCH,
                max_cache_mb=self.max_cache_mb
                or (DEFAULT_CPU_CACHE_MB if self.model.device.type == "cpu" else None),
                context_length=self.context_length,
                lookup=DEFAULT_LOOKUP if self.lookup_tokens is None else self.lookup_tokens,
                name=self.served_name,
            )
            self._batched_model = self.model
            return self._batcher

    def _activate_for_batch(self, adapter: str | None) -> None:
        """Before a batch of ``adapter``'s requests: eval mode (no LoRA dropout while sampling
        what the trainer will score in eval mode) and, for the model's own modules, the adapter
        (``adapter`` is PEFT's name for it)."""
        if self.model.training:
            self.model.eval()
        if self._batcher is None or self._batcher.decoder.precision == "exact":
            self._activate(adapter)

    def _chat_batched(
        self,
        batcher: Any,
        req: ChatCompletionRequest,
        messages: list[dict[str, Any]],
        adapter: str | None,
        cancel: threading.Event | None,
    ) -> ChatCompletionResponse:
        from agent_runtime.models.batching import Sampling

        raise_if_cancelled(cancel, f"generation by {self.served_name}")
        with self._tok_lock:
            prompt_ids = self._encode(messages, [])["input_ids"][0].tolist()
        check_context(len(prompt_ids), req, self.context_length)
        greedy = req.temperature == 0.0
        sampling = Sampling(
            max_tokens=req.token_limit or DEFAULT_MAX_TOKENS,
            temperature=req.temperature,
            top_p=req.top_p,
            top_k=max(0, req.top_k or 0),
            seed=req.seed,
            n=1 if greedy else req.n,  # greedy choices are all the same one
            stop=tuple(req.stop_list),
            suppress=tuple(self.suppressed_ids),
            logprobs=req.logprobs,
            top_logprobs=req.top_logprobs or 0,
        )
        results = batcher.generate(
            prompt_ids, sampling, adapter=None if adapter is None else _peft_name(adapter), cancel=cancel
        )
        with self._tok_lock:
            choices = []
            for i in range(req.n):
                got = results[0 if greedy else i]
                scored = None
                if got.logprobs is not None and got.top_logprobs is not None:
                    scored = list(zip(got.token_ids, got.logprobs, got.top_logprobs, strict=True))
                choices.append(
                    self._choice(i, got.token_ids, req, scored, finished=got.finish_reason == "stop")
                )
        return self._response(req, adapter, prompt_ids, choices)

    def weights_changed(self) -> None:
        """The model's weights were updated in place (an RL step): cached prefixes are stale."""
        if self._batcher is not None:
            self._batcher.forget_prefixes(everything=True)

    def _decode_locked(self, ids: list[int]) -> str:
        with self._tok_lock:
            return self._decode(ids)

    def close(self) -> None:
        """Stop the batcher's thread (the engine then decodes with ``generate`` if asked again)."""
        if self._batcher is not None:
            self._batcher.close()
            self._batcher = None

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

    def _until_end(self, row: list[int]) -> list[int]:
        """A generated row up to its first end token (which counts, as in vLLM)."""
        end = next((k for k, t in enumerate(row) if t in self._end_ids), None)
        return row if end is None else row[: end + 1]

    def _choice(
        self,
        index: int,
        ids: list[int],
        req: ChatCompletionRequest,
        scored: list[tuple[int, float, list[tuple[int, float]]]] | None,
        *,
        finished: bool,
    ) -> Choice:
        """One choice; ``scored`` is (token, log-prob, top alternatives) per token when asked.
        ``token_ids`` is always filled (callers may drop it)."""
        text = self._decode(ids, skip_special_tokens=True)
        finish: Literal["stop", "length"] = "stop" if finished else "length"
        for stop in req.stop_list:
            cut = text.find(stop)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        logprobs = None
        if scored is not None:
            logprobs = ChoiceLogprobs(
                content=[self._token_logprob(tok, lp, tops) for tok, lp, tops in scored]
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

    def _token_logprob(self, token: int, logprob: float, tops: list[tuple[int, float]]) -> TokenLogprob:
        """One token's entry: its log-probability under the raw distribution (vLLM's default)."""

        def entry(tid: int, value: float) -> TopLogprob:
            return TopLogprob(token=self._decode([tid]), logprob=value, bytes=self._token_bytes(tid))

        first = entry(token, logprob)
        return TokenLogprob(
            token=first.token,
            logprob=first.logprob,
            bytes=first.bytes,
            top_logprobs=[entry(t, v) for t, v in tops],
        )


def _scored(
    logits: tuple[torch.Tensor, ...], row: int, ids: list[int], top: int
) -> list[tuple[int, float, list[tuple[int, float]]]]:
    """(token, log-prob, top alternatives) per generated token from ``generate``'s raw logits."""
    out = []
    for k, tok in enumerate(ids):
        lp = torch.log_softmax(logits[k][row].float(), dim=-1)
        tops = [(int(i), float(lp[i])) for i in torch.topk(lp, top).indices] if top else []
        out.append((tok, float(lp[tok]), tops))
    return out


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
