"""Rollouts for online RL: the real runtime graph plays SimPhone tasks; traces become trajectories.

One rollout = one :class:`~agent_runtime.runtime.Runtime` run of a task instance on its own,
freshly set-up :class:`~agent_runtime.simphone.SimPhone`, judged afterwards by the task's
checker (:func:`play_rollout`). The trained role's chat model asks for ``logprobs`` and
``return_token_ids`` (vLLM's fields; ``agent-runtime serve`` and the in-process backend answer
them too), so :class:`~agent_runtime.roles.caller.RoleCaller` records in each of its
``CallRecord.extra["rl"]`` the prompt's token ids *as the server tokenised them* (image
placeholders expanded), the completion's ids and each sampled token's log-probability. The other
roles keep their configured models. A group is G rollouts of one instance, with different
sampling seeds, each on its own phone.

:func:`trajectory_from_run` turns a finished run into an :class:`~.samples.Trajectory`:

* one :class:`~.samples.StepTokens` per call of the trained role, **re-asks included** —
  every attempt is text the policy sampled and is credited or blamed with the trajectory's
  advantage (a malformed attempt is exactly what TRPO's format penalty targets), so T counts
  calls, not executed actions;
* ``malformed_actions`` = calls whose reply did not parse;
* each step keeps the sampling temperature its call recorded (``extra.rl.temperature``), so a
  call sampled at another temperature than the loss's is kept out of the loss
  (:meth:`~.samples.Trajectory.step_samples`) rather than trained as on-policy;
* pixel values are rebuilt from the recorded screenshots: each is resized with the role's image
  budget exactly as the caller did (same encoder, same ``image_format``/``jpeg_quality``, so
  the same pixels: encoding is deterministic), then run through *our*
  processor — which must have the server's ``min_pixels``/``max_pixels`` (the trainer loads the
  processor from the same base directory). The number of image tokens in the recorded prompt is
  checked against the rebuilt ``image_grid_thw``; a mismatch means the server and the trainer
  preprocess images differently and is an error, never silently trained on.

**Re-asks sample like the policy.** A runtime config may give the trained role a
``reask_temperature`` (the demo's is 0.7) so that a greedy model asked again does not repeat
itself; in a rollout that would make every re-ask off-policy. :class:`RolloutWorker` sets the
trained role's ``reask_temperature`` to the policy's own temperature, and the caller seeds each
re-ask from the rollout's sampling seed and the attempt
(:func:`~agent_runtime.roles.caller.reask_seed`), so re-asks are on-policy samples, independent
across a group.

**The graph a rollout plays** is the one that calls the trained role at every step
(:data:`ROLLOUT_GRAPHS`): ``mobile_agent_v3`` for the Worker or the Manager, ``single`` for
GUI-Owl's single model — whatever ``[graph] kind`` the runtime config says, since a config may
well be written for another graph (``auto``, which calls the Worker only after escalating, or
``hi_agent``, which never does). :func:`rollout_config` sets it; the config's other ``[graph]``
settings (limits, re-asks, ``reflect``) stay.

An episode's step budget is the tightest of the task's own, the runtime config's
``[graph] max_steps`` and the RL option ``max_turns`` (``--max-turns``), see :func:`episode_budget`.

:class:`RolloutWorker` plays rollouts for one policy version; :class:`LocalRollouts` runs K of
them at once in threads (the in-process model serialises generation behind its lock, the phones
and graph overhead overlap), :class:`RayRollouts` (in :mod:`.ray_rollouts`) as Ray actors.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.coords import ImageFormat
from agent_runtime.errors import ConfigError, DependencyError, TrainingError
from agent_runtime.execution.backend import Job, LocalBackend, Workplace, in_order
from agent_runtime.specs import ROLE_SPECS
from agent_runtime.trainers.online.samples import StepTokens, Trajectory

if TYPE_CHECKING:
    from agent_runtime.config import GraphKind, RuntimeConfig
    from agent_runtime.simphone.tasks import Task

log = logging.getLogger(__name__)

#: Where a role's RL fields live in ``CallRecord.extra`` (written by ``roles.caller.rl_fields``).
RL_KEY = "rl"
#: The graph whose rollouts train each role online (module docstring).
ROLLOUT_GRAPHS: dict[str, GraphKind] = {
    name: spec.rollout_graph for name, spec in ROLE_SPECS.items() if spec.rollout_graph is not None
}


def task_id(task: Task) -> str:
    """A stable id of a task instance: template plus a digest of its parameters (not its seed)."""
    digest = hashlib.sha256(task.params_key().encode()).hexdigest()[:10]
    return f"{task.name}:{digest}"


class RolloutRequest(BaseModel):
    """One rollout to play: a task instance, the sampling seed, where it belongs."""

    model_config = ConfigDict(frozen=True)

    task_name: str
    task_seed: int = Field(description="the instance's seed (its parameters)")
    sample_seed: int = Field(description="the trained role's sampling seed (differs within a group)")
    iteration: int = 0
    group_index: int = Field(0, description="index within the task's group of G")


class EpisodeRecord(BaseModel):
    """How a rollout ended (what the loop logs; the trajectory carries the tokens)."""

    task_id: str
    task_name: str
    task_seed: int
    sample_seed: int
    iteration: int
    group_index: int
    run_dir: str | None = None
    status: str = "error"
    success: bool = False
    score: float = 0.0
    answer: str | None = None
    steps: int = 0
    policy_calls: int = 0
    malformed: int = 0
    truncated: int = 0
    error: str | None = None


class RolloutResult(BaseModel):
    """A played rollout: its record and, unless it broke, its trajectory."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    episode: EpisodeRecord
    trajectory: Trajectory | None = None


# -- traces -> trajectory --------------------------------------------------------------------------


def _image_refs(messages: Sequence[dict[str, Any]]) -> list[str]:
    refs = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            refs += [p["ref"] for p in content if isinstance(p, dict) and p.get("type") == "image_ref"]
    return refs


class PixelRebuilder:
    """Screenshots of a trace → the processor's ``pixel_values``/``image_grid_thw`` for a prompt."""

    def __init__(
        self, processor: Any, budget: Any, *, fmt: ImageFormat = "png", jpeg_quality: int = 90
    ) -> None:
        self.image_processor = getattr(processor, "image_processor", None)
        tokenizer = getattr(processor, "tokenizer", processor)
        self.image_token_id = (
            tokenizer.convert_tokens_to_ids("<|image_pad|>") if self.image_processor else None
        )
        self.merge = int(getattr(self.image_processor, "merge_size", 2) or 2)
        self.budget = budget
        self.fmt = fmt
        self.jpeg_quality = jpeg_quality

    def pixels(self, loaded: Any, refs: Sequence[str], prompt_ids: Sequence[int]) -> dict[str, Any]:
        if not refs:
            return {}
        if self.image_processor is None:
            raise TrainingError("the trained role's prompts hold images but the model is text-only")
        from agent_runtime.models.images import decode_data_url, encode_screenshot

        images = [
            decode_data_url(
                encode_screenshot(
                    loaded.screen(ref), self.budget, fmt=self.fmt, jpeg_quality=self.jpeg_quality
                ).data_url
            )
            for ref in refs
        ]
        out = self.image_processor(images=images, return_tensors="pt")
        grid = out["image_grid_thw"]
        expected = int(grid.prod(-1).sum()) // (self.merge**2)
        found = sum(1 for t in prompt_ids if t == self.image_token_id)
        if found != expected:
            raise TrainingError(
                f"the recorded prompt has {found} image tokens but the rebuilt images give {expected}",
                hint="the server and the trainer preprocess images differently: serve the same base "
                "directory (same min_pixels/max_pixels) the trainer loads",
            )
        return {"pixel_values": out["pixel_values"], "image_grid_thw": grid}


def trajectory_from_run(
    run_dir: Path | str,
    role: str,
    rebuilder: PixelRebuilder,
    *,
    task: str,
    success: bool,
    iteration: int = 0,
) -> tuple[Trajectory, dict[str, int]]:
    """The trained role's calls in a run as a :class:`Trajectory` (see the module docstring).

    Returns the trajectory and counts (``calls``, ``malformed``, ``truncated``). Raises
    :class:`TrainingError` when a call lacks token ids or log-probs (the server did not return
    them) or when images do not match.
    """
    from agent_runtime.traces import load_run

    loaded = load_run(run_dir)
    steps: list[StepTokens] = []
    malformed = truncated = 0
    for call in loaded.calls_for(role):
        rl = call.extra.get(RL_KEY)
        if not rl or not rl.get("token_ids") or not rl.get("prompt_token_ids") or rl.get("logprobs") is None:
            raise TrainingError(
                f"a {role} call in {run_dir} has no token ids/log-probs",
                hint="the policy server must return logprobs and return_token_ids "
                "(vLLM, agent-runtime serve and the in-process backend do)",
            )
        prompt_ids = rl["prompt_token_ids"]
        multimodal = rebuilder.pixels(loaded, _image_refs(call.messages), prompt_ids)
        steps.append(
            StepTokens(
                prompt_ids=prompt_ids,
                completion_ids=rl["token_ids"],
                behaviour_logprobs=tuple(min(x, 0.0) for x in rl["logprobs"]),
                multimodal=multimodal,
                temperature=rl.get("temperature"),
            )
        )
        malformed += 0 if call.valid else 1
        truncated += 1 if rl.get("truncated") else 0
    counts = {"calls": len(steps), "malformed": malformed, "truncated": truncated}
    return (
        Trajectory(
            task_id=task, steps=steps, success=success, malformed_actions=malformed, iteration=iteration
        ),
        counts,
    )


# -- playing ---------------------------------------------------------------------------------------


def rollout_config(config: RuntimeConfig, role: str) -> RuntimeConfig:
    """``config`` playing the graph that trains ``role`` (:data:`ROLLOUT_GRAPHS`), its other
    ``[graph]`` settings kept."""
    kind = ROLLOUT_GRAPHS.get(role)
    if kind is None:
        raise ConfigError(
            f"online RL does not train the {role}: its rollouts must call the role at every step",
            hint=f"train one of: {', '.join(ROLLOUT_GRAPHS)}",
        )
    return config.playing(kind)


def episode_budget(task_steps: int, graph_steps: int, max_turns: int | None = None) -> int:
    """Steps a rollout may take: the tightest of the task's own budget, the runtime config's
    ``[graph] max_steps`` and the RL option ``max_turns`` (``--max-turns``).

    ``Runtime.run(max_steps=...)`` replaces the config's budget rather than bounding it, so the
    config's value must be folded in here or it would be silently ignored.

    >>> episode_budget(5, 2, 50)
    2
    >>> episode_budget(5, 25, None)
    5
    """
    return min(task_steps, graph_steps, *(() if max_turns is None else (max_turns,)))


#: Builds the trained role's chat model for one rollout from its sampling seed.
PolicyFactory = Callable[[int], Any]


class RolloutWorker:
    """Plays rollouts with one runtime config (in the graph of the trained role:
    :func:`rollout_config`), the trained role's model and its processor.

    ``other_models`` are chat models for the other roles (tests pass doubles; by default the
    runtime builds them from ``config``). Thread-safe: each rollout gets its own runtime and phone.
    """

    def __init__(
        self,
        config: RuntimeConfig,
        role: str,
        policy: PolicyFactory,
        processor: Any,
        runs_dir: Path,
        *,
        other_models: dict[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> None:
        # Training must not learn from a memory of the tasks it is trained on: no experience store.
        played = rollout_config(config, role)
        self.config = played.model_copy(
            update={"memory": played.memory.model_copy(update={"experience": False})}
        )
        self.role = role
        self.policy = policy
        self.runs_dir = Path(runs_dir)
        self.other_models = dict(other_models or {})
        self.max_turns = max_turns
        sent = self.config.model_for(role)  # type: ignore[arg-type]
        self.rebuilder = PixelRebuilder(
            processor, sent.budget, fmt=sent.image_format, jpeg_quality=sent.jpeg_quality
        )

    def _reasking_like(self, policy: Any) -> RuntimeConfig:
        """The config with the trained role's re-asks at the policy's own temperature (module
        docstring): a different ``reask_temperature`` would sample re-asks off-policy."""
        temperature = getattr(policy, "temperature", None)
        if temperature is None:
            return self.config
        role = self.config.role(self.role)  # type: ignore[arg-type]
        roles: dict[Any, Any] = dict(self.config.roles)
        roles[self.role] = role.model_copy(update={"reask_temperature": temperature})
        return self.config.model_copy(update={"roles": roles})

    def play(self, request: RolloutRequest) -> RolloutResult:
        """Set up the instance on a fresh phone, run the agent, judge, convert (see module doc)."""
        from agent_runtime.runtime import Runtime
        from agent_runtime.simphone import SimPhone
        from agent_runtime.simphone.tasks import make_task, split_of
        from agent_runtime.traces import annotate_run

        task = make_task(request.task_name, request.task_seed)
        tid = task_id(task)
        episode = EpisodeRecord(
            task_id=tid,
            task_name=task.name,
            task_seed=request.task_seed,
            sample_seed=request.sample_seed,
            iteration=request.iteration,
            group_index=request.group_index,
        )
        budget = episode_budget(task.max_steps, self.config.graph.max_steps, self.max_turns)
        policy = self.policy(request.sample_seed)
        models = {**self.other_models, self.role: policy}
        runtime = Runtime(self._reasking_like(policy), models=models, runs_dir=self.runs_dir)
        phone = SimPhone(seed=request.task_seed)
        try:
            task.setup(phone)
            result = runtime.run(task.goal, device=phone, max_steps=budget)
            score = float(task.is_successful(phone, result.answer))
        except (ConfigError, DependencyError):
            raise
        except Exception as exc:  # one broken episode must not lose the iteration; recorded
            log.warning("rollout %s/%s failed: %s", tid, request.group_index, exc)
            return RolloutResult(episode=episode.model_copy(update={"error": f"{type(exc).__name__}: {exc}"}))
        finally:
            phone.close()
        success = score >= 1.0 and result.status != "error"
        annotate_run(
            result.run_dir,
            eval={
                "task": task.name,
                "seed": request.task_seed,
                "split": split_of(task),
                "task_success": success,
                "score": score,
            },
            rl={
                "task_id": tid,
                "iteration": request.iteration,
                "group_index": request.group_index,
                "sample_seed": request.sample_seed,
                "role": self.role,
            },
        )
        episode = episode.model_copy(
            update={
                "run_dir": str(result.run_dir),
                "status": str(result.status),
                "success": success,
                "score": score,
                "answer": result.answer,
                "steps": result.steps,
                "error": None if result.status != "error" else result.reason,
            }
        )
        if result.status == "error":
            return RolloutResult(episode=episode)
        trajectory, counts = trajectory_from_run(
            result.run_dir, self.role, self.rebuilder, task=tid, success=success, iteration=request.iteration
        )
        episode = episode.model_copy(
            update={
                "policy_calls": counts["calls"],
                "malformed": counts["malformed"],
                "truncated": counts["truncated"],
            }
        )
        if not trajectory.steps:
            return RolloutResult(
                episode=episode.model_copy(update={"error": f"the {self.role} was never called"})
            )
        return RolloutResult(episode=episode, trajectory=trajectory)


def rollout_key(request: RolloutRequest, index: int) -> str:
    """A rollout's job key in its batch (the backend records a retried rollout once, under it)."""
    r = request
    return f"{r.iteration}/{r.task_name}/{r.task_seed}/{r.group_index}/{index}"


def lost_rollout(request: RolloutRequest, error: Exception) -> RolloutResult:
    """A rollout the cluster could not play: recorded broken (no trajectory), the iteration goes on."""
    from agent_runtime.simphone.tasks import make_task

    return RolloutResult(
        episode=EpisodeRecord(
            task_id=task_id(make_task(request.task_name, request.task_seed)),
            task_name=request.task_name,
            task_seed=request.task_seed,
            sample_seed=request.sample_seed,
            iteration=request.iteration,
            group_index=request.group_index,
            error=f"{type(error).__name__}: {error}",
        )
    )


def _play_here(worker: RolloutWorker, request: RolloutRequest, _place: Workplace) -> RolloutResult:
    return worker.play(request)


class LocalRollouts:
    """K rollouts at once in threads of this process, on the local execution backend — the
    path Ray's :class:`~.ray_rollouts.RayRollouts` takes too, with its jobs on actors."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ConfigError(f"--rollout-workers must be at least 1, got {workers}")
        self.workers = workers
        self.backend = LocalBackend(workers, "thread")  # the in-process policy is shared, not shipped

    def play(self, worker: RolloutWorker, requests: Sequence[RolloutRequest]) -> list[RolloutResult]:
        """The requests' results, in the requests' order."""
        jobs = [
            Job(rollout_key(r, i), functools.partial(_play_here, worker, r)) for i, r in enumerate(requests)
        ]
        return in_order(self.backend, jobs)

    def close(self) -> None:
        self.backend.close()


def group_requests(
    tasks: Sequence[tuple[str, int]], group_size: int, iteration: int, seed: int
) -> list[RolloutRequest]:
    """G requests per task instance, each with its own sampling seed (reproducible per iteration)."""
    out = []
    for name, task_seed in tasks:
        for g in range(group_size):
            digest = hashlib.sha256(f"{seed}/{iteration}/{name}/{task_seed}/{g}".encode()).digest()
            out.append(
                RolloutRequest(
                    task_name=name,
                    task_seed=task_seed,
                    sample_seed=int.from_bytes(digest[:4], "big") & 0x7FFFFFFF,
                    iteration=iteration,
                    group_index=g,
                )
            )
    return out
