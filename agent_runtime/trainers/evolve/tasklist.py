"""``evolve --task-list FILE``: the loop on any device, with a trajectory critic as the judge.

Away from SimPhone there is no task checker and no oracle. A task list names the tasks, one JSON
object per line::

    {"id": "wifi-off", "goal": "Turn off Wi-Fi.", "split": "train", "hints": ["Settings > Network"]}

``split`` is ``train`` (rollouts, training data) or ``test`` (held-out evaluation); ``id``
defaults to the line number; ``hints`` are optional. Every episode runs the runtime on
``--device`` (one at a time: it is one device) and the trajectory critic's consensus decides
success; the verdict is written into the run (``eval.task_success``, ``source: trajectory
critic``) where the training filters read it.

Hint-guided rejection sampling uses a task's own hints in place of the oracle: a failed train
task with hints is played again with them in the goal; when the critic judges that run correct,
the hints are removed from its recorded prompts and its replies serve as the demonstration that
:func:`~agent_runtime.trainers.data.hints.hint_guided` checks the model's own reasoning against.
Those replies were written with the hints in view, so none of them is a target as it stands:
every call is marked :data:`~agent_runtime.trainers.data.hints.HINTED_REPLY` and ``not_a_target``,
and only a call that hint-guided sampling verifies from fresh unhinted replies becomes one.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from agent_runtime.errors import ConfigError
from agent_runtime.evaluation.report import EpisodeResult, EvalReport

if TYPE_CHECKING:
    from agent_runtime.config import RuntimeConfig
    from agent_runtime.trainers.critics.judge import Judge

SOURCE = "trajectory critic"


class ListedTask(BaseModel):
    """One line of a task list."""

    id: str
    goal: str = Field(min_length=1)
    split: Literal["train", "test"]
    hints: list[str] = Field(default_factory=list)

    def hinted_goal(self) -> str:
        return self.goal + hint_block(self.hints)


def hint_block(hints: list[str]) -> str:
    """The hints as appended to a goal (removed again from the recorded prompts)."""
    return "\n\nHints:\n" + "\n".join(f"- {h}" for h in hints)


def load_task_list(path: Path) -> list[ListedTask]:
    """Tasks of a JSONL file, with a clear error naming the line of any bad one."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise ConfigError(f"cannot read the task list {path}: {exc}") from None
    tasks: list[ListedTask] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            tasks.append(ListedTask.model_validate({"id": f"task-{number}", **data}))
        except (ValueError, ValidationError) as exc:
            raise ConfigError(
                f"{path}:{number}: not a task ({exc})",
                hint='one JSON object per line: {"goal": "...", "split": "train"|"test", "hints": [...]}',
            ) from None
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: task ids repeat", hint="give every task its own id")
    for split in ("train", "test"):
        if not any(t.split == split for t in tasks):
            raise ConfigError(
                f"{path} has no {split} task", hint="evolve trains on train tasks, evaluates on test"
            )
    return tasks


def play(
    tasks: list[ListedTask],
    config: RuntimeConfig,
    device: str,
    judge: Judge,
    *,
    split: str,
    hinted: bool = False,
    on_result: Any = None,
) -> EvalReport:
    """Each task of ``split`` once on ``device``, judged by the trajectory critic."""
    from agent_runtime.runtime import Runtime
    from agent_runtime.traces import annotate_run, load_run
    from agent_runtime.trainers.critics.judge import store

    started = time.perf_counter()
    results = []
    for task in (t for t in tasks if t.split == split):
        begun = time.perf_counter()
        result = Runtime(config).run(task.hinted_goal() if hinted else task.goal, device=device)
        run = load_run(result.run_dir)
        report = judge.judge(run)
        store(run, report)
        success = report.trajectory is not None and report.trajectory.correct
        verdict = {"task_success": success, "score": float(success), "source": SOURCE, "hinted": hinted}
        annotate_run(result.run_dir, eval={"task": task.id, "seed": 0, "split": split, **verdict})
        episode = EpisodeResult(
            task=task.id,
            app="task list",
            seed=0,
            split=split,
            goal=task.goal,
            success=success,
            score=float(success),
            steps=result.steps,
            max_steps=config.graph.max_steps,
            status=str(result.status),
            answer=result.answer,
            error=report.trajectory_error,
            check=SOURCE,
            duration_s=round(time.perf_counter() - begun, 3),
        )
        results.append(episode)
        if on_result is not None:
            on_result(episode)
    return EvalReport.build(
        results, complexity={}, suite="task-list", split=split, policy="agent", episodes=1, seed=0, workers=1,
        duration_s=round(time.perf_counter() - started, 2),
    )  # fmt: skip


def unhint_runs(runs: list[Path], tasks: dict[str, ListedTask], out: Path) -> list[Path]:
    """Copies of hinted runs with each task's hint block removed from every recorded prompt, so
    hint-guided sampling checks reasoning against prompts that never saw the hints; every call
    is marked unverified (module docstring)."""
    from agent_runtime.traces import CallRecord, dumps, load_run
    from agent_runtime.trainers.data.hints import HINTED_REPLY
    from agent_runtime.trainers.data.samples import NOT_A_TARGET

    out.mkdir(parents=True, exist_ok=True)
    copies = []
    for run_dir in runs:
        run = load_run(run_dir)
        block = hint_block(tasks[str((run.run.eval or {}).get("task"))].hints)
        dst = out / run_dir.name
        shutil.copytree(run_dir, dst)
        lines = []
        for call in run.calls:
            messages = json.loads(json.dumps(call.messages).replace(json.dumps(block)[1:-1], ""))
            if call.valid:
                why = "written with the task's hints in view (a target only once verified without them)"
                extra = {**call.extra, HINTED_REPLY: True, NOT_A_TARGET: why}
            else:  # a reply that did not parse (a re-asked one) demonstrates nothing
                extra = {**call.extra, NOT_A_TARGET: "invalid reply in a hinted run"}
            record = CallRecord.model_validate({**call.model_dump(), "messages": messages, "extra": extra})
            lines.append(dumps(record.model_dump(mode="json")))
        (dst / "calls.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        copies.append(dst)
    return copies
