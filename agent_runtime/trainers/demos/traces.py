"""SimPhone demonstrations for every role, written as ordinary runtime runs.

The oracle plays train-split tasks (:mod:`agent_runtime.trainers.demos.plans`) through the real
agent graph: each task instance is one ``Runtime.run`` on a SimPhone replica whose every role is
answered by :class:`~agent_runtime.trainers.demos.oracle_model.OracleChatModel` with the *ideal*
reply. So the prompts, the call records (calls.jsonl), the steps and the screens come from the
same code as every other run, in the configured observation mode and prompt set; there is no
second copy of the agent step to keep in line with the graph.

Each kept episode is a run directory with ``eval`` in run.json (task, seed, split, the checker's
``task_success`` and ``score``, ``source: oracle``, observation, perturb), so ``agent-runtime
distill --method sft --runs-dir DIR`` consumes it like any eval run. Calls that are played but
must not be learnt (see the oracle model) carry ``not_a_target`` and never become samples.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent_runtime.config import (
    GraphConfig,
    ModelConfig,
    ObservationMode,
    PromptSet,
    RoleConfig,
    RuntimeConfig,
    SafetyConfig,
)
from agent_runtime.errors import ConfigError
from agent_runtime.runtime import Runtime
from agent_runtime.traces import annotate_run
from agent_runtime.trainers.demos.oracle_model import (
    ROLES,
    OracleEpisode,
    RecordingDevice,
    oracle_models,
)
from agent_runtime.trainers.demos.plans import expert_plan, replica

if TYPE_CHECKING:
    from agent_runtime.simphone.tasks import Task

__all__ = ["ROLES", "DemoOptions", "DemoReport", "demo_summary", "write_demos"]


class DemoOptions(BaseModel):
    """What to demonstrate and how the trained roles will be called."""

    split: str = Field("train", description="train | test | all")
    tasks: str | None = Field(None, description="template names: globs or re:REGEX, comma-separated")
    exclude_heldout: bool = Field(
        False,
        description="leave out the template-held-out templates (registry.TEMPLATE_HELDOUT) so a model "
        "trained on the demos has templates it never saw; `simphone demos` does unless --include-heldout",
    )
    episodes: int = Field(1, ge=1, description="instances per template")
    seed: int = Field(0, ge=0, description="first seed scanned for instances")
    instances: list[tuple[str, int]] | None = Field(
        None,
        description="exact (template, seed) instances instead of tasks/episodes/seed (evolve's failed ones)",
    )
    observation: ObservationMode = "ui_tree"
    prompts: PromptSet = Field("full", description="the prompt set the trained model will run with")
    perturb: float = Field(0.0, ge=0.0, le=1.0, description="chance of a wrong action at a step")
    roles: tuple[str, ...] = Field(ROLES, description="roles whose calls are training targets")
    update_share: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="share of Manager plan updates that are targets (first plans always are): updates are "
        "many and mechanical, first plans few and hard, and training time is per call",
    )
    model: ModelConfig = Field(
        default_factory=ModelConfig, description="coordinate space and image budget (screenshot modes)"
    )

    def role_model(self) -> ModelConfig:
        return self.model.model_copy(update={"observation": self.observation, "prompts": self.prompts})


class DemoReport(BaseModel):
    """What ``write_demos`` wrote."""

    runs: list[str] = Field(default_factory=list, description="run directories written")
    episodes: int = 0
    steps: int = 0
    perturbed: int = Field(0, description="wrong actions recorded (Reflector B/C targets)")
    calls: dict[str, int] = Field(default_factory=dict, description="role -> training-target calls")
    skipped: dict[str, str] = Field(default_factory=dict, description="task/seed -> why no run was kept")
    seconds: float = 0.0


def write_demos(
    options: DemoOptions, out_dir: Path | str, *, on_episode: Callable[[str], None] | None = None
) -> DemoReport:
    """Demonstrations for every selected task instance under ``out_dir`` (one run each)."""
    from agent_runtime.simphone.tasks import make_task, select, task_instances
    from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT, trainable

    if options.split not in ("train", "test", "all"):
        raise ConfigError(f"unknown split {options.split!r}", hint="use train, test or all")
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = DemoReport()
    if options.instances is not None:
        tasks = [make_task(name, seed) for name, seed in options.instances]
    else:
        names = trainable(select(options.tasks)) if options.exclude_heldout else select(options.tasks)
        if not names:
            raise ConfigError(
                f"{options.tasks!r} selects only template-held-out templates, which demos leave out",
                hint=f"pass --include-heldout to demonstrate them ({', '.join(sorted(TEMPLATE_HELDOUT))})",
            )
        tasks = task_instances(
            names,
            split=options.split,  # type: ignore[arg-type]  # checked above
            episodes=options.episodes,
            seed=options.seed,
        )
    for task in tasks:
        key = f"{task.name}/{task.seed}"
        report.episodes += 1
        kept = _record(task, options, out)
        if isinstance(kept, str):
            report.skipped[key] = kept
        else:
            run_dir, steps, episode = kept
            report.runs.append(str(run_dir))
            report.steps += steps
            report.perturbed += episode.perturbed
            for role, n in episode.calls.items():
                report.calls[role] = report.calls.get(role, 0) + n
        if on_episode is not None:
            on_episode(key)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def _record(task: Task, options: DemoOptions, out: Path) -> tuple[Path, int, OracleEpisode] | str:
    """Run one instance with the oracle's models: (run dir, steps, episode), or why none was kept."""
    from agent_runtime.simphone.tasks import split_of
    from agent_runtime.simphone.tasks.oracle import OracleError

    model = options.role_model()
    try:
        plan = expert_plan(task, options.observation, model)
    except OracleError as exc:
        return f"the expert failed: {exc.message}"
    if not plan.success:
        return "the expert's episode was not judged successful"
    device = RecordingDevice(replica(task, []))
    episode = OracleEpisode(
        task,
        plan,
        device,
        mode=options.observation,
        model=model,
        perturb=options.perturb,
        roles=options.roles,
        update_share=options.update_share,
    )
    # Each planned step takes at most three steps (a wrong action, Back, the step itself): with
    # that budget, and repeats and failures never ending the run, the graph always lets the
    # expert finish. The action guard is off: a perturbation (a wrong tap, maybe on "Delete")
    # must really run for the Reflector to teach its B/C verdict, and the expert's plan is
    # scripted, not a model a screen could steer.
    budget = 3 * len(plan.steps) + 1
    config = RuntimeConfig(
        models={"default": model},
        roles={"rag": RoleConfig(enabled=False)},
        graph=GraphConfig(max_steps=budget, repeat_limit=budget + 1, give_up_after=budget),
        safety=SafetyConfig(enabled=False),
    )
    try:
        result = Runtime(config, models=oracle_models(episode), runs_dir=out).run(task.goal, device=device)
        score = float(task.is_successful(device.phone, result.answer))
    finally:
        device.phone.close()
    if result.status == "error":  # e.g. the run left the expert's path: keep nothing of it
        shutil.rmtree(result.run_dir, ignore_errors=True)
        return result.reason
    # A finished run is never resumed; its checkpoints would only grow the demo set by a third.
    (result.run_dir / "checkpoint.sqlite").unlink(missing_ok=True)
    annotate_run(
        result.run_dir,
        eval={
            "task": task.name,
            "seed": task.seed,
            "split": split_of(task),
            "task_success": score >= 1.0,
            "score": score,
            "source": "oracle",
            "observation": options.observation,
            "perturb": options.perturb,
        },
    )
    return result.run_dir, result.steps, episode


def demo_summary(report: DemoReport) -> str:
    """One line for the CLI."""
    return json.dumps(report.model_dump(mode="json"), ensure_ascii=False)
