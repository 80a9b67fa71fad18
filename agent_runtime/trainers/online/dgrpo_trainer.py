"""DGRPO's part of the online RL loop (MobileRL §4.3), paired with :mod:`.dgrpo_config`.

Per iteration (one "epoch" of FCF), on the groups of G rollouts :mod:`.loop` played:

1. **FCF** picks the tasks to play: removed tasks never, tasks in cooldown with weight exp(−f)
   (:class:`~.curriculum.FailureCurriculum`); the history is saved after every iteration to
   ``fcf_history`` and so persists across runs;
2. **SPA + A_traj** per group (eq. 1–3): ``dgrpo_advantages`` (``spa=False``: raw 0/1 outcome);
   ``spa_adjusted`` counts the successes SPA paid less than 1 (longer than their group's shortest
   success) — when it stays 0, SPA changed no advantage and "w/o SPA" would be the same run;
3. **DAPR** — the batch is the on-policy trajectories plus at most ⌊γ·M⌋ replays of *earlier*
   iterations, then this iteration's top-κ positives go into the buffer;
4. **negative pruning** — negatives beyond 1:2 are dropped, highest trajectory KL first (the
   KL of each negative is scored under the current policy, one forward pass per step, and only
   in an iteration where something is dropped).

The three mechanisms switch off with ``spa``/``dapr``/``fcf`` = False (MobileRL's ablation).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from agent_runtime.trainers.online.advantages import dgrpo_advantages
from agent_runtime.trainers.online.curriculum import FailureCurriculum
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.replay import DAPRBuffer, prune_negatives
from agent_runtime.trainers.online.rewards import spa_rewards
from agent_runtime.trainers.online.samples import Trajectory

Scorer = Callable[[Trajectory], float]


class DGRPOMethod:
    """DGRPO's curriculum, advantages and replay; state survives ``--resume``."""

    name = "dgrpo"

    def __init__(self, cfg: DGRPOConfig) -> None:
        self.cfg = cfg
        self.buffer = DAPRBuffer(
            cfg.dapr_buffer_size,
            top_fraction=cfg.dapr_top_fraction,
            max_age=cfg.dapr_max_age,
            eviction_alpha=cfg.dapr_eviction_alpha,
            max_replays=cfg.dapr_max_replays,
        )
        self.curriculum = FailureCurriculum.load(cfg.fcf_history_path(), **self._fcf_rules())

    def _fcf_rules(self) -> dict[str, Any]:
        return {
            "cooldown_after": self.cfg.fcf_cooldown_after,
            "cooldown_epochs": self.cfg.fcf_cooldown_epochs,
            "remove_at": self.cfg.fcf_remove_at,
            "removal": self.cfg.fcf_removal,
        }

    def select_tasks(self, task_ids: Sequence[str], k: int | None, rng: random.Random) -> list[str]:
        if not self.cfg.fcf:
            return list(task_ids) if k is None or k >= len(task_ids) else rng.sample(list(task_ids), k)
        return self.curriculum.sample(task_ids, len(task_ids) if k is None else k, rng)

    def build_batch(
        self, groups: dict[str, list[Trajectory]], iteration: int, kl_of: Scorer | None = None
    ) -> tuple[list[Trajectory], dict[str, Any]]:
        """A_traj per group, DAPR mixture and insertion, negative pruning → batch + metrics."""
        cfg = self.cfg
        on_policy: list[Trajectory] = []
        spa_adjusted = 0
        for group in groups.values():
            successes = [t.success for t in group]
            lengths = [t.length for t in group]
            advs = dgrpo_advantages(
                successes,
                lengths,
                alpha=cfg.spa_alpha,
                spa_form=cfg.spa_form,
                use_spa=cfg.spa,
                epsilon=cfg.advantage_epsilon,
            )
            rewards = (
                spa_rewards(successes, lengths, alpha=cfg.spa_alpha, form=cfg.spa_form)
                if cfg.spa
                else [float(s) for s in successes]
            )
            for t, a, r in zip(group, advs, rewards, strict=True):
                t.advantage, t.reward = a, r
            spa_adjusted += sum(1 for t, r in zip(group, rewards, strict=True) if r != float(t.success))
            on_policy += group
        replayed = inserted = 0
        batch = list(on_policy)
        if cfg.dapr:
            batch = self.buffer.mix(on_policy, iteration, gamma=cfg.dapr_gamma)
            replayed = len(batch) - len(on_policy)
            inserted = len(self.buffer.insert(on_policy, iteration))
        pruned = 0
        if cfg.prune_negatives:
            kept = prune_negatives(
                batch, max_negatives_per_positive=cfg.max_negatives_per_positive, kl_of=kl_of
            )
            pruned = len(batch) - len(kept)
            batch = kept
        return batch, {
            "spa_adjusted": spa_adjusted,
            "replayed": replayed,
            "buffer_inserted": inserted,
            "buffer_size": len(self.buffer),
            "pruned_negatives": pruned,
        }

    def end_iteration(self, rewards_by_task: dict[str, list[float]]) -> None:
        """Record the epoch in the failure curriculum and persist it."""
        if self.cfg.fcf:
            self.curriculum.end_epoch(rewards_by_task)
            self.curriculum.save(self.cfg.fcf_history_path())

    def state_dict(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "curriculum": self.curriculum.state.model_dump(mode="json")}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        from agent_runtime.trainers.online.curriculum import CurriculumState

        self.buffer = state["buffer"]
        self.curriculum = FailureCurriculum(
            CurriculumState.model_validate(state["curriculum"]), **self._fcf_rules()
        )
        if self.cfg.fcf:
            self.curriculum.save(self.cfg.fcf_history_path())

    def active_tasks(self, task_ids: Sequence[str]) -> list[str]:
        return self.curriculum.active(task_ids) if self.cfg.fcf else list(task_ids)
