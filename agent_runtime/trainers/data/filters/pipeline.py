"""The filter pipeline each role's training data goes through, and its settings.

Order and per-role choice (Mobile-Agent-v3 §2.2.3):

=============  ========  =======  ===========  =========  =====  ========
role           validity  outcome  consistency  reflector  dedup  reweight
=============  ========  =======  ===========  =========  =====  ========
manager        yes       yes      —            —          yes    yes
worker         yes       yes      yes          —          yes    yes
reflector      yes       —        —            yes        yes    —
notetaker      yes       yes      —            —          yes    yes
=============  ========  =======  ===========  =========  =====  ========

The Reflector skips the success filter: its useful negatives come from steps that failed, often in
runs that failed, and the balancing rule decides which of its judgements to trust. Re-weighting
runs last because it duplicates samples, and not for the Reflector, whose classes were just
balanced.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from pydantic import BaseModel, Field

from agent_runtime.trainers.data.filters import SampleFilter
from agent_runtime.trainers.data.filters.consistency import filter_consistency
from agent_runtime.trainers.data.filters.dedup import filter_duplicates
from agent_runtime.trainers.data.filters.outcome import DEFAULT_CRITIC_THRESHOLD, filter_outcome
from agent_runtime.trainers.data.filters.reflector import filter_reflector
from agent_runtime.trainers.data.filters.reweight import filter_reweight
from agent_runtime.trainers.data.filters.validity import filter_valid

FILTER_NAMES = ("validity", "outcome", "consistency", "reflector", "dedup", "reweight")


class FilterSettings(BaseModel):
    """Knobs of the default pipeline (every field is a ``distill`` option)."""

    critic_threshold: float = Field(
        DEFAULT_CRITIC_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="τ_c: minimum step critic score (GOOD 1, NEUTRAL 0.5, HARMFUL 0)",
    )
    require_success: bool = Field(True, description="keep only samples from successful runs")
    require_trajectory_correct: bool = Field(
        True, description="drop runs the trajectory critic judged Incorrect"
    )
    missing_critic: Literal["keep", "drop"] = Field(
        "keep", description="samples of steps without a critic label"
    )
    coord_tolerance: float = Field(
        30.0, gt=0, description="model-space distance for coordinates in a thought"
    )
    min_weight: float = Field(0.5, ge=0.0, description="re-weighting weight of a task solved every time")
    max_weight: float = Field(2.0, ge=0.0, description="re-weighting weight of a task never solved")
    balance_reflector: bool = Field(True, description="equalise Reflector positives and negatives")
    skip: list[str] = Field(
        default_factory=list, description=f"filters to leave out: {', '.join(FILTER_NAMES)}"
    )
    seed: int = 0


def default_pipeline(role: str, settings: FilterSettings, rates: dict[str, float]) -> list[SampleFilter]:
    """The filters for ``role`` (table in the module docstring), minus ``settings.skip``.

    ``rates`` are task success rates over the *unfiltered* samples (see
    :func:`~agent_runtime.trainers.data.filters.reweight.success_rates`).
    """
    s = settings
    steps: list[tuple[str, SampleFilter]] = [("validity", filter_valid)]
    if role != "reflector":
        steps.append(
            (
                "outcome",
                partial(
                    filter_outcome,
                    critic_threshold=s.critic_threshold,
                    require_success=s.require_success,
                    require_trajectory_correct=s.require_trajectory_correct,
                    missing_critic=s.missing_critic,
                ),
            )
        )
    if role == "worker":
        steps.append(("consistency", partial(filter_consistency, coord_tolerance=s.coord_tolerance)))
    if role == "reflector":
        steps.append(("reflector", partial(filter_reflector, balance=s.balance_reflector, seed=s.seed)))
    steps.append(("dedup", filter_duplicates))
    if role != "reflector":
        steps.append(
            (
                "reweight",
                partial(
                    filter_reweight,
                    rates=rates,
                    min_weight=s.min_weight,
                    max_weight=s.max_weight,
                    seed=s.seed,
                ),
            )
        )
    return [f for name, f in steps if name not in s.skip]
