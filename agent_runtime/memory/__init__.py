"""Memory for the agent: the user's documents, experience from past runs, and web search.

The public surface is small and cheap to import; chromadb, sentence-transformers and ddgs load
only when a function below first needs them.

* :func:`build_knowledge` — the RAG node: instruction → :class:`~agent_runtime.role_outputs.RagOutput`
  (K_RAG for the Manager's first plan). Never raises for store, model or network failures.
* :func:`record_run` — after a finished run: distil its trajectory into guidance (or a caution).
* :func:`recall` — guidance records of past tasks similar to a new one.
* :class:`MemoryStore` — the persistent chromadb store (``agent-runtime memory`` uses it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_runtime.config import MemoryConfig
    from agent_runtime.memory.experience import Guidance
    from agent_runtime.memory.store import Hit, MemoryStore
    from agent_runtime.role_outputs import RagOutput
    from agent_runtime.traces import LoadedRun

__all__ = ["Guidance", "Hit", "MemoryStore", "build_knowledge", "recall", "record_run"]

_LAZY = {
    "Guidance": "agent_runtime.memory.experience",
    "Hit": "agent_runtime.memory.store",
    "MemoryStore": "agent_runtime.memory.store",
}


def build_knowledge(
    instruction: str, *, config: MemoryConfig, ask: Callable[[str], str] | None = None
) -> RagOutput:
    """K_RAG for ``instruction``; see :mod:`agent_runtime.memory.pipeline`."""
    from agent_runtime.memory.pipeline import build_knowledge as build

    return build(instruction, config=config, ask=ask)


def record_run(
    loaded_run: LoadedRun, config: MemoryConfig, ask: Callable[[str], str] | None = None
) -> Guidance | None:
    """Store a finished run's guidance; see :mod:`agent_runtime.memory.experience`."""
    from agent_runtime.memory.experience import record_run as record

    return record(loaded_run, config, ask)


def recall(task: str, config: MemoryConfig, k: int | None = None) -> list[Hit]:
    """Guidance of similar past tasks (``metadata["guidance"]``), best first, above the threshold."""
    from agent_runtime.memory.experience import recall as find

    return find(task, config, k)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_runtime.memory' has no attribute {name!r}")
