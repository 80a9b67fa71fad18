"""Settings of Iterative Reasoning Refinement (MobileRL §4.2)."""

from __future__ import annotations

from pydantic import Field

from agent_runtime.trainers.base_config import TrainConfig
from agent_runtime.trainers.data.worker_prompts import PromptSettings


class IRRConfig(TrainConfig):
    """:class:`~agent_runtime.trainers.base_config.TrainConfig` plus IRR's sampling and stopping rules.

    Round 0 samples ``k`` (reasoning, action) replies per expert step from the base model and keeps
    every reply whose action matches the expert's; each later round samples from the model the
    previous round trained and keeps, per step, the best matching reply (highest
    ``mean log-prob − conciseness_weight · words``). Rounds stop when the match rate improves by
    less than ``min_improvement``, or after ``max_rounds``.
    """

    prompt: PromptSettings = Field(default_factory=PromptSettings, description="how the Worker is prompted")
    k: int = Field(8, ge=1, le=16, description="replies sampled per expert step")
    max_rounds: int = Field(3, ge=1, le=20, description="sampling + fine-tuning rounds at most")
    min_improvement: float = Field(
        0.02, ge=0.0, le=1.0, description="match-rate gain below which rounds stop"
    )
    temperature: float = Field(1.0, gt=0.0, le=2.0, description="sampling temperature")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="nucleus sampling")
    max_new_tokens: int = Field(384, ge=8, description="longest sampled reply")
    conciseness_weight: float = Field(0.01, ge=0.0, description="score penalty per word of the reasoning")
    match_tolerance: float = Field(
        40.0, gt=0, description="pixels a touch may miss by when no element is known"
    )
