"""What the online RL trainers (TRPO, DGRPO) consume: token-level steps and trajectories.

A rollout is a :class:`Trajectory` of :class:`StepTokens` — one per policy call, exactly as the
policy saw and wrote it: the prompt's token ids (image placeholders already expanded, so they
match ``multimodal['image_grid_thw']``), the sampled completion's ids and the behaviour policy's
log-prob of each completion token. The reward/advantage functions only need a trajectory's
outcome and length; the policy-gradient core needs the tokens. :meth:`Trajectory.step_samples`
flattens a trajectory into :class:`StepSample` s that carry its advantage, its length (for
TRPO's length weighting) and whether it was replayed from a buffer (stale behaviour log-probs).

Hi-Agent's single-step GRPO uses none of this: ``trl.GRPOTrainer`` samples, scores and tokenises
its own completions (:mod:`agent_runtime.trainers.hi_agent.grpo_trainer`).

Nothing here imports torch: ``multimodal`` holds whatever tensors the processor returned, untouched.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StepTokens:
    """One policy call: the prompt it saw, the completion it sampled, the behaviour log-probs.

    ``multimodal`` holds the processor's image tensors for the prompt (``pixel_values``,
    ``image_grid_thw``); text-only prompts leave it empty. ``temperature`` is the sampling
    temperature the call actually used, as its trace recorded it (None: not recorded).
    """

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    behaviour_logprobs: tuple[float, ...]
    multimodal: Mapping[str, Any] = field(default_factory=dict)
    temperature: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_ids", tuple(int(i) for i in self.prompt_ids))
        object.__setattr__(self, "completion_ids", tuple(int(i) for i in self.completion_ids))
        object.__setattr__(self, "behaviour_logprobs", tuple(float(x) for x in self.behaviour_logprobs))
        if not self.prompt_ids:
            raise ValueError("a step needs at least one prompt token")
        if not self.completion_ids:
            raise ValueError("a step needs at least one completion token")
        if len(self.behaviour_logprobs) != len(self.completion_ids):
            raise ValueError(
                f"{len(self.behaviour_logprobs)} behaviour log-probs for {len(self.completion_ids)} "
                "completion tokens: there must be one per completion token"
            )
        if any(not math.isfinite(x) or x > 1e-6 for x in self.behaviour_logprobs):
            raise ValueError("behaviour log-probs must be finite and <= 0 (they are log-probabilities)")


@dataclass(frozen=True)
class StepSample:
    """A step ready for the loss: its tokens plus what it inherits from its trajectory."""

    tokens: StepTokens
    advantage: float
    trajectory_steps: int
    is_replay: bool = False

    def __post_init__(self) -> None:
        if self.trajectory_steps < 1:
            raise ValueError("trajectory_steps must be >= 1")
        if not math.isfinite(self.advantage):
            raise ValueError(f"advantage must be finite, got {self.advantage}")


@dataclass
class Trajectory:
    """One rollout of one task, plus what the trainer works out about it.

    ``success`` is the environment's binary outcome; ``malformed_actions`` counts actions that
    failed to parse (TRPO's format penalty). ``reward``/``advantage`` are filled in by
    :mod:`.rewards`/:mod:`.advantages`; ``kl`` (trajectory-level KL between the current and the
    behaviour policy) by the trainer when DAPR prunes negatives; ``iteration`` is when it was
    collected (DAPR's age). ``is_replay`` marks a copy drawn from a replay buffer.
    """

    task_id: str
    steps: list[StepTokens]
    success: bool
    malformed_actions: int = 0
    reward: float | None = None
    advantage: float | None = None
    kl: float | None = None
    iteration: int = 0
    is_replay: bool = False

    @property
    def length(self) -> int:
        """T_i, the number of policy steps (actions) in the trajectory."""
        return len(self.steps)

    def adv(self) -> float:
        """The advantage, which must have been computed by now."""
        if self.advantage is None:
            raise ValueError(f"trajectory of task {self.task_id!r} has no advantage yet: compute it first")
        return self.advantage

    def replayed(self) -> Trajectory:
        """A copy marked as replayed (the original in the buffer stays as it is)."""
        return dataclasses.replace(self, steps=list(self.steps), is_replay=True)

    def step_samples(self, temperature: float | None = None) -> list[StepSample]:
        """The steps with this trajectory's advantage (the same Â for all steps of τ).

        With ``temperature`` (the loss's), a step recorded as sampled at another temperature
        is left out: its tokens came from another distribution than the one its behaviour
        log-probs describe (the server's raw ones, or the trainer's rescoring at the loss's
        temperature), so its ratio would read 1 — an off-policy sample trained as on-policy.
        It still counts in T (it was a call of the trajectory) and in ``malformed_actions``.
        """
        advantage = self.adv()
        return [
            StepSample(tokens=s, advantage=advantage, trajectory_steps=self.length, is_replay=self.is_replay)
            for s in self.steps
            if sampled_at(s, temperature)
        ]


def sampled_at(step: StepTokens, temperature: float | None) -> bool:
    """Whether ``step`` may be trained as sampled at ``temperature`` (None, either side: unknown,
    so yes).

    >>> step = StepTokens((1,), (2,), (-0.5,), temperature=0.7)
    >>> sampled_at(step, 0.7), sampled_at(step, 1.0), sampled_at(step, None)
    (True, False, True)
    """
    if temperature is None or step.temperature is None:
        return True
    return math.isclose(step.temperature, temperature, rel_tol=1e-9, abs_tol=1e-12)


def flatten(trajectories: list[Trajectory], temperature: float | None = None) -> list[StepSample]:
    """All steps of all trajectories, in order (what one policy update consumes); with
    ``temperature``, without the steps sampled at another one (:meth:`Trajectory.step_samples`)."""
    return [sample for t in trajectories for sample in t.step_samples(temperature)]
