"""TRPO success replay, the DAPR buffer and negative pruning, against hand-worked cases."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.dgrpo_trainer import DGRPOMethod
from agent_runtime.trainers.online.replay import DAPRBuffer, SuccessReplay, prune_negatives
from agent_runtime.trainers.online.samples import StepSample, StepTokens, Trajectory, flatten


def step(token: int = 5) -> StepTokens:
    return StepTokens(prompt_ids=(1, 2), completion_ids=(token, 3), behaviour_logprobs=(-0.5, -0.1))


def traj(
    task: str = "a",
    *,
    success: bool = False,
    adv: float | None = None,
    length: int = 2,
    kl: float | None = None,
    name: int = 0,
) -> Trajectory:
    return Trajectory(task, [step(name)] * length, success, advantage=adv, kl=kl)


# -- data types ----------------------------------------------------------------------------------


def test_steps_validate_and_inherit_the_trajectory_advantage() -> None:
    with pytest.raises(ValueError):
        StepTokens(prompt_ids=(1,), completion_ids=(2, 3), behaviour_logprobs=(-0.1,))
    with pytest.raises(ValueError):
        StepTokens(prompt_ids=(1,), completion_ids=(2,), behaviour_logprobs=(0.3,))
    with pytest.raises(ValueError):
        StepTokens(prompt_ids=(), completion_ids=(2,), behaviour_logprobs=(-0.3,))
    t = traj(adv=0.7, length=3)
    samples = t.step_samples()
    assert [s.advantage for s in samples] == [0.7] * 3
    assert {s.trajectory_steps for s in samples} == {3}
    assert len(flatten([t, traj(adv=-1.0, length=2)])) == 5
    with pytest.raises(ValueError):
        traj().step_samples()  # no advantage yet
    with pytest.raises(ValueError):
        StepSample(tokens=step(), advantage=float("nan"), trajectory_steps=1)


# -- TRPO success replay -------------------------------------------------------------------------


def test_success_replay_fills_an_all_failure_group_with_one_stored_success() -> None:
    replay = SuccessReplay(per_task=2, rng=random.Random(1))
    stored = traj(success=True, name=9)
    assert replay.add([stored, traj(success=False), traj("b", success=True)]) == 2
    group = [traj(name=i) for i in range(4)]
    filled, injected = replay.fill_group(group)
    assert injected
    replayed = [t for t in filled if t.is_replay]
    assert len(replayed) == 1 and replayed[0].success and replayed[0].task_id == "a"
    assert replayed[0].steps == stored.steps and not stored.is_replay  # a copy; the stored one is untouched
    assert sum(1 for a, b in zip(group, filled, strict=True) if a is not b) == 1
    assert len(filled) == 4


def test_success_replay_leaves_other_groups_alone() -> None:
    replay = SuccessReplay(rng=random.Random(0))
    replay.add([traj(success=True)])
    mixed = [traj(success=True), traj()]
    assert replay.fill_group(mixed) == (mixed, False)  # has a success already
    unknown = [traj("zzz"), traj("zzz")]
    assert replay.fill_group(unknown) == (unknown, False)  # nothing stored for the task
    with pytest.raises(ValueError):
        replay.fill_group([traj("a"), traj("b")])


def test_success_replay_keeps_newest_per_task_and_never_stores_replays() -> None:
    replay = SuccessReplay(per_task=2)
    replay.add([traj(success=True, name=i) for i in range(5)])
    assert [t.steps[0].completion_ids[0] for t in replay.successes("a")] == [3, 4]
    assert replay.add([traj(success=True).replayed()]) == 0
    assert len(replay) == 2


# -- DAPR ----------------------------------------------------------------------------------------


def test_dapr_inserts_top_kappa_positive_trajectories() -> None:
    """8 rollouts, κ = 0.25 → ⌈2⌉ = 2 inserted: advantages 2.0 and 1.5. 6 rollouts → ⌈1.5⌉ = 2.
    A top-κ rollout with A ≤ 0 is not positive and stays out."""
    advs = [0.5, -1.0, 2.0, -0.5, 1.0, -2.0, 1.5, -1.5]
    buf = DAPRBuffer(capacity=10)
    added = buf.insert([traj(adv=a) for a in advs], iteration=0)
    assert sorted(t.adv() for t in added) == [1.5, 2.0]
    assert len(buf) == 2
    added = buf.insert([traj(adv=a) for a in [0.3, 0.2, 0.1, -0.1, -0.2, -0.3]], iteration=1)
    assert [t.adv() for t in added] == [0.3, 0.2]
    assert buf.insert([traj(adv=0.0)] * 4, iteration=1) == []
    with pytest.raises(ValueError):
        buf.insert([traj()], iteration=1)  # no advantage


def test_dapr_eviction_score_by_hand() -> None:
    """capacity 2, α = 0.5, max age 4; a (A=1.0) and b (A=0.5) at iteration 0; c (A=0.8) at 2.
    At 2: norm_adv = [1, 0, 0.6]; recency = 1 − age/4 = [0.5, 0.5, 1];
    score = 0.5·norm + 0.5·rec = [0.75, 0.25, 0.8] → b leaves.
    d (A=0.9) at 4: entries a, c, d: norm = [1, 0, 0.5]; recency = [0, 0.5, 1];
    scores [0.5, 0.25, 0.75] → c leaves. At 5, a is 5 > 4 iterations old and expires."""
    buf = DAPRBuffer(capacity=2, top_fraction=1.0, max_age=4, eviction_alpha=0.5)
    a, b, c, d = traj(adv=1.0, name=1), traj(adv=0.5, name=2), traj(adv=0.8, name=3), traj(adv=0.9, name=4)
    buf.insert([a, b], iteration=0)
    assert buf.scores(2) == pytest.approx([1.0 * 0.5 + 0.25, 0.25])
    buf.insert([c], iteration=2)
    assert buf.trajectories() == [a, c]
    buf.insert([d], iteration=4)
    assert buf.trajectories() == [a, d]
    assert buf.expire(5) == 1
    assert buf.trajectories() == [d]


def stored(t: Trajectory) -> tuple[float, float]:
    """A rescore that keeps the stored values (for tests of the buffer's bookkeeping only)."""
    return 0.0, t.adv()


def test_dapr_mix_adds_at_most_gamma_m_highest_advantage_replays_once() -> None:
    """Buffer holds A = 3, 2, 1. 4 on-policy rollouts, γ = 0.5 → ⌊2⌋ replays: A = 3 and 2, marked
    replay; each leaves after one replay (max_replays 1). γ = 1 next → ⌊4⌋ but only A = 1 is left."""
    buf = DAPRBuffer(top_fraction=1.0)
    buf.insert([traj(adv=a, name=int(a)) for a in (1.0, 3.0, 2.0)], iteration=0)
    on_policy = [traj(adv=0.1) for _ in range(4)]
    batch = buf.mix(on_policy, 1, stored, gamma=0.5)
    assert batch[:4] == on_policy
    replays = batch[4:]
    assert [t.adv() for t in replays] == [3.0, 2.0]
    assert all(t.is_replay for t in replays)
    assert [t.adv() for t in buf.trajectories()] == [1.0]
    assert [t.adv() for t in buf.mix(on_policy, 1, stored, gamma=1.0)[4:]] == [1.0]
    assert len(buf) == 0
    assert buf.mix(on_policy, 1, stored, gamma=0.0) == on_policy


def test_dapr_draws_by_current_advantage_not_the_stored_one() -> None:
    """Stored A = 3, 2, 1, 0.5 (names 3, 2, 1, 5); now they score 0.2, 0.9, −0.4 and — task not
    played — nothing. Two draws: 0.9 (name 2) then 0.2 (name 3), carrying the current reward and
    advantage; −0.4 is not a positive and the unscored one waits: both stay in the buffer."""
    buf = DAPRBuffer(top_fraction=1.0)
    buf.insert([traj(adv=a, name=n) for a, n in ((3.0, 3), (2.0, 2), (1.0, 1), (0.5, 5))], iteration=0)
    now = {3: (1.0, 0.2), 2: (0.5, 0.9), 1: (1.0, -0.4), 5: None}
    drawn = buf.draw(4, 1, lambda t: now[t.steps[0].completion_ids[0]])
    assert [(t.steps[0].completion_ids[0], t.reward, t.adv()) for t in drawn] == [
        (2, 0.5, 0.9),
        (3, 1.0, 0.2),
    ]
    assert sorted(t.adv() for t in buf.trajectories()) == [0.5, 1.0]  # the buffer keeps stored values


def test_dapr_max_replays_keeps_entries_for_more_draws() -> None:
    buf = DAPRBuffer(top_fraction=1.0, max_replays=2)
    buf.insert([traj(adv=1.0)], iteration=0)
    assert len(buf.draw(1, 0, stored)) == 1 and len(buf) == 1
    assert len(buf.draw(1, 1, stored)) == 1 and len(buf) == 0


def _dgrpo(tmp_path: Path) -> DGRPOMethod:
    return DGRPOMethod(DGRPOConfig(base="m", output_dir=tmp_path))


def test_dgrpo_replay_advantage_is_recomputed_against_the_current_group(tmp_path: Path) -> None:
    """Iteration 1, task a: [S2, F3, F3, F3] (S2 = success of 2 steps). Baselines 1/4, 1/4, 0 →
    S = [1.5, −.5, −.5, −.5], sample std 1 → A = 1.5 for S2: κ = 0.25 inserts it (stored A 1.5).

    Iteration 2, a plays [S2, F3, F3]: baselines 1/3, 1/3, 0 → S = [4/3, −2/3, −2/3], std √(4/3)
    → A = 1.1547, −0.5774, −0.5774 (unchanged by the replay). The replay is scored as a 4th
    member: [S2, F3, F3, S2] → baselines .5, .5, 0 → S = [1, −1, −1, 1], std √(4/3) →
    A = 1/√(4/3) = 0.8660, reward 1 — not the stored 1.5. 2 positives allow 4 negatives: no pruning.
    """
    method = _dgrpo(tmp_path)
    first = [traj(success=True, length=2, name=1)] + [traj(length=3) for _ in range(3)]
    method.build_batch({"a": first}, 1)
    assert first[0].adv() == pytest.approx(1.5, rel=1e-5) and len(method.buffer) == 1
    second = [traj(success=True, length=2, name=2), traj(length=3), traj(length=3)]
    batch, metrics = method.build_batch({"a": second}, 2)
    assert [t.adv() for t in second] == pytest.approx([1.1547, -0.5774, -0.5774], abs=1e-4)
    assert batch[:3] == second and metrics["replayed"] == 1 and metrics["pruned_negatives"] == 0
    replay = batch[3]
    assert replay.is_replay and replay.steps == first[0].steps
    assert (replay.reward, replay.adv()) == (1.0, pytest.approx(1 / math.sqrt(4 / 3), rel=1e-5))


def test_dgrpo_does_not_replay_what_the_policy_now_does_better(tmp_path: Path) -> None:
    """The stored S2 of task a (A 1.5 at insertion). Iteration 2: task b only → a has no group,
    the replay waits. Iteration 3: a plays [S1, S1, S1]; as a 4th member S2 earns SPA 1 − (2−1)/2
    = .5; baselines (1+1+1+.5)/4 = .875 and .5/4 = .125 → S = [1/8, 1/8, 1/8, −3/8 + 3/8 = 0],
    below the mean 3/32: a negative current advantage, so it is not replayed (the stale 1.5
    would have pushed a now-too-long path up)."""
    method = _dgrpo(tmp_path)
    method.build_batch({"a": [traj(success=True, length=2, name=1)] + [traj(length=3) for _ in range(3)]}, 1)
    _, metrics = method.build_batch({"b": [traj("b", success=True), traj("b")]}, 2)
    assert metrics["replayed"] == 0 and any(t.task_id == "a" for t in method.buffer.trajectories())
    batch, metrics = method.build_batch({"a": [traj(success=True, length=1) for _ in range(3)]}, 3)
    assert metrics["replayed"] == 0 and not any(t.is_replay for t in batch)


def test_prune_negatives_drops_lowest_advantage_first() -> None:
    """1 positive → at most 2 negatives; 4 negatives → drop 2: the lowest, −1.0 and −0.5.
    Zero-advantage rollouts are neither and stay; order is kept."""
    advs = [1.0, -0.2, -0.5, -1.0, -0.1, 0.0]
    kept = prune_negatives([traj(adv=a) for a in advs])
    assert [t.adv() for t in kept] == [1.0, -0.2, -0.1, 0.0]


def test_prune_negatives_ignores_kl_between_different_advantages() -> None:
    """Negatives −0.2 (KL .3), −0.5 (KL .1), −1.0 (KL .05), −0.1 (KL .3), one positive → drop 2:
    the lowest advantages −1.0 and −0.5, although their KL is the lowest."""
    ts = [
        traj(adv=1.0, kl=0.0),
        traj(adv=-0.2, kl=0.3),
        traj(adv=-0.5, kl=0.1),
        traj(adv=-1.0, kl=0.05),
        traj(adv=-0.1, kl=0.3),
    ]
    assert [t.adv() for t in prune_negatives(ts)] == [1.0, -0.2, -0.1]


def test_prune_negatives_breaks_ties_by_highest_kl_scoring_only_the_tied() -> None:
    """One positive, then −1.0 and four failures of one group at −0.5 (one off by 1e−12, float
    noise); 5 negatives, 2 allowed → drop 3: −1.0, then the two tied with the highest KL (.4, .3).
    ``kl_of`` scores the four tied ones only, never −1.0 (nothing ties with it)."""
    kls = {1: 0.1, 2: 0.4, 3: 0.2, 4: 0.3}
    scored: list[int] = []

    def kl_of(t: Trajectory) -> float:
        scored.append(t.steps[0].completion_ids[0])
        return kls[t.steps[0].completion_ids[0]]

    ts = [traj(adv=1.0, name=0), traj(adv=-1.0, name=9)]
    ts += [traj(adv=-0.5 + (1e-12 if n == 3 else 0.0), name=n) for n in (1, 2, 3, 4)]
    kept = prune_negatives(ts, kl_of=kl_of)
    assert [t.steps[0].completion_ids[0] for t in kept] == [0, 1, 3]
    assert sorted(scored) == [1, 2, 3, 4]
    # no ratio to restore: nothing scored
    scored.clear()
    assert prune_negatives(ts[:4], max_negatives_per_positive=3.0, kl_of=kl_of) == ts[:4] and scored == []
    # no KL at all: the earlier tied ones go
    plain = [traj(adv=1.0, name=0)] + [traj(adv=-0.5, name=n) for n in (1, 2, 3)]
    assert [t.steps[0].completion_ids[0] for t in prune_negatives(plain)] == [0, 2, 3]


def test_prune_negatives_ratio_and_no_op() -> None:
    """2 positives allow 4 negatives at 1:2 but only 2 at 1:1."""
    ts = [traj(adv=a) for a in (1.0, 0.5, -0.1, -0.2, -0.3, -0.4)]
    assert prune_negatives(ts) == ts
    assert [t.adv() for t in prune_negatives(ts, max_negatives_per_positive=1.0)] == [1.0, 0.5, -0.1, -0.2]
    assert [t.adv() for t in prune_negatives([traj(adv=-1.0), traj(adv=0.0)])] == [0.0]


def test_dgrpo_batch_counts_the_successes_spa_paid_less(tmp_path: Path) -> None:
    """``spa_adjusted`` says whether SPA changed anything: 0 means "w/o SPA" is the same update."""

    def groups() -> dict[str, list[Trajectory]]:
        return {
            "a": [traj("a", success=True, length=2), traj("a", success=True, length=4), traj("a", length=3)],
            "b": [traj("b", success=True, length=3), traj("b", success=True, length=3), traj("b")],
        }

    played = groups()
    _, metrics = DGRPOMethod(DGRPOConfig(base="m", output_dir=tmp_path)).build_batch(played, 1)
    assert metrics["spa_adjusted"] == 1  # a's 4-step success earns 1 − (4 − 2)/4; b's are equally short
    assert [t.reward for t in played["a"]] == [1.0, 0.5, 0.0]
    off = DGRPOConfig(base="m", output_dir=tmp_path / "off", spa=False)
    _, metrics = DGRPOMethod(off).build_batch(groups(), 1)
    assert metrics["spa_adjusted"] == 0
