"""Settings every online RL method shares (GRPO, TRPO, DGRPO): sampling, the clipped loss, updates.

Subclasses (:mod:`agent_runtime.trainers.hi_agent.grpo_config`, :mod:`.trpo_config`,
:mod:`.dgrpo_config`) set the defaults of their paper. Each field's ``description`` is its help
text, as in the other trainer configs.

Two shared choices, with their reasons:

* ``step_weighting`` — how a step's loss is weighted by its trajectory's length T.
  ``"inverse_length"`` (1/T) is TRPO's: Mobile-Agent-v3 scales "the loss computed for each
  step-wise instance … by the total number of steps in its original, complete trajectory" to
  *balance* trajectories of different lengths; only dividing balances them (each trajectory's
  steps then weigh 1 in total), multiplying by T would favour long trajectories even more.
  ``"length"`` (×T) is there for the literal reading; ``"none"`` weighs every step alike, which
  is DGRPO's (SPA counters the long-trajectory bias through the reward instead).
* ``loss_aggregation`` — ``"step_token_mean"``: mean over a step's completion tokens, then the
  weighted mean over steps (GRPO's 1/|o_i| per sample); ``"batch_token_mean"``: the weighted sum
  over all tokens divided by the weighted token count, TRPO's 1/N over the batch's tokens.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_runtime.trainers.base_config import TrainConfig

StepWeighting = Literal["inverse_length", "length", "none"]
LossAggregation = Literal["step_token_mean", "batch_token_mean"]


class OnlineRLConfig(TrainConfig):
    """:class:`~agent_runtime.trainers.base_config.TrainConfig` plus the online RL core's fields."""

    learning_rate: float = Field(1e-6, gt=0, description="peak learning rate (1e-6 in all three papers)")
    lora_dropout: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="LoRA dropout of a fresh adapter (an SFT adapter keeps its own); RL forwards run in "
        "eval mode, so dropout never fires during RL whatever it is",
    )
    num_generations: int = Field(8, ge=1, description="G: rollouts sampled per task (the group size)")
    temperature: float = Field(
        1.0, gt=0.0, le=2.0, description="sampling temperature; log-probs in the loss use the same one"
    )
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus sampling during rollouts")
    top_k: int = Field(
        0,
        ge=0,
        description="top-k sampling during rollouts (0: off); trpo/dgrpo refuse it with a policy "
        "server (--server-url). The loss scores the full tempered distribution",
    )
    max_new_tokens: int = Field(1024, ge=1, description="longest completion per policy call")
    max_turns: int = Field(
        50,
        ge=1,
        description="policy steps per rollout at most (trpo 15, dgrpo 50); a rollout also stops at the "
        "task's own budget and the --config's [graph] max_steps, whichever is least",
    )
    clip_epsilon_low: float = Field(0.2, gt=0.0, lt=1.0, description="PPO clip: ratio floor is 1 - this")
    clip_epsilon_high: float = Field(0.2, gt=0.0, description="PPO clip: ratio ceiling is 1 + this")
    beta: float = Field(
        0.0, ge=0.0, description="weight of the k3 KL penalty to the reference policy (0: off)"
    )
    max_grad_norm: float = Field(1.0, gt=0.0, description="clip the gradient's global norm to this")
    micro_batch_size: int = Field(
        4,
        ge=1,
        description="policy steps per forward/backward pass of an update (peak memory, not the maths; "
        "default 4)",
    )
    step_weighting: StepWeighting = Field(
        "none", description="weight of a step's loss by its trajectory's length T: 1/T, T or 1"
    )
    loss_aggregation: LossAggregation = Field(
        "step_token_mean", description="token mean per step then over steps, or one mean over all tokens"
    )
    replay_importance_cap: float = Field(
        1.0,
        gt=0.0,
        description="replayed steps use the truncated importance weight min(pi/mu, cap), not PPO's clip",
    )
    advantage_epsilon: float = Field(1e-6, ge=0.0, description="added to the std when normalising advantages")
