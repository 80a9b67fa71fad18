"""SimPhone as a Gymnasium environment, for RL stacks other than the project's own trainers.

``import agent_runtime.simphone.gym`` registers ``agent_runtime/SimPhone-v0``::

    import gymnasium as gym
    import agent_runtime.simphone.gym  # noqa: F401  (registers the id)

    env = gym.make("agent_runtime/SimPhone-v0", task="ClockAddAlarm", split="train")
    obs, info = env.reset(seed=0)                 # info["goal"] is the instruction
    obs, reward, terminated, truncated, info = env.step('{"action": "system_button", "button": "Home"}')

* **Task, split, seed**: ``make(..., task=, split=, instance_seed=)`` set defaults and
  ``reset(options={"task": …, "split": …, "seed": …})`` overrides them per episode. Without a
  task, each reset draws a template from the split (``train`` leaves out the held-out
  templates, :data:`~agent_runtime.simphone.tasks.registry.TEMPLATE_HELDOUT`); without an
  instance seed, it draws the first instance of the split from a random start seed. ``reset``'s
  own ``seed`` seeds those draws, so ``reset(seed=s)`` replays the same episode.
* **Observation**: a ``Dict`` of ``screenshot`` (``uint8`` array, height × width × 3) and
  ``ui_tree`` (the uiautomator XML the agents read). The goal is in ``info["goal"]``.
* **Action**: the project's action JSON as text (:func:`~agent_runtime.actions.parse_action`),
  coordinates in screen pixels. ``answer`` records the answer of a question task;
  ``terminate`` ends the episode. A malformed action changes nothing and is counted.
* **Reward**: 0 until the episode ends; then the task's judgement (goal met *and* no side
  effect, :meth:`Task.judge`) as the trainers' TRPO reward (1 or 0, −0.5 once when any action
  was malformed) — or, with ``reward="spa"``, the shortest-path-adjusted reward of DGRPO
  (:func:`~agent_runtime.rewards.spa_rewards` against the expert's length).
  ``info`` carries both at the end, with ``success``, ``side_effects`` and ``oracle_steps``.
* **terminated** when the agent sends ``terminate``; **truncated** when the task's step budget
  runs out first (as Gymnasium defines them: a terminal state, a time limit).
"""

from __future__ import annotations

import random
from typing import Any, Literal

import gymnasium
import numpy as np
from gymnasium import spaces

from agent_runtime.actions import Answer, Terminate, parse_action
from agent_runtime.errors import ActionParseError, ConfigError, TaskError
from agent_runtime.rewards import spa_rewards, task_reward
from agent_runtime.simphone.phone import SimPhone
from agent_runtime.simphone.tasks import SPLITS, Task, make_task, registry, task_instances
from agent_runtime.simphone.tasks.registry import trainable

ENV_ID = "agent_runtime/SimPhone-v0"
#: The longest action text a step takes and the longest UI tree an observation carries.
MAX_ACTION_CHARS = 10_000
MAX_TREE_CHARS = 2_000_000
RewardKind = Literal["task", "spa"]
#: Where a reset without an instance seed starts looking for an instance of the split.
_SEED_RANGE = 100_000


class UnicodeText(spaces.Text):
    """A ``Text`` space of any Unicode text: UI trees and typed text are not alphanumeric.

    ``sample()`` draws from the printable ASCII charset it was given; ``contains`` accepts
    every string of the allowed length without lone surrogates (which no screen or JSON holds).
    """

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, str)
            and self.min_length <= len(x) <= self.max_length
            and not any("\ud800" <= c <= "\udfff" for c in x)
        )


_PRINTABLE = "".join(chr(c) for c in range(32, 127))


class SimPhoneEnv(gymnasium.Env[dict[str, Any], str]):
    """One SimPhone task episode per ``reset`` (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        task: str | None = None,
        split: str = "train",
        instance_seed: int | None = None,
        *,
        width: int = 1080,
        height: int = 2400,
        reward: RewardKind = "task",
        spa_alpha: float = 1.0,
        render_mode: str | None = None,
    ) -> None:
        if task is not None and task not in registry():
            make_task(task)  # raises TaskError with close names
        _check_split(split)
        if reward not in ("task", "spa"):
            raise ConfigError(f"unknown SimPhone reward {reward!r}", hint="use task or spa")
        if render_mode not in (None, "rgb_array"):
            raise ConfigError(f"unsupported render_mode {render_mode!r}", hint="use rgb_array or None")
        self.task_name, self.split, self.instance_seed = task, split, instance_seed
        self.width, self.height = width, height
        self.reward_kind: RewardKind = reward
        self.spa_alpha = spa_alpha
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
                "ui_tree": UnicodeText(MAX_TREE_CHARS, min_length=0, charset=_PRINTABLE),
            }
        )
        self.action_space = UnicodeText(MAX_ACTION_CHARS, charset=_PRINTABLE)
        self.phone: SimPhone | None = None
        self.task: Task | None = None
        self._before: dict[str, Any] = {}
        self._steps = 0
        self._malformed = 0
        self._answer: str | None = None
        self._done = False

    # -- the Gymnasium API --------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        opts = dict(options or {})
        unknown = set(opts) - {"task", "split", "seed"}
        if unknown:
            raise ConfigError(
                f"unknown SimPhone reset option(s): {', '.join(sorted(unknown))}",
                hint="use task, split, seed",
            )
        split = str(opts.get("split", self.split))
        _check_split(split)
        name = opts.get("task", self.task_name) or self._draw_template(split)
        instance_seed = opts.get("seed", self.instance_seed)
        if instance_seed is None:
            start = int(self.np_random.integers(0, _SEED_RANGE))
            (task,) = task_instances([name], split=split, seed=start)  # type: ignore[arg-type]
        else:
            task = make_task(name, int(instance_seed))
        if self.phone is not None:
            self.phone.close()
        self.task = task
        self.phone = SimPhone(seed=task.seed, width=self.width, height=self.height)
        task.setup(self.phone)
        self._before = self.phone.state()
        self._steps, self._malformed, self._answer, self._done = 0, 0, None, False
        return self._observation(), self._info()

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self.phone is None or self.task is None or self._done:
            raise TaskError("the SimPhone episode is over (or never started): call reset() first")
        self._steps += 1
        terminated = False
        error: str | None = None
        try:
            parsed = parse_action(action)
        except ActionParseError as exc:
            self._malformed += 1
            error = exc.message
        else:
            if isinstance(parsed, Terminate):
                self._steps -= 1  # ending is not a step (as in the harness's play loop)
                terminated = True
            elif isinstance(parsed, Answer):
                self._answer = parsed.text
            else:
                result = self.phone.execute(parsed)
                error = None if result.ok else (result.error or result.message)
        truncated = not terminated and self._steps >= self.task.max_steps
        info = self._info()
        if error is not None:
            info["error"] = error
        reward = 0.0
        if terminated or truncated:
            self._done = True
            reward = self._final(info)
        return self._observation(), reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        if self.render_mode != "rgb_array" or self.phone is None:
            return None
        return self._screenshot()

    def close(self) -> None:
        if self.phone is not None:
            self.phone.close()
            self.phone = None

    # -- helpers ------------------------------------------------------------------------------
    def _draw_template(self, split: str) -> str:
        names = list(registry())
        if split == "train":
            names = trainable(names)  # the held-out templates stay out of every training path
        return names[int(self.np_random.integers(0, len(names)))]

    def _screenshot(self) -> np.ndarray:
        assert self.phone is not None
        return np.asarray(self.phone.screenshot_image(), dtype=np.uint8)

    def _observation(self) -> dict[str, Any]:
        assert self.phone is not None
        return {"screenshot": self._screenshot(), "ui_tree": self.phone.ui_xml()}

    def _info(self) -> dict[str, Any]:
        assert self.phone is not None and self.task is not None
        package, activity = self.phone.current_focus()
        return {
            "task": self.task.name,
            "seed": self.task.seed,
            "goal": self.task.goal,
            "max_steps": self.task.max_steps,
            "steps": self._steps,
            "app": package,
            "activity": activity,
        }

    def _final(self, info: dict[str, Any]) -> float:
        """Judge the episode; fill ``info`` with the verdict and both rewards; return the reward."""
        assert self.phone is not None and self.task is not None
        judged = self.task.judge(self.phone, self._answer, self._before)
        oracle = _oracle_steps(self.task) if judged.success else None
        trpo = task_reward(judged.success, self._malformed)
        spa = (
            spa_rewards([True, True], [oracle, max(1, self._steps)], alpha=self.spa_alpha)[1]
            if oracle is not None
            else (1.0 if judged.success else 0.0)
        )
        spa += task_reward(False, self._malformed)  # the same format term
        info.update(
            success=judged.success,
            goal_score=judged.goal_score,
            side_effects=list(judged.side_effects),
            reason=judged.reason,
            answer=self._answer,
            malformed_actions=self._malformed,
            oracle_steps=oracle,
            task_reward=trpo,
            spa_reward=spa,
        )
        return trpo if self.reward_kind == "task" else spa


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}", hint=f"use one of: {', '.join(SPLITS)}")


def _oracle_steps(task: Task) -> int | None:
    """The expert's length on a fresh copy of the instance (DGRPO's shortest path)."""
    from agent_runtime.simphone.tasks.expert import expert_steps

    return expert_steps(task.name, task.seed)


def random_action(rng: random.Random, width: int, height: int) -> str:
    """A random valid action JSON (click, swipe, Back or typing): a baseline policy.

    >>> random_action(random.Random(0), 1080, 2400).startswith('{"action": ')
    True
    """
    import json

    kind = rng.choice(["click", "click", "click", "swipe", "back", "type"])
    if kind == "click":
        return json.dumps({"action": "click", "coordinate": [rng.randrange(width), rng.randrange(height)]})
    if kind == "swipe":
        points = [[rng.randrange(width), rng.randrange(height)] for _ in range(2)]
        return json.dumps({"action": "swipe", "coordinate": points[0], "coordinate2": points[1]})
    if kind == "back":
        return json.dumps({"action": "system_button", "button": "Back"})
    return json.dumps({"action": "type", "text": rng.choice(["hello", "42", "Ana"])})


if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point=f"{__name__}:SimPhoneEnv")
