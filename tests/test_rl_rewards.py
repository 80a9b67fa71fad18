"""Rewards and advantages of the online RL trainers against hand-computed cases.

Every expected number is worked out by hand in the test's docstring or comments.
"""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest

from agent_runtime.rewards import spa_rewards, task_reward
from agent_runtime.trainers.online.advantages import (
    RunningStats,
    dgrpo_advantages,
    dgrpo_trajectory_scores,
    group_normalize,
    grpo_advantages,
    trpo_advantages,
)
from agent_runtime.trainers.online.samples import StepTokens, Trajectory
from agent_runtime.trainers.online.trpo_config import TRPOConfig
from agent_runtime.trainers.online.trpo_trainer import TRPOMethod

# -- TRPO R(τ) ----------------------------------------------------------------------------------


def test_task_reward_is_success_plus_one_format_penalty() -> None:
    """R = 1[success] + (−0.5 if any action malformed): 1, 0.5, 0, −0.5; the penalty counts once."""
    assert task_reward(True) == 1.0
    assert task_reward(True, 1) == 0.5
    assert task_reward(True, 3) == 0.5  # once per trajectory, not per bad action
    assert task_reward(False) == 0.0
    assert task_reward(False, 2) == -0.5
    assert task_reward(False, 1, format_penalty=-0.25) == -0.25
    with pytest.raises(ValueError):
        task_reward(True, -1)


# -- SPA (MobileRL eq. 1) ------------------------------------------------------------------------


def test_spa_paper_form_by_hand() -> None:
    """Successes of length 3, 5 and 2, one failure of length 6 → T_min = 2.

    α = 1:   1 − (3−2)/3 = 2/3,  1 − (5−2)/5 = 2/5,  failure 0,  1 − 0/2 = 1.
    α = 0.5: 1 − 0.5·1/3 = 5/6,  1 − 0.5·3/5 = 0.7,  0,          1.
    """
    ok, lengths = [True, True, False, True], [3, 5, 6, 2]
    assert spa_rewards(ok, lengths) == pytest.approx([2 / 3, 2 / 5, 0.0, 1.0])
    assert spa_rewards(ok, lengths, alpha=0.5) == pytest.approx([5 / 6, 0.7, 0.0, 1.0])


def test_spa_reference_form_by_hand() -> None:
    """Reference: 1 − max(T−T_min, 0)/(2T): 1 − 1/6 = 5/6, 1 − 3/10 = 0.7, 0, 1 — the paper form at
    α = 0.5, whatever α is passed."""
    ok, lengths = [True, True, False, True], [3, 5, 6, 2]
    ref = spa_rewards(ok, lengths, form="reference", alpha=1.0)
    assert ref == pytest.approx([5 / 6, 0.7, 0.0, 1.0])
    assert ref == pytest.approx(spa_rewards(ok, lengths, alpha=0.5))


def test_spa_t_min_ignores_failures_and_sum_over_steps_is_t_min() -> None:
    """A 1-step failure does not set T_min; with α = 1 each success's reward × length = T_min (4)."""
    assert spa_rewards([True, False], [4, 1]) == [1.0, 0.0]
    ok, lengths = [True, True, True], [4, 8, 10]
    assert [r * t for r, t in zip(spa_rewards(ok, lengths), lengths, strict=True)] == pytest.approx([4, 4, 4])


def test_spa_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        spa_rewards([True], [1, 2])
    with pytest.raises(ValueError):
        spa_rewards([True], [2], alpha=0.0)
    with pytest.raises(ValueError):
        spa_rewards([True], [0])
    with pytest.raises(ValueError):
        spa_rewards([True], [2], form="paperish")  # type: ignore[arg-type]


# -- GRPO group normalisation --------------------------------------------------------------------


def test_group_normalize_by_hand() -> None:
    """[1, 0, 0, 0]: mean 1/4, sample var (9/16 + 3·1/16)/3 = 1/4, std 1/2 → [1.5, −0.5, −0.5, −0.5].
    Population std (ddof 0): var 3/16, std √3/4 → 0.75/0.4330 = 1.7321, −0.25/0.4330 = −0.5774."""
    assert group_normalize([1, 0, 0, 0], epsilon=0.0) == pytest.approx([1.5, -0.5, -0.5, -0.5])
    assert group_normalize([1, 0, 0, 0], epsilon=0.0, unbiased=False) == pytest.approx(
        [math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)]
    )
    # ε in the denominator: 0.75 / (0.5 + 0.25) = 1.0
    assert group_normalize([1, 0, 0, 0], epsilon=0.25)[0] == pytest.approx(1.0)


def test_group_normalize_degenerate_groups_give_zero() -> None:
    """Equal values (std 0) and G = 1 carry no relative signal: advantages exactly 0, never NaN.
    0.1 three times has a float mean that misses 0.1 by an ulp; that must not become ±0.8."""
    assert group_normalize([0.1, 0.1, 0.1], epsilon=0.0) == [0.0, 0.0, 0.0]
    assert group_normalize([5.0]) == [0.0]
    assert group_normalize([]) == []


def test_grpo_advantages_per_group() -> None:
    """Groups [1, 0, 0] and [0.4, 0.4, 0.4]: first → mean 1/3, sample std √(1/3) = 0.5774
    → [2/3/0.5774, −1/3/0.5774, …] = [1.1547, −0.5774, −0.5774]; second all 0."""
    adv = grpo_advantages([1, 0, 0, 0.4, 0.4, 0.4], group_size=3, epsilon=0.0)
    assert adv == pytest.approx([1.1547005, -0.5773503, -0.5773503, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        grpo_advantages([1, 0, 0], group_size=2)


# -- TRPO running statistics ---------------------------------------------------------------------


def test_running_stats_match_batch_statistics() -> None:
    rng = random.Random(3)
    values = [rng.uniform(-1, 2) for _ in range(257)]
    stats = RunningStats()
    stats.update_many(values)
    assert stats.count == 257
    assert stats.mean == pytest.approx(statistics.fmean(values))
    assert stats.std == pytest.approx(statistics.pstdev(values))
    again = RunningStats.from_dict(stats.to_dict())
    assert again == stats
    with pytest.raises(ValueError):
        stats.update(float("nan"))


def test_trpo_advantages_use_running_statistics_by_hand() -> None:
    """Batch 1 [1, 0, 0, 1]: mean 1/2, population std 1/2 → [1, −1, −1, 1].
    Batch 2 [1, 1]: now over [1,0,0,1,1,1]: mean 2/3, var (4·1/9 + 2·4/9)/6 = 2/9, std √2/3
    → (1 − 2/3)/(√2/3) = 1/√2 = 0.7071 for both — not 0, as a per-batch std would give."""
    stats = RunningStats()
    assert trpo_advantages([1, 0, 0, 1], stats, epsilon=0.0) == pytest.approx([1, -1, -1, 1])
    assert trpo_advantages([1, 1], stats, epsilon=0.0) == pytest.approx([1 / math.sqrt(2)] * 2)
    assert stats.count == 6


def test_trpo_advantages_format_penalty_and_constant_rewards() -> None:
    """Rewards [1, 0.5, −0.5, 0] (success, success+malformed, malformed failure, failure):
    mean 1/4, deviations .75, .25, −.75, −.25, var (.5625+.0625+.5625+.0625)/4 = 0.3125,
    std 0.5590 → [1.3416, 0.4472, −1.3416, −0.4472]. A history of equal rewards → all 0."""
    stats = RunningStats()
    rs = [task_reward(True), task_reward(True, 1), task_reward(False, 1), task_reward(False)]
    assert trpo_advantages(rs, stats, epsilon=0.0) == pytest.approx(
        [1.3416408, 0.4472136, -1.3416408, -0.4472136]
    )
    assert trpo_advantages([0.0, 0.0], RunningStats(), epsilon=0.0) == [0.0, 0.0]


def test_trpo_advantages_count_only_new_observations() -> None:
    """Batch 1 [1, 0, 0, 1] as before. Batch 2 is [1, 0]: a replayed success next to a fresh
    failure, out of a fresh all-failure group [0, 0]. The statistics take [0, 0] (observed), not
    [1, 0]: over [1,0,0,1,0,0] mean 1/3, var (2·4/9 + 4·1/9)/6 = 2/9, std √2/3
    → (1 − 1/3)/(√2/3) = √2 = 1.4142 and (0 − 1/3)/(√2/3) = −1/√2 = −0.7071."""
    stats = RunningStats()
    trpo_advantages([1, 0, 0, 1], stats, epsilon=0.0)
    advs = trpo_advantages([1, 0], stats, observed=[0, 0], epsilon=0.0)
    assert advs == pytest.approx([math.sqrt(2), -1 / math.sqrt(2)])
    assert (stats.count, stats.mean) == (6, pytest.approx(1 / 3))


def _trajectory(success: bool) -> Trajectory:
    step = StepTokens(prompt_ids=(1, 2), completion_ids=(5, 3), behaviour_logprobs=(-0.5, -0.1))
    return Trajectory("a", [step], success)


def test_trpo_injected_success_is_not_counted_again(tmp_path: Path) -> None:
    """Iteration 1, task a: [S, F] → statistics over [1, 0]: mean .5, std .5 → A = ±1; S is stored.
    Iteration 2: [F, F] all fail → one F is replaced by the stored S (replay_injected 1). The
    statistics see the two fresh failures: [1, 0, 0, 0], mean 1/4, var (9/16 + 3/16)/4 = 3/16,
    std √3/4 → the replayed S gets (3/4)/(√3/4) = √3 = 1.7321, the kept F −(1/4)/(√3/4) = −0.5774.
    Counting the injected S again would give [1, 0, 1, 0]: mean .5, A = ±1."""
    method = TRPOMethod(TRPOConfig(base="m", output_dir=tmp_path, advantage_epsilon=0.0))
    method.build_batch({"a": [_trajectory(True), _trajectory(False)]}, 1)
    batch, metrics = method.build_batch({"a": [_trajectory(False), _trajectory(False)]}, 2)
    assert metrics["replay_injected"] == 1
    assert (method.stats.count, metrics["reward_running_mean"]) == (4, pytest.approx(0.25))
    assert metrics["reward_running_std"] == pytest.approx(math.sqrt(3) / 4)
    replay = next(t for t in batch if t.is_replay)
    kept = next(t for t in batch if not t.is_replay)
    assert (replay.reward, replay.adv()) == (1.0, pytest.approx(math.sqrt(3)))
    assert (kept.reward, kept.adv()) == (0.0, pytest.approx(-1 / math.sqrt(3)))


# -- DGRPO (MobileRL eq. 2–3) --------------------------------------------------------------------


def test_dgrpo_scores_with_different_lengths_by_hand() -> None:
    """G = 3: successes of length 2 and 4, a failure of length 3, α = 1 → SPA rewards 1, 1/2, 0.

    Step rewards: τ1 = [1, 1], τ2 = [.5, .5, .5, .5], τ3 = [0, 0, 0]; an ended trajectory counts 0.
    Baselines (÷G = 3): t1 (1+.5+0)/3 = .5, t2 .5, t3 (0+.5+0)/3 = 1/6, t4 (0+.5+0)/3 = 1/6.
    S1 = (1−.5)+(1−.5) = 1.   S2 = 0 + 0 + (.5−1/6)·2 = 2/3.   S3 = −.5 −.5 −1/6 = −7/6.
    mean S = 1/6; deviations 5/6, 1/2, −4/3; sample var (25+9+64)/36/2 = 49/36, std 7/6
    → A = 5/7, 3/7, −8/7.
    """
    assert dgrpo_trajectory_scores([[1, 1], [0.5] * 4, [0, 0, 0]]) == pytest.approx([1, 2 / 3, -7 / 6])
    assert dgrpo_advantages([True, True, False], [2, 4, 3], epsilon=0.0) == pytest.approx(
        [5 / 7, 3 / 7, -8 / 7]
    )


def test_dgrpo_shorter_success_wins_only_with_spa() -> None:
    """Without SPA (raw 0/1 per step), same group: τ1 [1,1], τ2 [1,1,1,1], τ3 [0,0,0].
    Baselines 2/3, 2/3, 1/3, 1/3 → S1 = 2/3, S2 = 1/3+1/3+2/3+2/3 = 2, S3 = −2/3−2/3−1/3 = −5/3:
    the long success scores higher — the bias SPA removes (with SPA S1 = 1 > S2 = 2/3)."""
    raw = dgrpo_trajectory_scores([[1, 1], [1] * 4, [0, 0, 0]])
    assert raw == pytest.approx([2 / 3, 2, -5 / 3])
    adv_raw = dgrpo_advantages([True, True, False], [2, 4, 3], use_spa=False, epsilon=0.0)
    adv_spa = dgrpo_advantages([True, True, False], [2, 4, 3], epsilon=0.0)
    assert adv_raw[1] > adv_raw[0] and adv_spa[0] > adv_spa[1]


def test_dgrpo_two_successes_by_hand() -> None:
    """Lengths 1 and 3, both successful, α = 1 → rewards 1 and 1/3.
    Baselines: t1 (1 + 1/3)/2 = 2/3, t2 (0 + 1/3)/2 = 1/6, t3 1/6.
    S1 = 1 − 2/3 = 1/3;  S2 = (1/3 − 2/3) + 2·(1/3 − 1/6) = 0.  mean 1/6, deviations ±1/6,
    sample std √(2/36) = √2/6 → A = ±1/√2."""
    assert dgrpo_trajectory_scores([[1], [1 / 3] * 3]) == pytest.approx([1 / 3, 0.0])
    assert dgrpo_advantages([True, True], [1, 3], epsilon=0.0) == pytest.approx(
        [1 / math.sqrt(2), -1 / math.sqrt(2)]
    )


def test_dgrpo_degenerate_groups() -> None:
    """All failures, equal successes and G = 1 give 0 (S_i = 0 exactly for each)."""
    assert dgrpo_advantages([False, False, False], [3, 5, 1]) == [0.0, 0.0, 0.0]
    assert dgrpo_advantages([True, True], [4, 4]) == [0.0, 0.0]
    assert dgrpo_advantages([True], [7]) == [0.0]
    assert dgrpo_trajectory_scores([]) == []


def test_dgrpo_reference_spa_form() -> None:
    """Reference SPA on lengths 2 (success) and 4 (success): rewards 1 and 1 − 2/8 = 0.75.
    Baselines t1 = t2 = (1 + .75)/2 = .875, t3 = t4 = .375. S1 = 2·.125 = .25,
    S2 = 2·(−.125) + 2·.375 = .5 → here the longer success scores higher: with α = 0.5-equivalent
    shaping the length penalty is too weak to offset two extra rewarded steps."""
    assert dgrpo_trajectory_scores([[1, 1], [0.75] * 4]) == pytest.approx([0.25, 0.5])
    adv = dgrpo_advantages([True, True], [2, 4], spa_form="reference", epsilon=0.0)
    assert adv == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)])
