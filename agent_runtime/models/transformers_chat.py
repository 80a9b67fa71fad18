"""The in-process backend: ``model = "transformers:/path/to/model"``.

Runs a local checkpoint with transformers, no server needed (CPU demos, tests, one-GPU boxes).
Requests go through the same OpenAI-shaped body and reply as the HTTP backend
(:class:`~agent_runtime.models.engine.TransformersEngine` produces the reply a server would), so
roles cannot tell the backends apart. Engines are shared per (path, device map, dtype): several
roles naming one checkpoint load it once.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, PrivateAttr, ValidationError

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError, DependencyError, ModelError
from agent_runtime.models.base import OpenAIShapedChatModel

if TYPE_CHECKING:
    from agent_runtime.models.engine import TransformersEngine

PREFIX = "transformers:"
_engines: dict[tuple[str, str | None, str], TransformersEngine] = {}
_engines_lock = threading.Lock()


def shared_engine(
    path: str | Path, *, device_map: str | None = None, dtype: str = "auto"
) -> TransformersEngine:
    """The process-wide engine for a checkpoint, loaded on first use."""
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, "train", "the in-process transformers backend")
    where = str(Path(path).expanduser().resolve())
    key = (where, device_map, dtype)
    with _engines_lock:
        if key not in _engines:
            from agent_runtime.models.engine import TransformersEngine

            _engines[key] = TransformersEngine(where, device_map=device_map, dtype=dtype)
        return _engines[key]


class TransformersChatModel(OpenAIShapedChatModel):
    """A local image-text-to-text checkpoint behind the chat-model interface."""

    path: str = Field(description="directory written by save_pretrained")
    device_map: str | None = Field(None, description="None: 'auto' on CUDA machines, else CPU")
    dtype: str = Field("auto", description="torch dtype name, or 'auto' for the checkpoint's")

    _engine: TransformersEngine | None = PrivateAttr(None)

    @classmethod
    def from_config(cls, cfg: ModelConfig, **overrides: Any) -> TransformersChatModel:
        if not cfg.model.startswith(PREFIX):
            raise ConfigError(f"model {cfg.model!r} is not a transformers: model")
        path = cfg.model.removeprefix(PREFIX)
        if not path:
            raise ConfigError(
                "model = 'transformers:' needs a path", hint="model = 'transformers:/path/to/model'"
            )
        fields = {"path": path, "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        return cls(**(fields | overrides))

    @property
    def engine(self) -> TransformersEngine:
        if self._engine is None:
            self._engine = shared_engine(self.path, device_map=self.device_map, dtype=self.dtype)
        return self._engine

    @property
    def _llm_type(self) -> str:
        return "transformers-in-process"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"path": self.path, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def _model_id(self) -> str:
        return self.engine.served_name

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
