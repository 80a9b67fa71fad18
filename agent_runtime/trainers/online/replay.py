"""Replay of successful trajectories: TRPO's success replay and DGRPO's DAPR buffer.

**TRPO success replay** (Mobile-Agent-v3 §3.1.2) — :class:`SuccessReplay` keeps the newest
successful trajectories of each ``task_id``. When a sampled group of a task is all failures,
:meth:`SuccessReplay.fill_group` replaces one randomly chosen failing trajectory with a stored
success of the same task, so the group has a positive to learn from. Call it *before* rewards and
advantages are computed for the group.

**DAPR** (MobileRL §4.3.2) — :class:`DAPRBuffer`:

* *insertion*: of the N rollouts of an iteration, the top ⌈κ·N⌉ by A_traj (κ = 0.25) that have a
  positive advantage go in ("positive" replay: a trajectory with A ≤ 0 teaches nothing worth
  repeating);
* *mixture sampling*: an update's batch is the on-policy trajectories plus at most ⌊γ·M⌋ buffer
  trajectories (M = on-policy count), "with the highest *current* advantage" (the paper's
  words). The buffer stores trajectories; the advantage a replay carries into an update is its
  current one, worked out by the trainer (``rescore``: the reward and advantage it would get in
  this iteration's group of its task), never the one it had in the group it was sampled in —
  that group's baseline is gone, and a task the policy has since learnt would keep pushing a
  stale positive. Entries that cannot be scored now (``rescore`` returns None) or whose current
  advantage is ≤ 0 are not replayed and stay (DAPR replays *positives*). The paper's
  "additionally sampled" and its Figure 3 ("a mixture of on-policy data and the buffer") read as
  replay *added* to the on-policy batch; with Table 4's γ = 1 a replacing reading would leave no
  on-policy data at all. Each entry is replayed at most ``max_replays`` times (default 1: "expected
  to be additionally sampled only once on average"), then leaves the buffer;
* *eviction* (reference code): entries older than ``max_age`` iterations leave; beyond
  ``capacity`` the lowest ``α·norm_adv + (1−α)·recency`` goes first, with ``norm_adv`` the
  advantage *at insertion* min-max scaled over the buffer (1 when all are equal) and
  ``recency = 1 − age/max_age``;
* :func:`prune_negatives` keeps positive:negative at 1:2 at most in a batch.

One DGRPO iteration, in this order: A_traj per group → ``batch = buffer.mix(on_policy, it,
rescore)`` (replays of *earlier* iterations, at their current advantage) →
``buffer.insert(on_policy, it)`` (so nothing is replayed in the batch it was sampled in) →
``prune_negatives(batch)`` (trajectory KL of the tied negatives).

**Stale behaviour log-probs.** A replayed trajectory carries the log-probs of the policy that
sampled it, possibly several updates ago. We keep them and correct with *truncated importance
weights* in the loss (:mod:`.policy_gradient`, ``replay_importance_cap``) instead of recomputing
them at insertion: recomputed log-probs are stale again after the next update, so they would
need recomputing at every draw (a forward pass over every replayed trajectory) and they would
still not be the distribution the tokens were sampled from; the truncated weight
min(π_θ/μ, c) is the standard correction (IMPALA, ACER) and costs nothing extra.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from agent_runtime.trainers.online.samples import Trajectory

#: A buffered trajectory's current (reward, advantage), or None when it cannot be scored now.
Rescore = Callable[[Trajectory], tuple[float, float] | None]
#: Advantages closer than this are equal for pruning (the same group outcome in two groups can
#: differ in the last bits), so trajectory KL decides between them.
ADVANTAGE_TIE = 1e-9


class SuccessReplay:
    """TRPO's per-task buffer of successful trajectories.

    Keeps the newest ``per_task`` successes of each task: the newer a trajectory, the closer its
    behaviour log-probs are to the current policy.
    """

    def __init__(self, per_task: int = 4, *, rng: random.Random | None = None) -> None:
        if per_task < 1:
            raise ValueError(f"per_task must be >= 1, got {per_task}")
        self.per_task = per_task
        self.rng = rng or random.Random(0)
        self._by_task: dict[str, deque[Trajectory]] = {}

    def __len__(self) -> int:
        return sum(len(q) for q in self._by_task.values())

    def successes(self, task_id: str) -> list[Trajectory]:
        return list(self._by_task.get(task_id, ()))

    def add(self, trajectories: Iterable[Trajectory]) -> int:
        """Store the successful, freshly sampled ones; returns how many were stored."""
        stored = 0
        for t in trajectories:
            if t.success and not t.is_replay and t.steps:
                self._by_task.setdefault(t.task_id, deque(maxlen=self.per_task)).append(t)
                stored += 1
        return stored

    def fill_group(self, group: Sequence[Trajectory]) -> tuple[list[Trajectory], bool]:
        """The group, with one failure swapped for a stored success when all of it failed.

        Returns ``(group, injected)``. The injected trajectory is a copy marked ``is_replay``.
        """
        out = list(group)
        if not out or any(t.success for t in out):
            return out, False
        task_ids = {t.task_id for t in out}
        if len(task_ids) != 1:
            raise ValueError(f"a group holds rollouts of one task, got {sorted(task_ids)}")
        stored = self._by_task.get(out[0].task_id)
        if not stored:
            return out, False
        slot = self.rng.randrange(len(out))
        out[slot] = self.rng.choice(list(stored)).replayed()
        return out, True


@dataclass
class _Entry:
    trajectory: Trajectory
    advantage: float
    inserted_at: int
    replays: int = 0


class DAPRBuffer:
    """DGRPO's Difficulty-Adaptive Positive Replay buffer (see the module docstring)."""

    def __init__(
        self,
        capacity: int = 256,
        *,
        top_fraction: float = 0.25,
        max_age: int = 4,
        eviction_alpha: float = 0.5,
        max_replays: int = 1,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if not 0.0 < top_fraction <= 1.0:
            raise ValueError(f"top_fraction (kappa) must be in (0, 1], got {top_fraction}")
        if max_age < 1:
            raise ValueError(f"max_age must be >= 1, got {max_age}")
        if not 0.0 <= eviction_alpha <= 1.0:
            raise ValueError(f"eviction_alpha must be in [0, 1], got {eviction_alpha}")
        if max_replays < 1:
            raise ValueError(f"max_replays must be >= 1, got {max_replays}")
        self.capacity = capacity
        self.top_fraction = top_fraction
        self.max_age = max_age
        self.eviction_alpha = eviction_alpha
        self.max_replays = max_replays
        self._entries: list[_Entry] = []

    def __len__(self) -> int:
        return len(self._entries)

    def trajectories(self) -> list[Trajectory]:
        return [e.trajectory for e in self._entries]

    def expire(self, iteration: int) -> int:
        """Drop entries older than ``max_age`` iterations; returns how many were dropped."""
        before = len(self._entries)
        self._entries = [e for e in self._entries if iteration - e.inserted_at <= self.max_age]
        return before - len(self._entries)

    def scores(self, iteration: int) -> list[float]:
        """The reference code's eviction score of each entry, in buffer order."""
        if not self._entries:
            return []
        advs = [e.advantage for e in self._entries]
        lo, hi = min(advs), max(advs)
        out = []
        for e in self._entries:
            norm_adv = (e.advantage - lo) / (hi - lo) if hi > lo else 1.0
            recency = max(0.0, 1.0 - (iteration - e.inserted_at) / self.max_age)
            out.append(self.eviction_alpha * norm_adv + (1.0 - self.eviction_alpha) * recency)
        return out

    def insert(self, rollouts: Sequence[Trajectory], iteration: int) -> list[Trajectory]:
        """Add the top-κ positive-advantage rollouts of this iteration; returns those added."""
        fresh = [t for t in rollouts if not t.is_replay]
        k = math.ceil(self.top_fraction * len(fresh))
        ranked = sorted(fresh, key=Trajectory.adv, reverse=True)[:k]
        chosen = [t for t in ranked if t.adv() > 0 and t.steps]
        self.expire(iteration)
        self._entries += [_Entry(t, t.adv(), iteration) for t in chosen]
        while len(self._entries) > self.capacity:
            scores = self.scores(iteration)
            # Lowest score leaves; among equal scores the oldest (earliest in the list).
            worst = min(range(len(scores)), key=lambda i: scores[i])
            del self._entries[worst]
        return chosen

    def draw(self, n: int, iteration: int, rescore: Rescore) -> list[Trajectory]:
        """Up to ``n`` replay copies carrying their current reward and advantage, highest current
        advantage first (equal ones: the older entry first); only positive ones are drawn."""
        self.expire(iteration)
        if n <= 0:
            return []
        scored = []
        for entry in self._entries:
            current = rescore(entry.trajectory)
            if current is not None and current[1] > 0.0:
                scored.append((entry, current))
        scored.sort(key=lambda ec: ec[1][1], reverse=True)
        drawn = []
        for entry, (reward, advantage) in scored[:n]:
            entry.replays += 1
            copy = entry.trajectory.replayed()
            copy.reward, copy.advantage = reward, advantage
            drawn.append(copy)
        self._entries = [e for e in self._entries if e.replays < self.max_replays]
        return drawn

    def mix(
        self, on_policy: Sequence[Trajectory], iteration: int, rescore: Rescore, *, gamma: float = 1.0
    ) -> list[Trajectory]:
        """The update batch: ``on_policy`` plus at most ⌊γ·M⌋ replayed trajectories (M = len(on_policy))."""
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        return list(on_policy) + self.draw(math.floor(gamma * len(on_policy)), iteration, rescore)


def prune_negatives(
    trajectories: Sequence[Trajectory],
    *,
    max_negatives_per_positive: float = 2.0,
    kl_of: Callable[[Trajectory], float] | None = None,
) -> list[Trajectory]:
    """Drop negative-advantage trajectories until negatives ≤ ratio × positives (MobileRL §4.3.2).

    The paper discards "the lowest-advantage trajectories in descending order of trajectory-level
    KL" ("to reduce the probability of introducing noisy samples"): the lowest advantage goes
    first, and KL only orders negatives of equal advantage (within :data:`ADVANTAGE_TIE`; every failure of a
    group shares one advantage), the highest KL, furthest off-policy, first. On-policy KL is
    float noise, so ranking by KL first would drop near-random negatives. ``kl_of`` (the current
    policy's KL, a forward pass per step) scores only the negatives tied at the cut; without it a
    stored ``Trajectory.kl`` is used, and when a tied one has none the earlier in the batch goes.
    Zero-advantage trajectories are neither positive nor negative and stay; order is preserved.
    """
    advs = [t.adv() for t in trajectories]
    positives = sum(1 for a in advs if a > 0)
    negatives = sorted((i for i, a in enumerate(advs) if a < 0), key=lambda i: advs[i])
    allowed = math.floor(max_negatives_per_positive * positives)
    excess = len(negatives) - allowed
    if excess <= 0:
        return list(trajectories)
    cut = advs[negatives[excess - 1]]
    below = [i for i in negatives if advs[i] < cut - ADVANTAGE_TIE]
    tied = sorted(i for i in negatives if abs(advs[i] - cut) <= ADVANTAGE_TIE)  # batch order
    dropped = set(below)
    if len(below) + len(tied) > excess:
        if kl_of is not None:
            for i in tied:
                trajectories[i].kl = kl_of(trajectories[i])
        kls = [trajectories[i].kl for i in tied]
        if all(kl is not None for kl in kls):
            tied.sort(key=lambda i: -(trajectories[i].kl or 0.0))
    dropped.update(tied[: excess - len(below)])
    return [t for i, t in enumerate(trajectories) if i not in dropped]
