"""The self-evolving loop behind ``agent-runtime evolve`` (see :mod:`.pipeline`)."""

from agent_runtime.trainers.evolve.options import EvolveOptions, Recipe, Stage
from agent_runtime.trainers.evolve.pipeline import Evolution, EvolveState, Promotion, decide

__all__ = ["EvolveOptions", "EvolveState", "Evolution", "Promotion", "Recipe", "Stage", "decide"]
