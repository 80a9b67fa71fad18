"""The self-evolving loop behind ``agent-runtime evolve`` (see :mod:`.pipeline`).

The options load with the package; the pipeline (and the training stack behind it) on first use
of one of its names, so ``evolve --help`` and option checking do not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_runtime.trainers.evolve.options import EvolveOptions, Recipe, Stage

if TYPE_CHECKING:
    from agent_runtime.trainers.evolve.pipeline import Evolution, EvolveState, Promotion, decide

_PIPELINE = ("Evolution", "EvolveState", "Promotion", "decide")


def __getattr__(name: str) -> Any:
    if name in _PIPELINE:
        return getattr(importlib.import_module("agent_runtime.trainers.evolve.pipeline"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EvolveOptions", "EvolveState", "Evolution", "Promotion", "Recipe", "Stage", "decide"]
