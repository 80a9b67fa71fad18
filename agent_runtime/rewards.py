"""Trajectory rewards of the online RL trainers, as pure functions.

* :func:`task_reward` — TRPO (Mobile-Agent-v3 §3.1.2): R(τ) = 1[success] + a format term that
  penalises malformed actions with −0.5.
* :func:`spa_rewards` — DGRPO's Shortest-Path reward Adjustment (MobileRL §4.3.1, eq. 1) in the
  paper's form and in the reference code's form (a config choice, ``spa_form``).

Hi-Agent's single-step foresight reward lives in
:mod:`agent_runtime.trainers.hi_agent.grpo_rewards` (TRL reward functions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

#: How a malformed action is penalised in TRPO's R(τ) (Mobile-Agent-v3 §3.1.2).
FORMAT_PENALTY = -0.5

#: ``"paper"``: R = 1 − α·(T_i − T_min)/T_i (MobileRL eq. 1); ``"reference"``: the public reference
#: code's R = 1 − max(T_i − T_min, 0)/(2·T_i), which ignores α (it equals the paper form at α = 0.5).
SpaForm = Literal["paper", "reference"]


def task_reward(
    success: bool, malformed_actions: int = 0, *, format_penalty: float = FORMAT_PENALTY
) -> float:
    """TRPO's holistic trajectory reward: accuracy (1 or 0) plus the format reward.

    The format reward is ``format_penalty`` once when the trajectory has *any* malformed action,
    0 otherwise — the paper calls it "a format reward, which penalizes malformed actions with a
    value of −0.5", one term of a sum of two, so it is not multiplied by the number of bad
    actions (that would let one long broken rollout dominate the running statistics).

    >>> task_reward(True)
    1.0
    >>> task_reward(True, malformed_actions=2)
    0.5
    >>> task_reward(False, malformed_actions=1)
    -0.5
    >>> task_reward(False, malformed_actions=1, format_penalty=-1.0)
    -1.0
    """
    if malformed_actions < 0:
        raise ValueError(f"malformed_actions must be >= 0, got {malformed_actions}")
    return (1.0 if success else 0.0) + (format_penalty if malformed_actions else 0.0)


def spa_rewards(
    successes: Sequence[bool], lengths: Sequence[int], *, alpha: float = 1.0, form: SpaForm = "paper"
) -> list[float]:
    """SPA rewards of one group of rollouts of the same task (MobileRL eq. 1).

    Successful trajectories earn ``1 − α·(T_i − T_min)/T_i`` where ``T_min`` is the shortest
    *successful* length in the group; failures earn 0, however short. With α = 1 every success
    earns ``T_min/T_i``, so the reward summed over its steps is ``T_min`` for all of them: a long
    success no longer collects more reward mass than a short one. ``form="reference"`` uses the
    reference code's ``1 − max(T_i − T_min, 0)/(2·T_i)`` and ignores ``alpha``.

    >>> spa_rewards([True, True, False], [2, 4, 1])
    [1.0, 0.5, 0.0]
    >>> spa_rewards([True, True, False], [2, 4, 1], alpha=0.5)
    [1.0, 0.75, 0.0]
    >>> spa_rewards([True, True], [2, 4], form="reference")
    [1.0, 0.75]
    >>> spa_rewards([False, False], [3, 5])
    [0.0, 0.0]
    """
    if len(successes) != len(lengths):
        raise ValueError(f"{len(successes)} outcomes but {len(lengths)} lengths")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"SPA alpha must be in (0, 1], got {alpha}")
    if form not in ("paper", "reference"):
        raise ValueError(f"unknown SPA form {form!r} (use 'paper' or 'reference')")
    for ok, length in zip(successes, lengths, strict=True):
        if ok and length < 1:
            raise ValueError(f"a successful trajectory must have at least one step, got length {length}")
    success_lengths = [t for ok, t in zip(successes, lengths, strict=True) if ok]
    if not success_lengths:
        return [0.0] * len(successes)
    t_min = min(success_lengths)
    rewards = []
    for ok, t in zip(successes, lengths, strict=True):
        if not ok:
            rewards.append(0.0)
        elif form == "paper":
            rewards.append(1.0 - alpha * (t - t_min) / t)
        else:
            rewards.append(1.0 - max(t - t_min, 0) / (2 * t))
    return rewards
