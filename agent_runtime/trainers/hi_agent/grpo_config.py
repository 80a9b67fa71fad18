"""Settings of single-step GRPO with Hi-Agent's foresight reward (Hi-Agent §4.2, App. C, Table 5).

Three TRL 1.16 behaviours are pinned here rather than left to its defaults:

* **Dropout.** ``trl.GRPOConfig.disable_dropout`` defaults to False, so an SFT adapter's LoRA
  dropout (0.05) fires in every training forward: with policy = reference the k3 KL measured
  1.1e-3 and the ratios scattered around 1 on pure noise. We set it True (every ``nn.Dropout``,
  LoRA's included, gets p = 0), and :func:`~.grpo_trainer.make_trainer` repeats it after loading
  the KL reference adapter, which TRL never saw.

* **KL term.** ``trl.GRPOConfig.use_bias_correction_kl`` defaults to True and multiplies the k3
  estimate exp(ref − π) − (ref − π) − 1 by the importance ratio π/π_old (DeepSeek-V3.2). Hi-Agent
  trained with TRL 0.16, whose KL is the plain k3: we set it False.
* **Advantage ε.** TRL divides by ``std + 1e-4`` (``grpo_trainer.py``: ``advantages /
  (std_rewards + 1e-4)``) and has no setting for it. Scaling every reward by c scales mean and
  std by c, so (c·r − c·μ)/(c·σ + 1e-4) = (r − μ)/(σ + 1e-4/c): the reward weights are
  multiplied by c = 1e-4/``advantage_epsilon`` to get exactly (r − μ)/(σ + ε). This needs TRL's
  ``multi_objective_aggregation="sum_then_normalize"`` (weights applied before normalising),
  which is set explicitly. The loss only sees advantages, so nothing else changes; TRL's own
  logged "reward" is c times ours (ours, :class:`~.grpo_trainer.RewardLog`, is unscaled).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from agent_runtime.specs import ROLE_SPECS
from agent_runtime.trainers.online.config import OnlineRLConfig

#: The constant TRL 1.16's GRPOTrainer adds to the reward std (module docstring).
TRL_STD_EPSILON = 1e-4
#: Which of π_h's subgoals the low level also trains on when alternating (:mod:`.grpo_subgoals`).
SubgoalFilter = Literal["env", "none"]
#: The roles GRPO trains, and the level each one is: the ``hi_agent`` graph's own roles, or the
#: Mobile-Agent-v3 roles that hold the levels' places (the Manager plans, the Worker acts).
GRPO_LEVELS: dict[str, Literal["high", "low"]] = {
    name: spec.grpo_level for name, spec in ROLE_SPECS.items() if spec.grpo_level is not None
}


class GRPOConfig(OnlineRLConfig):
    """:class:`~agent_runtime.trainers.online.config.OnlineRLConfig` with Hi-Agent's GRPO settings.

    ``level="high"`` trains the subgoal model π_h on r = 0.4·r_fmt + 0.3·r_env + 0.3·V_judge
    (:mod:`.grpo_rewards`) with advantages normalised within each group of G; ``level="low"``
    trains the action model π_ℓ on r_env alone, normalised over the batch (Hi-Agent eq. 4).
    Hi-Agent trained with TRL's ``GRPOTrainer``; :meth:`trl_kwargs` gives a ``trl.GRPOConfig``
    its Table 5 values (TRL's own defaults differ: ``loss_type="dapo"``, ``beta=0``, G = 8).
    """

    level: Literal["high", "low"] = Field(
        "high", description="train the subgoal (high) or action (low) model"
    )
    num_generations: int = Field(6, ge=1, description="G: completions per prompt")
    beta: float = Field(0.04, ge=0.0, description="weight of the KL penalty to the reference policy")
    temperature: float = Field(0.9, gt=0.0, le=2.0, description="sampling temperature")
    top_k: int = Field(50, ge=0, description="top-k sampling (0: off)")
    repetition_penalty: float = Field(1.0, gt=0.0, description="repetition penalty while sampling")
    max_new_tokens: int = Field(256, ge=1, description="longest completion")
    max_prompt_length: int = Field(
        526, ge=1, description="longest prompt in text tokens (longer rows are dropped)"
    )
    max_turns: int = Field(1, ge=1, description="single-step GRPO: one policy call per sample")
    epochs: float = Field(2.0, gt=0, description="passes over the data")
    batch_size: int = Field(3, ge=1, description="per-device batch size")
    gradient_accumulation_steps: int = Field(2, ge=1, description="batches per optimizer step")
    reward_weights: list[float] = Field(
        [0.4, 0.3, 0.3], description="lambda of r_fmt, r_env, V_judge in the foresight reward (high level)"
    )
    coord_epsilon: float = Field(
        0.002, gt=0.0, description="largest normalised distance of a matching point (r_env; 0.002)"
    )
    advantage_epsilon: float = Field(
        TRL_STD_EPSILON,
        gt=0.0,
        description="added to the std of the rewards before dividing (applied by scaling the reward weights)",
    )
    alternate: bool = Field(
        False,
        description="alternate worker then manager (low- then high-level) updates each iteration (eq. 5)",
    )
    subgoal_filter: SubgoalFilter = Field(
        "env",
        description="which manager subgoals the worker also trains on, the state's oracle action as "
        "target: env (those the worker already executes as the oracle action, r_env = 1, default) or "
        "none (all well-formed: the paper)",
    )
    low_level: str | None = Field(
        None,
        description="the low-level (action) model the manager's subgoals are executed by: model dir, "
        "distill output or http(s)://HOST/v1[#name] (default: the base)",
    )
    judge_model: str | None = Field(
        None,
        description="the frozen subgoal judge V_judge: model dir, distill output or "
        "http(s)://HOST/v1[#name] (default: the base)",
    )

    @field_validator("reward_weights")
    @classmethod
    def _three_weights(cls, value: list[float]) -> list[float]:
        if len(value) != 3 or any(w < 0 for w in value):
            raise ValueError("reward_weights takes three non-negative weights: r_fmt, r_env, V_judge")
        return value

    def trl_kwargs(self) -> dict[str, Any]:
        """Arguments of ``trl.GRPOConfig`` with Hi-Agent's Table 5 values."""
        kwargs = super().trl_kwargs()
        kwargs.pop("max_length", None)  # an SFT/DPO argument; GRPO bounds the completion instead
        kwargs.update(
            num_generations=self.num_generations,
            beta=self.beta,
            epsilon=self.clip_epsilon_low,
            epsilon_high=self.clip_epsilon_high,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            repetition_penalty=self.repetition_penalty,
            max_completion_length=self.max_new_tokens,
            max_grad_norm=self.max_grad_norm,
            loss_type="grpo",
            scale_rewards="group" if self.level == "high" else "batch",
            multi_objective_aggregation="sum_then_normalize",
            reward_weights=[w * self.reward_scale for w in self.reward_weights]
            if self.level == "high"
            else [self.reward_scale],
            use_bias_correction_kl=False,
            disable_dropout=True,
        )
        return kwargs

    @property
    def reward_scale(self) -> float:
        """c = 1e-4/ε: the factor on the reward weights that turns TRL's std + 1e-4 into std + ε.

        >>> GRPOConfig(base="m", output_dir=".", advantage_epsilon=0.5).reward_scale
        0.0002
        """
        return TRL_STD_EPSILON / self.advantage_epsilon
