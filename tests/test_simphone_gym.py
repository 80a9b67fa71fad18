"""SimPhone through the Gymnasium API: the checker, a random episode, an expert episode."""

from __future__ import annotations

import json
import random

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agent_runtime.errors import ConfigError, TaskError
from agent_runtime.observation import Observation
from agent_runtime.simphone.gym import ENV_ID, SimPhoneEnv, random_action
from agent_runtime.simphone.tasks import make_task
from agent_runtime.simphone.tasks.oracle import OraclePolicy
from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT

W, H = 270, 600  # a small screen keeps the arrays cheap


@pytest.mark.filterwarnings("error")  # the checker's warnings count as failures
def test_check_env_passes() -> None:
    env = gymnasium.make(ENV_ID, task="ClockAddAlarm", width=W, height=H, render_mode="rgb_array")
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_make_registers_the_id_and_takes_task_split_and_seed() -> None:
    env = gymnasium.make(ENV_ID, task="SettingsToggle", split="test", width=W, height=H)
    obs, info = env.reset(seed=3)
    assert info["task"] == "SettingsToggle" and info["goal"] == make_task("SettingsToggle", info["seed"]).goal
    assert obs["screenshot"].shape == (H, W, 3) and obs["screenshot"].dtype == np.uint8
    assert obs["ui_tree"].startswith("<?xml")
    again, info2 = env.reset(seed=3)
    assert info2["seed"] == info["seed"] and np.array_equal(again["screenshot"], obs["screenshot"])
    _, info3 = env.reset(options={"task": "NotesCreate", "seed": 5})
    assert (info3["task"], info3["seed"]) == ("NotesCreate", 5)
    env.close()


def test_train_never_draws_a_held_out_template() -> None:
    env = SimPhoneEnv(width=W, height=H)
    drawn = {env.reset(seed=s)[1]["task"] for s in range(40)}
    assert len(drawn) > 10 and not drawn & TEMPLATE_HELDOUT


def test_an_oracle_episode_through_the_api_earns_the_reward() -> None:
    env = gymnasium.make(ENV_ID, task="ContactsFavorite", width=W, height=H, reward="spa")
    obs, info = env.reset(options={"seed": 2})
    policy = OraclePolicy(make_task("ContactsFavorite", 2))
    size = env.unwrapped.phone.screen_size  # type: ignore[attr-defined]
    terminated = truncated = False
    reward, steps = 0.0, 0
    while not (terminated or truncated):
        seen = Observation(screenshot=b"", size=size, ui_xml=obs["ui_tree"], app=info["app"])
        action = policy(seen)
        obs, reward, terminated, truncated, info = env.step(action.model_dump_json())
        steps += 1
    assert terminated and not truncated
    assert info["success"] and info["side_effects"] == [] and reward == 1.0
    assert info["oracle_steps"] == info["steps"] == steps - 1  # terminate is not a step
    assert info["task_reward"] == info["spa_reward"] == 1.0
    env.close()


def test_a_random_episode_runs_to_its_budget_and_is_judged() -> None:
    env = gymnasium.make(ENV_ID, task="NotesCreate", width=W, height=H)
    obs, info = env.reset(seed=0)
    rng = random.Random(0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(random_action(rng, W, H))
        assert env.observation_space.contains(obs)
        steps += 1
    assert truncated and not terminated and steps == info["max_steps"]
    assert info["success"] is False and reward == 0.0
    with pytest.raises(TaskError, match="reset"):
        env.step(random_action(rng, W, H))
    env.close()


def test_malformed_actions_change_nothing_and_cost_the_format_penalty() -> None:
    env = SimPhoneEnv(task="ClockStartTimer", width=W, height=H)
    obs, _ = env.reset(seed=0)
    after, reward, terminated, truncated, info = env.step("tap somewhere nice")
    assert "error" in info and after["ui_tree"] == obs["ui_tree"] and reward == 0.0
    _, reward, terminated, _, info = env.step(json.dumps({"action": "terminate", "status": "success"}))
    assert terminated and info["malformed_actions"] == 1 and reward == -0.5
    env.close()


def test_bad_arguments_are_named_errors() -> None:
    with pytest.raises(TaskError, match="unknown SimPhone task"):
        SimPhoneEnv(task="NoSuchTask")
    with pytest.raises(ConfigError, match="split"):
        SimPhoneEnv(split="dev")
    env = SimPhoneEnv(task="ClockAddAlarm", width=W, height=H)
    with pytest.raises(ConfigError, match="reset option"):
        env.reset(options={"tsak": "x"})
