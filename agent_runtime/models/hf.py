"""Loading Hugging Face vision-language checkpoints without torchvision.

transformers 5 builds ``Qwen2_5_VLProcessor`` with a video processor, and that video processor
needs torchvision, which we do not install (it breaks the CPU torch). GUI agents never send
video, so :class:`ImageOnlyQwen2_5_VLProcessor` drops it. ``AutoProcessor`` only finds that class
once it is registered — unregistered, ``AutoProcessor.from_pretrained`` silently returns just the
tokenizer — so every process that loads a model directory must go through :func:`load_processor`
(server, trainers, the in-process backend), which registers first and checks what it got.

This module imports transformers at import time; import it lazily.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from transformers import AutoModelForImageTextToText, AutoProcessor, Qwen2_5_VLConfig
from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
from transformers.processing_utils import ProcessorMixin

from agent_runtime.errors import ModelError

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


def _model_type(path: Path) -> str | None:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return None


def load_processor(path: str | Path, **kwargs: Any) -> ProcessorMixin:
    """The processor of a model directory, image-only when video support is unavailable.

    Raises :class:`ModelError` instead of returning a bare tokenizer, which is what
    ``AutoProcessor`` does when it cannot build the full processor.
    """
    register_processors()
    where = Path(path).expanduser()
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
        raise ModelError(
            f"{where} has no image processor (got {type(processor).__name__})",
            hint="a vision-language model directory needs processor_config.json next to its tokenizer",
        )
    return processor


def load_model(path: str | Path, *, device_map: str | None = None, dtype: str = "auto") -> Any:
    """An image-text-to-text model in eval mode.

    ``device_map=None`` means ``"auto"`` (spread over the GPUs) when CUDA is available and the
    CPU otherwise; pass ``"cpu"`` to force the CPU.
    """
    import torch

    where = Path(path).expanduser()
    kwargs: dict[str, Any] = {"dtype": dtype}
    if device_map is None and torch.cuda.is_available():
        device_map = "auto"
    if device_map and device_map != "cpu":
        kwargs["device_map"] = device_map
    try:
        model = AutoModelForImageTextToText.from_pretrained(str(where), **kwargs)
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"cannot load the model in {where}: {exc}",
            hint="the directory must hold config.json and weights from save_pretrained",
        ) from exc
    return model.eval()
