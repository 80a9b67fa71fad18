"""Settings of supervised fine-tuning on rejection-sampled role calls (Mobile-Agent-v3 §2.2.3)."""

from __future__ import annotations

from pydantic import Field

from agent_runtime.trainers.base_config import TrainConfig


class SFTConfig(TrainConfig):
    """:class:`~agent_runtime.trainers.base_config.TrainConfig` plus SFT's own fields.

    The loss covers only the completion (the role's reply), never the prompt: the prompt is the
    runtime's template and the screenshot, which the model should read, not learn to write.

    **Validation and the kept checkpoint.** With ``validation_fraction`` > 0 a seeded share of
    the rows (at most ``max_validation_rows``) is held aside; the completion loss on them is
    measured before the first step and ``evaluations`` times during training, and the weights
    saved are those with the lowest validation loss — the start's own when no step beat it.
    Continuing a converged adapter can only move it away from what it fits, so the start must be
    a candidate: an SFT stage on data the adapter already fits then returns the adapter unchanged.
    """

    completion_only_loss: bool = Field(True, description="train on the reply only, not on the prompt")
    validation_fraction: float = Field(
        0.0, ge=0.0, lt=1.0, description="share of rows held aside to pick the best checkpoint (0: none)"
    )
    max_validation_rows: int = Field(32, ge=1, description="cap on the held-aside rows (evaluation cost)")
    evaluations: int = Field(
        2, ge=1, description="validation passes during training (plus one before the first step)"
    )
