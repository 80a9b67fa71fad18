"""Settings of TRPO, trajectory-aware relative policy optimisation (Mobile-Agent-v3 §3.1.2)."""

from __future__ import annotations

from pydantic import Field

from agent_runtime.rewards import FORMAT_PENALTY
from agent_runtime.trainers.online.config import LossAggregation, OnlineRLConfig, StepWeighting


class TRPOConfig(OnlineRLConfig):
    """:class:`~agent_runtime.trainers.online.config.OnlineRLConfig` with TRPO's rules.

    R(τ) = 1[success] + ``format_penalty`` if any action was malformed; Â_τ = (R − R̄)/(σ_R + ε)
    with running statistics over every trajectory seen, shared by all steps of τ; a group that
    only failed gets one stored success of its task (``success_replay``); trajectories are split
    into single-step instances, each weighted 1/T and averaged over the batch's tokens.

    The paper gives no group size, temperature or KL weight for TRPO: G = 8 and temperature 1.0
    are our defaults; its loss has no KL term (β = 0); 15 turns is its OSWorld step limit.
    """

    num_generations: int = Field(8, ge=1, description="G: rollouts per task (not given in the paper)")
    max_turns: int = Field(
        15,
        ge=1,
        description="policy steps per rollout at most (the paper's OSWorld limit); the task's budget "
        "and the runtime config's [graph] max_steps also bound it (the least wins)",
    )
    beta: float = Field(0.0, ge=0.0, description="KL weight; TRPO's loss has no KL term")
    step_weighting: StepWeighting = Field(
        "inverse_length", description="each step's loss scaled by 1/T of its trajectory, balancing lengths"
    )
    loss_aggregation: LossAggregation = Field(
        "batch_token_mean", description="TRPO eq. 3: one mean over the batch's (weighted) tokens"
    )
    format_penalty: float = Field(
        FORMAT_PENALTY, le=0.0, description="reward added when any action is malformed"
    )
    success_replay: bool = Field(True, description="give an all-failure group one stored success of its task")
    replay_per_task: int = Field(4, ge=1, description="newest successes kept per task for success replay")
