"""Settings of supervised fine-tuning on rejection-sampled role calls (Mobile-Agent-v3 §2.2.3)."""

from __future__ import annotations

from pydantic import Field

from agent_runtime.trainers.base_config import TrainConfig


class SFTConfig(TrainConfig):
    """:class:`~agent_runtime.trainers.base_config.TrainConfig` plus SFT's own fields.

    The loss covers only the completion (the role's reply), never the prompt: the prompt is the
    runtime's template and the screenshot, which the model should read, not learn to write.
    """

    completion_only_loss: bool = Field(True, description="train on the reply only, not on the prompt")
