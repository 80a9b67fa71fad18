"""``agent-runtime run --tasks FILE``: many tasks across the available devices, one summary.

The file holds a task per line, or JSON lines ``{"task": "...", "device": "adb:SERIAL"}``
(``device`` defaults to the config's); blank lines and ``#`` comments are skipped. Each task
is a job of the execution backend (:mod:`.backend`): SimPhone tasks run side by side, each on
its own phone; tasks on one real phone run one after another on the worker that owns it.

The exit code (:func:`batch_exit_code`) is 0 only when every task's success was verified by
a check; 130 when interrupted; 1 when any task failed, errored or was refuted by its check;
3 when none failed but some success was only claimed (nothing could check it).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.config import RuntimeConfig
from agent_runtime.errors import AgentRuntimeError, ClusterError, ConfigError
from agent_runtime.execution.backend import Backend, Job, Workplace, in_order

EXIT_SUCCESS, EXIT_FAILURE, EXIT_UNVERIFIED, EXIT_INTERRUPTED = 0, 1, 3, 130


class BatchTask(BaseModel):
    """One line of a tasks file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str = Field(min_length=1, description="what the agent should do")
    device: str | None = Field(None, description="device spec (default: [device] spec of the config)")


class TaskOutcome(BaseModel):
    """How one task of a batch ended."""

    line: int = Field(description="the task's line in the file (1-based)")
    task: str
    device: str
    run_id: str | None = None
    status: str
    outcome: str = Field(description="verified | failed_check | unverified | failed | error | …")
    steps: int = 0
    answer: str | None = None
    run_dir: str | None = None
    error: str | None = None


def read_tasks(path: Path) -> list[tuple[int, BatchTask]]:
    """The tasks of ``path`` with their line numbers; a bad line is a :class:`ConfigError` naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the tasks file {path}: {exc}") from None
    tasks = []
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            task = BatchTask.model_validate_json(text) if text.startswith("{") else BatchTask(task=text)
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise ConfigError(
                f"{path}:{number}: {problem['msg']} ({'.'.join(map(str, problem['loc'])) or 'line'})",
                hint='a task per line, or JSON lines {"task": "...", "device": "simphone"}',
            ) from None
        tasks.append((number, task))
    if not tasks:
        raise ConfigError(f"the tasks file {path} has no tasks", hint="write one task per line")
    return tasks


def play_task(
    config: RuntimeConfig, line: int, task: str, device: str, max_steps: int | None, place: Workplace
) -> TaskOutcome:
    """One task of a batch as a backend job: a run of the runtime, its failures recorded."""
    from agent_runtime.runtime import Runtime

    try:
        result = Runtime(config, runs_dir=place.runs_dir).run(task, device=device, max_steps=max_steps)
    except AgentRuntimeError as exc:  # a device or config problem of this task: the others go on
        return TaskOutcome(
            line=line, task=task, device=device, status="error", outcome="error", error=str(exc)
        )
    return TaskOutcome(
        line=line,
        task=task,
        device=device,
        run_id=result.run_id,
        status=str(result.status),
        outcome=str(result.outcome),
        steps=result.steps,
        answer=result.answer,
        run_dir=str(result.run_dir),
        error=(result.error or {}).get("message"),
    )


def run_batch(
    config: RuntimeConfig, tasks: Sequence[tuple[int, BatchTask]], backend: Backend, max_steps: int | None
) -> list[TaskOutcome]:
    """Play every task on ``backend``; the outcomes in the file's order."""
    home = Path(config.runs.dir).expanduser().resolve()
    jobs = []
    for line, item in tasks:
        device = item.device or config.device.spec
        body = functools.partial(play_task, config, line, item.task, device, max_steps)
        lost = functools.partial(lost_task, line, item.task, device)
        jobs.append(Job(f"line-{line}", body, device=device, home=home, lost=lost))
    return in_order(backend, jobs)


def lost_task(line: int, task: str, device: str, error: ClusterError) -> TaskOutcome:
    """A task the cluster could not play (its phone's node lost): an error, and the batch goes on."""
    return TaskOutcome(line=line, task=task, device=device, status="error", outcome="error", error=str(error))


def batch_exit_code(outcomes: Sequence[TaskOutcome]) -> int:
    """0 when every task was verified; 1 when any failed; else 3 (some success only claimed).

    >>> ok = TaskOutcome(line=1, task="t", device="simphone", status="completed", outcome="verified")
    >>> batch_exit_code([ok]), batch_exit_code([ok, ok.model_copy(update={"outcome": "unverified"})])
    (0, 3)
    """
    words = {o.outcome for o in outcomes}
    if words <= {"verified"}:
        return EXIT_SUCCESS
    return EXIT_UNVERIFIED if words <= {"verified", "unverified"} else EXIT_FAILURE


def counts(outcomes: Sequence[TaskOutcome]) -> dict[str, int]:
    """How many tasks ended with each outcome word, most frequent first."""
    found: dict[str, int] = {}
    for o in outcomes:
        found[o.outcome] = found.get(o.outcome, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def summary(outcomes: Sequence[TaskOutcome]) -> dict[str, object]:
    """The ``--json`` object: counts by outcome, the exit code and every task's outcome."""
    return {
        "tasks": len(outcomes),
        "outcomes": counts(outcomes),
        "exit_code": batch_exit_code(outcomes),
        "results": [o.model_dump(mode="json") for o in outcomes],
    }


def summary_line(outcomes: Sequence[TaskOutcome]) -> str:
    """One line: ``5 tasks: 3 verified, 1 unverified, 1 failed``."""
    parts = ", ".join(f"{n} {word}" for word, n in counts(outcomes).items())
    return f"{len(outcomes)} tasks: {parts}"


def dump(outcomes: Sequence[TaskOutcome]) -> str:
    """The ``--json`` object as text."""
    return json.dumps(summary(outcomes), ensure_ascii=False)
