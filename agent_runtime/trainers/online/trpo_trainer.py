"""TRPO's part of the online RL loop (Mobile-Agent-v3 §3.1.2), paired with :mod:`.trpo_config`.

Per iteration, on the groups of G rollouts (:mod:`.loop` plays them and runs the update):

1. **Success replay** — a group that only failed gets one stored success of its task in place
   of a random failure (:class:`~.replay.SuccessReplay`), *before* rewards are computed;
2. **rewards** — R(τ) = 1[success] + the format penalty when any call was malformed;
3. **advantages** — Â_τ = (R − R̄)/(σ_R + ε) with running statistics over every trajectory
   observed, shared by all steps of τ. The statistics take this iteration's fresh rollouts
   once each — the failure a replay replaced included, the injected success not: it was
   counted when it was sampled, and re-counting it at every injection would drag R̄ up;
4. the fresh successes go into the replay buffer (so a group never replays itself);
5. the batch is every trajectory's steps, weighted 1/T, averaged over the batch's tokens.

Every task instance is played every iteration (TRPO has no curriculum), or a seeded draw of
``tasks_per_iteration`` of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from agent_runtime.rewards import task_reward
from agent_runtime.trainers.online.advantages import RunningStats, trpo_advantages
from agent_runtime.trainers.online.replay import SuccessReplay
from agent_runtime.trainers.online.samples import Trajectory
from agent_runtime.trainers.online.trpo_config import TRPOConfig

Scorer = Callable[[Trajectory], float]


class TRPOMethod:
    """TRPO's task choice, rewards, advantages and replay; state survives ``--resume``."""

    name = "trpo"

    def __init__(self, cfg: TRPOConfig) -> None:
        self.cfg = cfg
        self.stats = RunningStats()
        self.replay = SuccessReplay(cfg.replay_per_task, rng=random.Random(cfg.seed))

    def select_tasks(self, task_ids: Sequence[str], k: int | None, rng: random.Random) -> list[str]:
        if k is None or k >= len(task_ids):
            return list(task_ids)
        return rng.sample(list(task_ids), k)

    def build_batch(
        self, groups: dict[str, list[Trajectory]], iteration: int, kl_of: Scorer | None = None
    ) -> tuple[list[Trajectory], dict[str, Any]]:
        """Rewards, advantages and replay for one iteration's groups → the update batch + metrics."""
        batch: list[Trajectory] = []
        injected = 0
        for group in groups.values():
            filled, did = self.replay.fill_group(group) if self.cfg.success_replay else (list(group), False)
            injected += int(did)
            batch += filled
        fresh = [t for g in groups.values() for t in g]
        replays = [t for t in batch if t.is_replay]
        for t in fresh + replays:  # a replaced failure too: the loop reports every fresh reward
            t.reward = task_reward(t.success, t.malformed_actions, format_penalty=self.cfg.format_penalty)
        advantages = trpo_advantages(
            [float(t.reward or 0.0) for t in batch],
            self.stats,
            observed=[float(t.reward or 0.0) for t in fresh],
            epsilon=self.cfg.advantage_epsilon,
        )
        for t, adv in zip(batch, advantages, strict=True):
            t.advantage = adv
        stored = self.replay.add(fresh) if self.cfg.success_replay else 0
        return batch, {
            "replay_injected": injected,
            "replay_stored": stored,
            "buffer_size": len(self.replay),
            "reward_running_mean": self.stats.mean,
            "reward_running_std": self.stats.std,
        }

    def end_iteration(self, rewards_by_task: dict[str, list[float]]) -> None:
        """TRPO keeps no per-task curriculum."""

    def run_files(self) -> tuple[str, ...]:
        """TRPO keeps no run-level file of its own in OUT (its state is in ``rl_state.pt``)."""
        return ()

    def state_dict(self) -> dict[str, Any]:
        return {"stats": self.stats.to_dict(), "replay": self.replay}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stats = RunningStats.from_dict(state["stats"])
        self.replay = state["replay"]
