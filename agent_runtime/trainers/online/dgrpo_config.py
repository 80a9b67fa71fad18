"""Settings of DGRPO, difficulty-adaptive GRPO (MobileRL §4.3; defaults from its Table 4)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent_runtime.rewards import SpaForm
from agent_runtime.trainers.online.config import OnlineRLConfig
from agent_runtime.trainers.online.curriculum import FCFRemoval


class DGRPOConfig(OnlineRLConfig):
    """:class:`~agent_runtime.trainers.online.config.OnlineRLConfig` with DGRPO's three mechanisms.

    * SPA (``spa*``): shorter successes earn more (eq. 1); A_traj from step-wise group baselines
      (eq. 2–3).
    * DAPR (``dapr*``): the top-κ positive trajectories go to a replay buffer; each update adds at
      most γ·M of them, highest *current* advantage first (scored against this iteration's group
      of their task); negatives are pruned to 1:2, lowest advantage first (``prune_negatives``).
    * FCF (``fcf*``): tasks that keep failing cool down — played with probability exp(−f) while
      every active task is played — then leave the pool. The history in ``fcf_history`` persists
      across runs; the default one in OUTPUT_DIR is deleted by a fresh ``--overwrite`` run, a
      path outside OUTPUT_DIR is kept.

    Table 4: G = 16, lr 1e-6, clip 0.2, β = 0.001, temperature 1.0, 50 turns, gradient clip 1.0,
    micro-batch 4, α = 1.0, buffer 256, γ = 1.0, κ = 0.25.
    """

    num_generations: int = Field(16, ge=1, description="G: rollouts per task (Table 4: n = 16)")
    beta: float = Field(0.001, ge=0.0, description="weight of the k3 KL penalty to the reference policy")
    max_turns: int = Field(
        50,
        ge=1,
        description="policy steps per rollout at most; the task's budget and the runtime config's "
        "[graph] max_steps also bound it (the least wins)",
    )
    max_new_tokens: int = Field(4096, ge=1, description="longest completion per policy call (Table 4)")
    spa: bool = Field(
        True, description="shortest-path reward adjustment (off: the raw 0/1 outcome, 'w/o SPA')"
    )
    spa_alpha: float = Field(1.0, gt=0.0, le=1.0, description="SPA penalty strength alpha (paper form only)")
    spa_form: SpaForm = Field(
        "paper", description="'paper': 1 - a(T-Tmin)/T; 'reference': 1 - max(T-Tmin,0)/(2T)"
    )
    dapr: bool = Field(True, description="positive replay buffer (Difficulty-Adaptive Positive Replay)")
    dapr_buffer_size: int = Field(256, ge=1, description="replay buffer capacity")
    dapr_top_fraction: float = Field(0.25, gt=0.0, le=1.0, description="kappa: share of rollouts inserted")
    dapr_gamma: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="gamma: replay at most gamma x (on-policy count) per update, "
        "highest current advantage first",
    )
    dapr_eviction_alpha: float = Field(
        0.5, ge=0.0, le=1.0, description="eviction score weight of the advantage vs. recency"
    )
    dapr_max_age: int = Field(4, ge=1, description="iterations a buffered trajectory may wait")
    dapr_max_replays: int = Field(
        1, ge=1, description="times a buffered trajectory is replayed before it leaves"
    )
    prune_negatives: bool = Field(True, description="drop negatives beyond the positive:negative ratio")
    max_negatives_per_positive: float = Field(2.0, gt=0.0, description="negatives kept per positive (1:2)")
    fcf: bool = Field(True, description="failure curriculum filtering of tasks that keep failing")
    fcf_cooldown_after: int = Field(2, ge=1, description="all-failure epochs in a row that start a cooldown")
    fcf_cooldown_epochs: int = Field(
        3, ge=0, description="cooldown length in epochs (the task is played with weight exp(-f))"
    )
    fcf_remove_at: int = Field(3, ge=1, description="failure epochs in a row that remove a task")
    fcf_removal: FCFRemoval = Field(
        "paper", description="'paper': remove at f >= remove_at; 'reference': at f > remove_at"
    )
    fcf_history: Path | None = Field(
        None,
        description="JSON failure history (default: OUTPUT_DIR/fcf_history.json, deleted by a fresh "
        "--overwrite run); a path outside OUTPUT_DIR carries failures across runs",
    )

    def fcf_history_path(self) -> Path:
        """Where the FCF history is read from and written to."""
        return self.fcf_history or self.output_dir / "fcf_history.json"
