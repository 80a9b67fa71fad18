"""DGRPO's part of the online RL loop (MobileRL §4.3), paired with :mod:`.dgrpo_config`.

Per iteration (one "epoch" of FCF), on the groups of G rollouts :mod:`.loop` played:

1. **FCF** picks the tasks to play: removed tasks never, tasks in cooldown with weight exp(−f)
   — with every active task played (the default), a cooling task is played with probability
   exp(−f) (:class:`~.curriculum.FailureCurriculum`); ``cooling_tasks`` counts them;
2. **SPA + A_traj** per group (eq. 1–3): ``dgrpo_advantages`` (``spa=False``: raw 0/1 outcome);
   ``spa_adjusted`` counts the successes SPA paid less than 1 (longer than their group's shortest
   success) — when it stays 0, SPA changed no advantage and "w/o SPA" would be the same run;
3. **DAPR** — the batch is the on-policy trajectories plus at most ⌊γ·M⌋ replays of *earlier*
   iterations, highest *current* advantage first, then this iteration's top-κ positives go into
   the buffer. A replay's current reward and advantage are what it would get as one more
   rollout of this iteration's group of its task: eq. 1–3 over the G fresh rollouts plus it
   (T_min then counts today's successes too). The G fresh rollouts keep their own eq. 3 values
   over the G of them. A replay whose task was not played this iteration has no current
   advantage and waits; one whose current advantage is ≤ 0 (the policy now does as well or
   better) is not replayed — DAPR replays *positives*;
4. **negative pruning** — negatives beyond 1:2 are dropped, lowest advantage first; trajectory
   KL breaks ties among equal advantages, highest first (scored under the current policy, one
   forward pass per step, only for the negatives tied at the cut).

**The history file.** It is saved after every iteration to ``fcf_history`` (default
``OUT/fcf_history.json``). A history inside OUT belongs to that run: a fresh run with
``--overwrite`` deletes it with the run's other files (:meth:`DGRPOMethod.run_files`), so it starts
from a clean curriculum. A history outside OUT (``DGRPOConfig.fcf_history``) is how a user carries
failures over from earlier training, as the paper does ("failure histories from previous
training are retained"): ``--overwrite`` leaves it alone; delete it to start afresh.

The three mechanisms switch off with ``spa``/``dapr``/``fcf`` = False (MobileRL's ablation).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_runtime.rewards import spa_rewards
from agent_runtime.trainers.online.advantages import dgrpo_advantages
from agent_runtime.trainers.online.curriculum import CurriculumState, FailureCurriculum
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.replay import DAPRBuffer, prune_negatives
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
        self._curriculum: FailureCurriculum | None = None
        #: Active tasks in cooldown when the last iteration's tasks were drawn, played or not.
        self._cooling = 0

    @property
    def curriculum(self) -> FailureCurriculum:
        """The FCF state, read from ``fcf_history`` on first use, not at construction: the loop
        builds the method before a fresh ``--overwrite`` run deletes :meth:`run_files`, and a
        history read earlier would bring the deleted run's cooldowns and removals back."""
        if self._curriculum is None:
            self._curriculum = FailureCurriculum.load(self.cfg.fcf_history_path(), **self._fcf_rules())
        return self._curriculum

    def run_files(self) -> tuple[str, ...]:
        """Files of a run, relative to OUT, that a fresh ``--overwrite`` run deletes: the FCF
        history when it lives in OUT (module docstring); one outside OUT is kept."""
        out = Path(self.cfg.output_dir).resolve()
        history = self.cfg.fcf_history_path().resolve()
        return (str(history.relative_to(out)),) if history.is_relative_to(out) else ()

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
        self._cooling = sum(1 for t in task_ids if self.curriculum.weight(t) < 1.0)
        return self.curriculum.sample(task_ids, k, rng)

    def _score(self, group: Sequence[Trajectory]) -> tuple[list[float], list[float]]:
        """(rewards, A_traj) of one group: SPA (eq. 1) or the raw outcome, then eq. 2–3."""
        cfg = self.cfg
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
        return rewards, advs

    def build_batch(
        self, groups: dict[str, list[Trajectory]], iteration: int, kl_of: Scorer | None = None
    ) -> tuple[list[Trajectory], dict[str, Any]]:
        """A_traj per group, DAPR mixture and insertion, negative pruning → batch + metrics."""
        cfg = self.cfg
        on_policy: list[Trajectory] = []
        spa_adjusted = 0
        for group in groups.values():
            rewards, advs = self._score(group)
            for t, a, r in zip(group, advs, rewards, strict=True):
                t.advantage, t.reward = a, r
            spa_adjusted += sum(1 for t, r in zip(group, rewards, strict=True) if r != float(t.success))
            on_policy += group

        def rescore(replay: Trajectory) -> tuple[float, float] | None:
            group = groups.get(replay.task_id)
            if not group:
                return None
            rewards, advs = self._score([*group, replay])
            return rewards[-1], advs[-1]

        replayed = inserted = 0
        batch = list(on_policy)
        if cfg.dapr:
            batch = self.buffer.mix(on_policy, iteration, rescore, gamma=cfg.dapr_gamma)
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
            "cooling_tasks": self._cooling,
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
        self.buffer = state["buffer"]
        self._curriculum = FailureCurriculum(
            CurriculumState.model_validate(state["curriculum"]), **self._fcf_rules()
        )
        if self.cfg.fcf:
            self.curriculum.save(self.cfg.fcf_history_path())

    def active_tasks(self, task_ids: Sequence[str]) -> list[str]:
        return self.curriculum.active(task_ids) if self.cfg.fcf else list(task_ids)
