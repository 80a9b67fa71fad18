"""Settings of DPO on preference pairs (ReachAgent §4.3)."""

from __future__ import annotations

from pydantic import Field

from agent_runtime.trainers.base_config import TrainConfig


class DPOConfig(TrainConfig):
    """:class:`~agent_runtime.trainers.base_config.TrainConfig` plus DPO's own fields.

    The reference policy is the starting model (ReachAgent trains against its SFT model): start
    from a ``distill --method sft`` output to get exactly that.
    """

    learning_rate: float = Field(5e-5, gt=0, description="peak learning rate")
    beta: float = Field(0.1, gt=0, description="β: how far the policy may move from the reference")
    loss_type: str = Field("sigmoid", description="TRL DPO loss (sigmoid = the standard DPO loss)")
