"""Loading Hugging Face checkpoints: vision-language models without torchvision, and text-only LMs.

transformers 5 builds ``Qwen2_5_VLProcessor`` with a video processor, and that video processor
needs torchvision, which we do not install (it breaks the CPU torch). GUI agents never send
video, so :class:`ImageOnlyQwen2_5_VLProcessor` drops it. ``AutoProcessor`` only finds that class
once it is registered — unregistered, ``AutoProcessor.from_pretrained`` silently returns just the
tokenizer — so every process that loads a model directory must go through :func:`load_processor`
(server, trainers, the in-process backend), which registers first and checks what it got.

Text-only causal LMs (a config without ``vision_config``, such as a GGUF base converted by
:mod:`agent_runtime.models.gguf`) have a tokenizer instead of a processor: :func:`is_text_only`
tells them apart, :func:`load_processing_class` returns whichever the model has, and
:func:`load_model` picks ``AutoModelForCausalLM`` or ``AutoModelForImageTextToText``. Every loader
also accepts a ``gguf:`` reference.

**Vision special tokens** (:data:`VISION_TOKEN_TEXTS`) are the model's image placeholders and
frames: ``<|image_pad|>``/``<|video_pad|>`` are what the processor expands and the model fills
with image features, counted over the whole sequence. They are never valid *output* of a GUI
agent, and text that merely spells one must not become one: :func:`vision_token_ids` lists the
ids that sampling suppresses, :func:`defuse_vision_text` breaks the spelling in untrusted text
(prompts' text parts, completions) so the tokenizer keeps it as plain text — serving and every
training data path apply the same function, so a model is trained on the prompts it is served.

This module imports transformers at import time; import it lazily.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transformers import (
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoProcessor,
    AutoTokenizer,
    PreTrainedTokenizerBase,
    Qwen2_5_VLConfig,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
from transformers.processing_utils import ProcessorMixin

from agent_runtime.errors import ModelError
from agent_runtime.models.gguf import resolve_model_dir

#: Qwen-style (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) vision special tokens (module docstring).
VISION_TOKEN_TEXTS = (
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
#: Inserted after the ``<`` of a vision token's spelling: invisible, and no longer the special token.
_DEFUSER = "\u200b"

_registered = threading.Lock()
_done = False


class ImageOnlyQwen2_5_VLProcessor(Qwen2_5_VLProcessor):  # noqa: N801 - mirrors the transformers name
    """``Qwen2_5_VLProcessor`` without a video processor (so without torchvision).

    ``ProcessorMixin`` derives the sub-processors it saves and loads from this ``__init__``
    signature, so leaving ``video_processor`` out is what removes it.
    """

    def __init__(
        self,
        image_processor: Any = None,
        tokenizer: Any = None,
        chat_template: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


def defuse_vision_text(text: str) -> str:
    """``text`` with every spelled-out vision special token broken up (module docstring).

    >>> defuse_vision_text("see <|image_pad|> here") == "see <\u200b|image_pad|> here"
    True
    >>> defuse_vision_text("plain <|im_end|>")
    'plain <|im_end|>'
    """
    if "<|" not in text:
        return text
    for token in VISION_TOKEN_TEXTS:
        text = text.replace(token, token[0] + _DEFUSER + token[1:])
    return text


def vision_token_ids(tokenizer: Any, config: Any = None) -> list[int]:
    """Ids of the vision special tokens a tokenizer (and a model config) define, sorted.

    Reads :data:`VISION_TOKEN_TEXTS` from the tokenizer's vocabulary and ``image_token_id``,
    ``video_token_id``, ``vision_start_token_id``, ``vision_end_token_id`` from ``config``;
    empty for a text-only model without them.
    """
    size = len(tokenizer) if hasattr(tokenizer, "__len__") else None
    unk = getattr(tokenizer, "unk_token_id", None)
    ids: set[int] = set()
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    for text in VISION_TOKEN_TEXTS:
        tid = vocab.get(text)
        if isinstance(tid, int) and tid != unk:
            ids.add(tid)
    for name in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"):
        tid = getattr(config, name, None)
        if isinstance(tid, int) and tid >= 0:
            ids.add(tid)
    return sorted(i for i in ids if size is None or i < size)


def register_processors() -> None:
    """Make ``AutoProcessor`` know our processor class (idempotent, thread-safe).

    Real Qwen2.5-VL checkpoints name ``Qwen2_5_VLProcessor`` in their own config, so this only
    decides what directories that name *our* class (or none) load as.
    """
    global _done
    with _registered:
        if not _done:
            AutoProcessor.register(Qwen2_5_VLConfig, ImageOnlyQwen2_5_VLProcessor, exist_ok=True)
            _done = True


def _config(path: Path) -> dict[str, Any]:
    try:
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _model_type(path: Path) -> str | None:
    return _config(path).get("model_type")


def is_text_only(path: str | Path) -> bool:
    """Whether a model directory (or ``gguf:`` reference) is a causal LM without a vision tower.

    A config with ``vision_config`` is a vision-language model even when its type also has a
    causal-LM class (Gemma 3, Llama 4); anything unrecognised counts as vision-language, the
    path that existed before text-only models did.
    """
    cfg = _config(resolve_model_dir(path))
    return "vision_config" not in cfg and cfg.get("model_type") in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def load_tokenizer(path: str | Path, **kwargs: Any) -> PreTrainedTokenizerBase:
    """The tokenizer of a text-only model directory (or ``gguf:`` reference)."""
    where = resolve_model_dir(path)
    if not where.is_dir():
        raise ModelError(
            f"model directory {where} does not exist", hint="pass the directory save_pretrained wrote"
        )
    try:
        return AutoTokenizer.from_pretrained(str(where), **kwargs)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelError(
            f"cannot load the tokenizer of {where}: {exc}",
            hint="the directory needs tokenizer.json / tokenizer_config.json from save_pretrained",
        ) from exc


def load_processing_class(path: str | Path, **kwargs: Any) -> Any:
    """What turns chat messages into model inputs: the processor of a vision-language model, the
    tokenizer of a text-only one (TRL's ``processing_class`` accepts either)."""
    if is_text_only(path):
        return load_tokenizer(path, **kwargs)
    return load_processor(path, **kwargs)


def load_processor(path: str | Path, **kwargs: Any) -> ProcessorMixin:
    """The processor of a model directory, image-only when video support is unavailable.

    Raises :class:`ModelError` instead of returning a bare tokenizer, which is what
    ``AutoProcessor`` does when it cannot build the full processor.
    """
    register_processors()
    where = resolve_model_dir(path)
    if not where.is_dir():
        raise ModelError(
            f"model directory {where} does not exist", hint="pass the directory save_pretrained wrote"
        )
    try:
        processor = AutoProcessor.from_pretrained(str(where), **kwargs)
    except (OSError, ImportError, ValueError) as exc:
        # A stock Qwen2.5-VL checkpoint on a machine without torchvision fails on its video
        # processor; the image-only class reads the same files minus that one.
        if _model_type(where) != "qwen2_5_vl":
            raise ModelError(f"cannot load the processor of {where}: {exc}") from exc
        try:
            processor = ImageOnlyQwen2_5_VLProcessor.from_pretrained(str(where), **kwargs)
        except (OSError, ValueError) as again:
            raise ModelError(
                f"cannot load the processor of {where}: {again}",
                hint="the directory needs processor_config.json and the tokenizer files",
            ) from again
    if not isinstance(processor, ProcessorMixin) or getattr(processor, "image_processor", None) is None:
        hint = "a vision-language model directory needs processor_config.json next to its tokenizer"
        if is_text_only(where):
            hint = "this is a text-only model: load its tokenizer with load_processing_class() instead"
        raise ModelError(f"{where} has no image processor (got {type(processor).__name__})", hint=hint)
    return processor


@contextmanager
def quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bars while a model or adapter loads inside a run's output."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def load_model(path: str | Path, *, device_map: str | None = None, dtype: str = "auto") -> Any:
    """The model in eval mode: image-text-to-text, or a causal LM for a text-only directory.

    ``path`` may be a ``gguf:`` reference (converted once, then loaded from the cache).
    ``device_map=None`` means ``"auto"`` (spread over the GPUs) when CUDA is available and the
    CPU otherwise; pass ``"cpu"`` to force the CPU.
    """
    import torch

    where = resolve_model_dir(path)
    auto = AutoModelForCausalLM if is_text_only(where) else AutoModelForImageTextToText
    kwargs: dict[str, Any] = {"dtype": dtype}
    if device_map is None and torch.cuda.is_available():
        device_map = "auto"
    if device_map and device_map != "cpu":
        kwargs["device_map"] = device_map
    try:
        with quiet_loading():
            model = auto.from_pretrained(str(where), **kwargs)
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"cannot load the model in {where}: {exc}",
            hint="the directory must hold config.json and weights from save_pretrained",
        ) from exc
    return model.eval()
