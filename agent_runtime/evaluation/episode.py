"""One episode: a policy plays a task on a phone and reports an :class:`Outcome`.

A *policy* here is any callable ``(task, device) -> Outcome``: the harness hands it a fresh,
set-up SimPhone and judges the result afterwards from app state. Two are built in:
:class:`ExpertPolicy` (the task's expert, for solvability proofs and demonstrations) and
:class:`AgentPolicy` (the product's runtime). :func:`play` is the plain observe → decide →
execute loop that step-level policies (``observation -> Action``) run in.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.actions import Action, ActionResult, Answer, Terminate
from agent_runtime.device import Device
from agent_runtime.errors import ConfigError, ModelError
from agent_runtime.observation import Observation

if TYPE_CHECKING:
    from agent_runtime.config import RuntimeConfig
    from agent_runtime.simphone.tasks import Task


class Outcome(BaseModel):
    """What a policy reports after an episode; success itself is judged by the task."""

    model_config = ConfigDict(frozen=True)

    answer: str | None = Field(None, description="the answer given (question tasks)")
    steps: int = Field(0, ge=0, description="actions executed (answer included, terminate not)")
    status: str = Field("success", description="how the policy ended: success, failure, max_steps, …")
    run_dir: str | None = Field(None, description="the run's trace directory, when the policy wrote one")
    critical_calls: int | None = Field(
        None, ge=0, description="model calls on the steps' critical paths, re-asks included (agents)"
    )


class Policy(Protocol):
    """Plays one episode of ``task`` on ``device``."""

    def __call__(self, task: Task, device: Device) -> Outcome: ...


StepHook = Callable[[Observation, Action, ActionResult | None], None]


def play(
    decide: Callable[[Observation], Action],
    device: Device,
    *,
    max_steps: int,
    on_step: StepHook | None = None,
    observe: Callable[[], Observation] | None = None,
) -> Outcome:
    """Run ``decide`` on ``device`` until it terminates or ``max_steps`` actions have run.

    ``answer`` actions are recorded (the last one wins) and count as a step but are not sent
    to the device; ``terminate`` ends the episode with its status. ``on_step`` sees every
    (observation, action, device result) triple — the hook demonstrations are recorded from.
    ``observe`` replaces ``device.observe`` (see :func:`tree_observation`).
    """
    look = observe or device.observe
    answer: str | None = None
    steps = 0
    while steps < max_steps:
        observation = look()
        action = decide(observation)
        if isinstance(action, Terminate):
            if on_step is not None:
                on_step(observation, action, None)
            return Outcome(answer=answer, steps=steps, status=action.status)
        result: ActionResult | None = None
        if isinstance(action, Answer):
            answer = action.text
        else:
            result = device.execute(action)
        steps += 1
        if on_step is not None:
            on_step(observation, action, result)
    return Outcome(answer=answer, steps=steps, status="max_steps")


def tree_observation(device: Device) -> Observation:
    """An observation with the UI tree but no screenshot, for policies that read only the tree.

    Encoding the PNG is most of an observation's cost on SimPhone, so the expert skips it when
    nobody records its screenshots. Devices without ``ui_xml``/``current_focus`` (SimPhone's
    Android primitives) get a full ``observe()``.
    """
    ui_xml = getattr(device, "ui_xml", None)
    focus = getattr(device, "current_focus", None)
    if ui_xml is None or focus is None:
        return device.observe()
    package, activity = focus()
    return Observation(
        screenshot=b"", size=device.screen_size, ui_xml=ui_xml(), app=package, activity=activity
    )


class ExpertPolicy:
    """The task's expert (:meth:`Task.solve`) as an episode policy, within the step budget.

    ``screenshots=False`` hands the expert tree-only observations (:func:`tree_observation`),
    about five times faster; keep them when ``on_step`` records demonstrations.
    """

    name = "oracle"

    def __init__(self, *, screenshots: bool = True, on_step: StepHook | None = None) -> None:
        self.screenshots = screenshots
        self.on_step = on_step

    def __call__(self, task: Task, device: Device) -> Outcome:
        from agent_runtime.simphone.tasks.oracle import OraclePolicy

        observe = None if self.screenshots else (lambda: tree_observation(device))
        return play(
            OraclePolicy(task), device, max_steps=task.max_steps, on_step=self.on_step, observe=observe
        )


#: The expert with full observations.
oracle_policy = ExpertPolicy()


def _runtime_class() -> Any:
    try:
        from agent_runtime.runtime import Runtime
    except ImportError as exc:
        raise ConfigError(
            f"the agent policy needs agent_runtime.runtime.Runtime, which cannot be imported: {exc}",
            hint="use --policy oracle, or install a build of agent-runtime that includes the runtime",
        ) from None
    return Runtime


class AgentPolicy:
    """The product's agent: ``Runtime(config).run(goal, device=phone, max_steps=budget)``.

    The runtime is imported when the policy is built, so a missing runtime fails before any
    episode starts. Each episode gets its own ``Runtime`` (and run directory under
    ``config.runs.dir``); the run's status (``completed``, ``failed``, ``error``…) is reported
    as the outcome's status, and its steps' ``timings_ms.critical_calls`` summed as the
    outcome's ``critical_calls`` — what tells graph kinds apart in cost (1 call a step for
    ``single``, 2 for ``hi_agent``, 3 for ``mobile_agent_v3``).
    """

    name = "agent"

    def __init__(self, config: RuntimeConfig) -> None:
        # Evaluation must not learn from the tasks it measures: no experience is recorded.
        self.config = config.model_copy(
            update={"memory": config.memory.model_copy(update={"experience": False})}
        )
        self._runtime = _runtime_class()

    def __call__(self, task: Task, device: Device) -> Outcome:
        result = self._runtime(self.config).run(task.goal, device=device, max_steps=task.max_steps)
        if result.status == "error" and (result.error or {}).get("type") == "ModelError":
            # A dead or failing model server fails every episode alike: stop the evaluation.
            raise ModelError(
                result.error["message"], hint=result.error.get("hint"), run_dir=str(result.run_dir)
            )
        return Outcome(
            answer=result.answer,
            steps=result.steps,
            status=str(result.status),
            run_dir=str(result.run_dir),
            critical_calls=critical_calls(result.run_dir),
        )


def critical_calls(run_dir: Path | str) -> int | None:
    """The model calls on the critical paths of a run's recorded steps (None when a step lacks
    the count: a trace written before it was recorded)."""
    from agent_runtime.traces import load_run

    counts = [step.timings_ms.get("critical_calls") for step in load_run(run_dir).steps]
    if any(c is None for c in counts):
        return None
    return int(sum(c for c in counts if c is not None))


def policy_name(policy: Policy) -> str:
    """A policy's display name: its ``name`` attribute, else its function or class name."""
    name = getattr(policy, "name", None) or getattr(policy, "__name__", None) or type(policy).__name__
    return str(name)
