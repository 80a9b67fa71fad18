"""ReachAgent's DPO pairs from the SFT agent's own replies (§4.3 "regenerate"), on SimPhone.

The policy is the tiny offline Qwen2.5-VL (session fixture ``tiny_vlm_dir``): its replies are
noise the Worker parser rejects, so they are Invalid and become rejected sides verbatim. A policy
that always answers the golden action shows the fallback to the page's action space.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.simphone.tasks import make_task
from agent_runtime.trainers.artifacts import read_manifest
from agent_runtime.trainers.data.preferences import Level, invalid_taps, level_of, level_reply, simphone_pairs
from agent_runtime.trainers.data.regenerate import PolicySampler, RegenerationOptions
from agent_runtime.trainers.data.worker_prompts import format_worker_reply, to_model_space
from agent_runtime.trainers.demos.experts import ExpertStep, play_expert_episode
from tests.test_trainers import PROMPT, one_torch_thread  # noqa: F401  (autouse)


def reply_for(action: dict[str, Any], step: ExpertStep) -> str:
    """A well-formed Worker reply for a screen-pixel action, in the prompt's coordinate space."""
    model_action = to_model_space(action, PROMPT.mapper(step.screen))
    return format_worker_reply("I act.", model_action, "An action.")


def test_replies_are_levelled_by_parse_action_space_and_replay(tmp_path):
    task = make_task("ClockReachTab", 0)
    episode = play_expert_episode(task, tmp_path)
    golden = [s.action for s in episode.steps]
    assert [a["action"] for a in golden] == ["open_app", "click", "terminate"]
    step, obs = episode.steps[0], episode.observations[0]

    def level(reply: str) -> Level:
        return level_reply(reply, task.name, task.seed, golden, 0, obs, PROMPT, task.max_steps)

    settings = next(e for e in obs.elements if e.label == "Settings" and e.actionable)
    empty = invalid_taps(obs.elements, obs.size, random.Random(0), 1)[0]
    assert level(reply_for(golden[0], step)) is Level.GOLDEN
    detour = {"action": "click", "coordinate": list(settings.bounds.center)}
    assert level(reply_for(detour, step)) is Level.LONGER  # Settings first: the tab is reached later
    assert level("I would open the Clock app.") is Level.INVALID  # no action JSON: the parser rejects it
    assert level(reply_for(empty, step)) is Level.INVALID  # a tap no actionable element covers
    # the phone refuses to type with no field focused: "cannot be executed"
    typing = {"action": "type", "text": "7"}
    assert level_of(task.name, task.seed, golden, 0, typing, task.max_steps) is Level.INVALID
    # terminating before the tab is open ends the flow short of the goal (no oracle finishes it)
    stop = {"action": "terminate", "status": "success"}
    assert level_of(task.name, task.seed, golden, 0, stop, task.max_steps) is Level.INCOMPLETE


@pytest.mark.train
def test_the_tiny_policys_invalid_replies_become_the_rejected_sides(tiny_vlm_dir, tmp_path):
    sampler = PolicySampler.from_ref(str(tiny_vlm_dir), PROMPT, RegenerationOptions(k=2, max_tokens=24), 0)
    sampled: dict[str, list[str]] = {}

    def regenerate(step: ExpertStep) -> list[str]:
        sampled[f"{step.task_name}/{step.seed}/{step.step}"] = replies = sampler(step)
        return replies

    pairs, stats = simphone_pairs(
        tmp_path, PROMPT, tasks="ClockReachTab", max_candidates=2, regenerate=regenerate
    )
    assert stats.states == len(sampled) == 3 and all(len(r) == 2 for r in sampled.values())
    assert sum(stats.policy_replies.values()) == sum(len(set(r)) for r in sampled.values())
    policy = [p for p in pairs if p.rejected_source == "policy"]
    assert policy and stats.rejected_source["policy"] == len(policy)
    for p in policy:  # the policy's reply itself, verbatim, below the golden action
        assert p.rejected in sampled[p.state] and p.chosen != p.rejected
        assert p.chosen_level == "GOLDEN" and Level[p.rejected_level] < Level.GOLDEN
    # the page's action space only fills in at states where the policy was not worse than golden
    assert not {p.state for p in policy} & {p.state for p in pairs if p.rejected_source == "action_space"}


def test_a_policy_as_good_as_golden_falls_back_to_the_action_space(tmp_path):
    def golden_policy(step: ExpertStep) -> list[str]:
        return [reply_for(step.action, step)]

    pairs, stats = simphone_pairs(
        tmp_path / "a", PROMPT, tasks="ClockReachTab", max_candidates=2, regenerate=golden_policy
    )
    assert stats.policy_replies == {"GOLDEN": 3}
    assert pairs and stats.rejected_source == {"action_space": len(pairs)}
    # exactly the pairs built without a policy
    alone, alone_stats = simphone_pairs(tmp_path / "a", PROMPT, tasks="ClockReachTab", max_candidates=2)
    assert [p.model_dump() for p in pairs] == [p.model_dump() for p in alone]
    assert alone_stats.candidates == stats.candidates and alone_stats.policy_replies == {}


@pytest.mark.train
def test_distill_dpo_regenerates_with_the_base_and_records_where_rejected_sides_came_from(
    tiny_vlm_dir, tmp_path
):
    out = tmp_path / "worker-dpo"
    args = (
        f"distill --role worker --method dpo --tasks ClockReachTab --base {tiny_vlm_dir} --out {out} "
        "--no-trace-pairs --max-candidates 1 --max-steps 1 --regenerations 1 --max-new-tokens 16 "
        "--min-pixels 3136 --max-pixels 12544"
    )
    res = CliRunner().invoke(app, args.split(), terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "rejected sides from" in " ".join(res.output.split())
    m = read_manifest(out)
    assert m.data.extra["rejected_source"]["policy"] >= 1
    assert sum(m.data.extra["rejected_source"].values()) == m.data.train_rows
    assert sum(m.training.extra["simphone"]["policy_replies"].values()) == 3  # 3 golden states, K = 1
    regenerate = m.hyperparameters["data"]["regenerate"]
    assert regenerate == {"k": 1, "model": None, "temperature": 1.0, "max_tokens": 16}
