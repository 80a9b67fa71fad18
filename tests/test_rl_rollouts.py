"""Rollouts for online RL: the runtime graph on SimPhone records what the loss needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from agent_runtime.roles.caller import rl_fields
from agent_runtime.trainers.online.rollouts import RolloutRequest, group_requests
from tests.rl_helpers import runtime_config, scripted_manager

pytestmark = pytest.mark.train


def test_rl_fields_only_when_the_model_returned_them() -> None:
    assert rl_fields(AIMessage(content="x", response_metadata={"finish_reason": "stop"})) == {}
    meta = {
        "token_ids": [5, 6],
        "prompt_token_ids": [1, 2, 3],
        "logprobs": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.0}],
        "finish_reason": "length",
    }
    rl = rl_fields(AIMessage(content="ab", response_metadata=meta), {"temperature": 0.9, "seed": 4})["rl"]
    assert rl == {
        "prompt_token_ids": [1, 2, 3],
        "token_ids": [5, 6],
        "logprobs": [-0.5, -1.0],
        "finish_reason": "length",
        "truncated": True,
        "temperature": 0.9,
        "seed": 4,
    }


def test_group_requests_give_each_rollout_its_own_seed() -> None:
    reqs = group_requests([("A", 0), ("B", 3)], 4, iteration=2, seed=0)
    assert [(r.task_name, r.group_index) for r in reqs][:5] == [
        ("A", 0),
        ("A", 1),
        ("A", 2),
        ("A", 3),
        ("B", 0),
    ]
    assert len({r.sample_seed for r in reqs}) == 8
    assert reqs == group_requests([("A", 0), ("B", 3)], 4, iteration=2, seed=0)  # reproducible on resume
    assert reqs != group_requests([("A", 0), ("B", 3)], 4, iteration=3, seed=0)


def test_in_process_rollout_records_tokens_logprobs_and_rebuilds_pixels(
    rl_policy_dir: Path, tmp_path: Path
) -> None:
    import torch

    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.trainers.online.policy import InProcessPolicy
    from agent_runtime.trainers.online.policy_gradient import score_logprobs
    from agent_runtime.trainers.online.rollouts import RolloutWorker

    torch.set_num_threads(1)
    engine = TransformersEngine(rl_policy_dir, dtype="float32")
    policy = InProcessPolicy(engine, "policy", temperature=1.0, top_p=1.0, max_tokens=32)
    worker = RolloutWorker(
        runtime_config(tmp_path),
        "worker",
        policy.chat_model,
        engine.processor,
        tmp_path / "runs",
        other_models={"manager": scripted_manager()},
        max_turns=2,
    )
    result = worker.play(RolloutRequest(task_name="SettingsWifiNetworkQuestion", task_seed=0, sample_seed=7))
    ep, traj = result.episode, result.trajectory
    assert ep.error is None and traj is not None
    assert traj.task_id.startswith("SettingsWifiNetworkQuestion:") and traj.success == ep.success
    assert traj.length == ep.policy_calls >= 1
    calls = [json.loads(line) for line in (Path(ep.run_dir) / "calls.jsonl").read_text().splitlines()]
    worker_calls = [c for c in calls if c["role"] == "worker"]
    assert [c for c in calls if c["role"] == "manager"] and all(
        "rl" not in c["extra"] for c in calls if c["role"] == "manager"
    )
    assert len(worker_calls) == traj.length
    for call, step in zip(worker_calls, traj.steps, strict=True):
        rl = call["extra"]["rl"]
        assert call["model"] == "policy-v0000"  # the policy version is what the trace names
        assert rl["temperature"] == step.temperature == 1.0
        assert len(rl["token_ids"]) == len(rl["logprobs"]) == len(step.completion_ids)
        assert tuple(rl["prompt_token_ids"]) == step.prompt_ids
        grid = step.multimodal["image_grid_thw"]
        image_tokens = sum(1 for t in step.prompt_ids if t == engine.model.config.image_token_id)
        assert image_tokens == int(grid.prod(-1).sum()) // 4 > 0
        assert step.multimodal["pixel_values"].shape[0] == int(grid.prod(-1).sum())
    # The server's behaviour log-probs are the trainer's log-probs of the same tokens (ratio 1).
    rescored = score_logprobs(engine.model, traj.steps)
    for step, lp in zip(traj.steps, rescored, strict=True):
        assert lp == pytest.approx(list(step.behaviour_logprobs), abs=1e-3)
    run = json.loads((Path(ep.run_dir) / "run.json").read_text())
    assert run["rl"]["task_id"] == traj.task_id and run["eval"]["task_success"] == ep.success
