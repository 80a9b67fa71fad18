"""Advantage estimators of the online RL trainers, as pure functions (plus one small state).

* :func:`group_normalize` / :func:`grpo_advantages` — GRPO: (r − mean_G)/(std_G + ε) within each
  group of G samples of one prompt (Hi-Agent's high level), or over the whole batch (its low level).
* :class:`RunningStats` + :func:`trpo_advantages` — TRPO (Mobile-Agent-v3 §3.1.2):
  Â_τ = (R(τ) − R̄)/(σ_R + ε) with R̄, σ_R running over every trajectory observed so far,
  each counted once (a replayed trajectory is not a new observation).
* :func:`dgrpo_trajectory_scores` / :func:`dgrpo_advantages` — DGRPO (MobileRL §4.3.1, eq. 2–3).

Every trajectory-level advantage is shared by all steps of its trajectory
(:meth:`~.samples.Trajectory.step_samples`).

**Standard deviation.** Group statistics use the *sample* std (ddof = 1), as the papers say
("sample mean and standard deviation", MobileRL §3.2) and as TRL and verl compute it. The running
TRPO statistics use the population std of everything seen (Welford), which is what a running
estimate converges to either way.

**Degenerate groups.** A group whose values are all equal (all failures, or equally good
successes) has std 0; every member's deviation is then 0 too, so every advantage is exactly 0
(nothing to learn from the group), never NaN. A group of one (G = 1) carries no relative signal
and gets advantage 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_runtime.rewards import SpaForm, spa_rewards


def _mean_std(values: Sequence[float], *, unbiased: bool) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    dof = n - 1 if unbiased else n
    var = sum((v - mean) ** 2 for v in values) / dof if dof > 0 else 0.0
    return mean, math.sqrt(var)


def group_normalize(values: Sequence[float], *, epsilon: float = 1e-4, unbiased: bool = True) -> list[float]:
    """``(v − mean)/(std + epsilon)`` over ``values`` (one group, or one whole batch).

    >>> group_normalize([1.0, 0.0, 0.0, 1.0], epsilon=0.0)  # mean 0.5, sample std 1/sqrt(3)
    [0.866..., -0.866..., -0.866..., 0.866...]
    >>> group_normalize([0.0, 0.0, 0.0])
    [0.0, 0.0, 0.0]
    >>> group_normalize([0.7])
    [0.0]
    """
    if not values:
        return []
    if len(values) == 1 or max(values) == min(values):
        # Checked on the values, not on a computed std: the float mean of equal values can miss
        # them by an ulp, and that rounding error divided by an equally tiny std is not signal.
        return [0.0] * len(values)
    mean, std = _mean_std(values, unbiased=unbiased)
    return [(v - mean) / (std + epsilon) for v in values]


def grpo_advantages(
    rewards: Sequence[float], group_size: int, *, epsilon: float = 1e-4, unbiased: bool = True
) -> list[float]:
    """GRPO advantages for rewards laid out as consecutive groups of ``group_size`` (TRL's layout).

    ``epsilon`` defaults to TRL's 1e-4 (Hi-Agent trained with TRL's GRPOTrainer).

    >>> grpo_advantages([1.0, 0.0, 0.5, 0.5], group_size=2, epsilon=0.0)
    [0.707..., -0.707..., 0.0, 0.0]
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        out += group_normalize(rewards[start : start + group_size], epsilon=epsilon, unbiased=unbiased)
    return out


@dataclass
class RunningStats:
    """Running mean and (population) std with Welford's update — numerically stable, O(1) memory.

    >>> s = RunningStats()
    >>> s.update_many([1.0, 0.0, 0.0, 1.0])
    >>> (s.count, s.mean, s.std)
    (4, 0.5, 0.5)
    """

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def update(self, value: float) -> None:
        if not math.isfinite(value):
            raise ValueError(f"cannot add a non-finite reward ({value}) to running statistics")
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)

    def update_many(self, values: Iterable[float]) -> None:
        for v in values:
            self.update(v)

    @property
    def variance(self) -> float:
        return self.m2 / self.count if self.count else 0.0

    @property
    def std(self) -> float:
        return math.sqrt(max(self.variance, 0.0))

    def to_dict(self) -> dict[str, float | int]:
        """For checkpoints: training resumed from it normalises exactly as before."""
        return {"count": self.count, "mean": self.mean, "m2": self.m2}

    @classmethod
    def from_dict(cls, data: dict[str, float | int]) -> RunningStats:
        return cls(count=int(data["count"]), mean=float(data["mean"]), m2=float(data["m2"]))


def trpo_advantages(
    rewards: Sequence[float],
    stats: RunningStats,
    *,
    observed: Sequence[float] | None = None,
    epsilon: float = 1e-6,
) -> list[float]:
    """TRPO's Â_τ for a batch of trajectory rewards; updates ``stats`` with the new observations first.

    ``observed`` are the rewards of the trajectories sampled since the last call (default:
    ``rewards``, when the batch is exactly those). They differ under success replay: an injected
    stored success was counted when it was sampled, so counting it again at every injection
    would pull R̄ towards 1 with each replay; and the failure it replaced *was* observed.

    Updating before normalising means the very first batch is normalised by its own statistics
    instead of by an empty history (mean 0, std 0), which would turn raw rewards into
    advantages of size 1/ε.

    >>> s = RunningStats()
    >>> trpo_advantages([1.0, 0.0, 0.0, 1.0], s, epsilon=0.0)
    [1.0, -1.0, -1.0, 1.0]
    >>> trpo_advantages([1.0, 0.0], s, observed=[0.0, 0.0], epsilon=0.0)  # R̄ 1/3, σ √2/3
    [1.414..., -0.707...]
    """
    stats.update_many(rewards if observed is None else observed)
    if stats.m2 == 0.0:  # every reward so far was the same: no signal (and no 0/0 when epsilon = 0)
        return [0.0] * len(rewards)
    return [(r - stats.mean) / (stats.std + epsilon) for r in rewards]


def dgrpo_trajectory_scores(step_rewards: Sequence[Sequence[float]]) -> list[float]:
    """S_i of MobileRL eq. 2: deviations from the step-wise group mean, summed over τ_i's steps.

    ``step_rewards[i][t]`` is r_t(τ_i). The baseline at step t is ``(1/G)·Σ_j r_t(τ_j)`` with a
    trajectory that has already ended (t > T_j) counting as reward 0 — eq. 2 divides by G, not
    by the number of trajectories still running, and an ended episode earns nothing more. The
    sum for τ_i runs over its own steps t ≤ T_i only.

    >>> dgrpo_trajectory_scores([[1.0, 1.0], [0.5, 0.5, 0.5, 0.5], [0.0, 0.0, 0.0]])
    [1.0, 0.666..., -1.166...]
    """
    g = len(step_rewards)
    if g == 0:
        return []
    horizon = max(len(r) for r in step_rewards)
    baseline = [sum(r[t] for r in step_rewards if t < len(r)) / g for t in range(horizon)]
    return [sum(r_t - baseline[t] for t, r_t in enumerate(r)) for r in step_rewards]


def dgrpo_advantages(
    successes: Sequence[bool],
    lengths: Sequence[int],
    *,
    alpha: float = 1.0,
    spa_form: SpaForm = "paper",
    use_spa: bool = True,
    epsilon: float = 1e-6,
    unbiased: bool = True,
) -> list[float]:
    """A_traj of MobileRL eq. 3 for one group: SPA rewards broadcast to every step (eq. 1), S_i
    (eq. 2), then S normalised within the group. ``use_spa=False`` broadcasts the raw 0/1 outcome
    (the paper's "w/o SPA" ablation).

    >>> [round(a, 4) for a in dgrpo_advantages([True, True, False], [2, 4, 3], epsilon=0.0)]
    [0.7143, 0.4286, -1.1429]
    """
    if use_spa:
        per_traj = spa_rewards(successes, lengths, alpha=alpha, form=spa_form)
    else:
        per_traj = [1.0 if ok else 0.0 for ok in successes]
    scores = dgrpo_trajectory_scores([[r] * t for r, t in zip(per_traj, lengths, strict=True)])
    return group_normalize(scores, epsilon=epsilon, unbiased=unbiased)
