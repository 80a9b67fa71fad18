"""Training samples from traces: every role call becomes one :class:`Sample`.

A sample keeps the call exactly as the role saw it — OpenAI-style messages whose images are
``image_ref`` parts pointing into the run directory — plus the completion, the parsed output and
the labels the filters need:

* ``outcome`` — the run's outcome, from the first that labels it: SimPhone's judgement
  (``RunRecord.eval.task_success``) when the run came from ``agent-runtime eval`` or is a
  demonstration; the end-of-run check (``RunRecord.verification``, e.g. ``agent-runtime run
  --task-id``); the trajectory critic's consensus (``RunRecord.critic.correct``); else the
  agent's own status — but only a failure: a success the agent merely *claimed* is ``unknown``
  (unlabeled), never a positive (``outcome_source`` says which labelled it);
* ``verdict`` — the Reflector's verdict on the call's step;
* ``critic`` / ``critic_score`` — the step critic's label (``critic.jsonl``, merged here);
* ``trajectory_correct`` — the trajectory critic's consensus (``RunRecord.critic``).

Images are resolved only when a dataset is built (:mod:`agent_runtime.trainers.data.datasets`), so
filtering thousands of samples never decodes a PNG. ``image_hashes`` (SHA-1 of the referenced
screenshots) serve de-duplication and same-screen matching without decoding either.

A call whose record says ``extra["not_a_target"]`` (with the reason) is never a sample: the
SimPhone oracle's runs mark so the Worker call of a deliberately wrong action, Manager updates
left out by ``update_share`` and the roles a demonstration does not teach.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.errors import TraceError
from agent_runtime.specs import ROLE_SPECS
from agent_runtime.traces import CallRecord, LoadedRun, StepRecord, Verdict, iter_runs, load_run
from agent_runtime.trainers.critics.labels import merge_step_labels

Outcome = Literal["success", "failure", "unknown"]
OutcomeSource = Literal["eval", "check", "critic", "agent"]
#: Roles whose recorded calls train: Mobile-Agent-v3's four, Hi-Agent's two levels (``hi_agent``
#: graph) and GUI-Owl's single model (``single``). Every role's calls are plain recorded messages,
#: so SFT reads them all alike; which other methods apply, ``distill``'s ``check_role`` says.
TRAINABLE_ROLES = tuple(name for name, spec in ROLE_SPECS.items() if spec.trainable)

_FAILED_STATUSES = {"failed", "gave_up", "max_steps", "error"}
#: ``CallRecord.extra`` key of a call that training must not read (its value says why).
NOT_A_TARGET = "not_a_target"


class Sample(BaseModel):
    """One role call with its labels. Frozen: filters return new lists, never edit samples."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="run_id/step/role/attempt, unique within a runs directory")
    role: str
    run_id: str
    run_dir: str = Field(description="where image refs resolve")
    step: int
    attempt: int = 0
    task: str = Field(description="the goal given to the agent")
    task_key: str = Field(description="what 'the same task' means for re-weighting: eval template or goal")
    messages: list[dict[str, Any]]
    completion: str
    parsed: dict[str, Any] | None = None
    valid: bool = Field(description="the completion parsed into the role's output")
    outcome: Outcome
    outcome_source: OutcomeSource
    policy_outcome: Outcome | None = Field(
        None,
        description="the policy's own outcome when the targets were relabelled (oracle corrections): "
        "re-weighting counts how often the policy solves a task, not how often its data is right",
    )
    verdict: Verdict | None = None
    critic: dict[str, Any] | None = None
    critic_score: float | None = None
    trajectory_correct: bool | None = None
    action: dict[str, Any] | None = Field(None, description="the step's action in model coordinates")
    action_screen: dict[str, Any] | None = Field(None, description="the step's action in screen pixels")
    thought: str = ""
    description: str = ""
    screen_hash: str | None = Field(None, description="SHA-1 of the screenshot before the step")
    image_hashes: list[str] = Field(default_factory=list)

    @property
    def image_root(self) -> str:
        return self.run_dir

    @property
    def success(self) -> bool:
        return self.outcome == "success"

    def prompt_text(self) -> str:
        """All text of the prompt messages, in order (what the heuristics read)."""
        out: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(
                    p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
                )
        return "\n".join(out)


def run_outcome(run: LoadedRun) -> tuple[Outcome, OutcomeSource]:
    """The run's label (see the module docstring): eval's verdict, the run's check, the
    trajectory critic, or the agent's own failure; an unverified claim of success is unknown."""
    evaluation = run.run.eval or {}
    if evaluation.get("task_success") is not None:
        return ("success" if evaluation["task_success"] else "failure"), "eval"
    check = run.run.verification
    if check is not None and check.checked and check.success is not None:
        return ("success" if check.success else "failure"), "check"
    correct = (run.run.critic or {}).get("correct")
    if correct is not None:
        return ("success" if correct else "failure"), "critic"
    if run.run.success is False or run.run.status in _FAILED_STATUSES:
        return "failure", "agent"
    return "unknown", "agent"  # a claimed success nothing verified, or no outcome at all


def task_key(run: LoadedRun) -> str:
    """The SimPhone template for eval runs (``eval.task``, or ``eval.task_name``), else the goal."""
    evaluation = run.run.eval or {}
    name = evaluation.get("task") or evaluation.get("task_name")
    return f"simphone:{name}" if name else run.run.task.strip()


def _image_refs(messages: list[dict[str, Any]]) -> list[str]:
    refs: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            refs.extend(p["ref"] for p in content if isinstance(p, dict) and p.get("type") == "image_ref")
    return refs


class _Hasher:
    """SHA-1 of screen files, each read once per run."""

    def __init__(self, run: LoadedRun) -> None:
        self.run = run
        self._cache: dict[str, str] = {}

    def __call__(self, ref: str) -> str:
        if ref not in self._cache:
            try:
                self._cache[ref] = hashlib.sha1(self.run.screen(ref)).hexdigest()
            except OSError as exc:
                raise TraceError(
                    f"run {self.run.run.run_id} references a missing screen {ref!r}: {exc}"
                ) from None
        return self._cache[ref]


def _step_fields(step: StepRecord | None, hasher: _Hasher) -> dict[str, Any]:
    if step is None:
        return {}
    critic = step.critic
    return {
        "verdict": step.verdict,
        "critic": critic,
        "critic_score": float(critic["score"]) if critic and critic.get("score") is not None else None,
        "action": step.action,
        "action_screen": step.action_screen,
        "thought": step.thought,
        "description": step.description,
        "screen_hash": hasher(step.before_screen) if step.before_screen else None,
    }


def samples_from_run(run: LoadedRun, roles: Iterable[str] | None = None) -> list[Sample]:
    """One sample per role call of ``run`` that is a training target (critic labels merged), in
    call order."""
    run = merge_step_labels(run)
    wanted = set(roles) if roles is not None else None
    outcome, source = run_outcome(run)
    rollout = (run.run.eval or {}).get("rollout_success")
    policy: Outcome | None = None if rollout is None else ("success" if rollout else "failure")
    key = task_key(run)
    traj = run.run.critic or {}
    steps = {s.step: s for s in run.steps}
    hasher = _Hasher(run)
    out: list[Sample] = []
    for call in run.calls:
        if (wanted is not None and call.role not in wanted) or call.extra.get(NOT_A_TARGET):
            continue
        sample = _sample(run, call, steps.get(call.step), hasher, outcome, source, key, traj.get("correct"))
        out.append(sample if policy is None else sample.model_copy(update={"policy_outcome": policy}))
    return out


def _sample(
    run: LoadedRun,
    call: CallRecord,
    step: StepRecord | None,
    hasher: _Hasher,
    outcome: Outcome,
    source: OutcomeSource,
    key: str,
    trajectory_correct: bool | None,
) -> Sample:
    return Sample(
        id=f"{run.run.run_id}/{call.step}/{call.role}/{call.attempt}",
        role=call.role,
        run_id=run.run.run_id,
        run_dir=str(run.dir),
        step=call.step,
        attempt=call.attempt,
        task=run.run.task,
        task_key=key,
        messages=call.messages,
        completion=call.completion,
        parsed=call.parsed,
        valid=call.valid,
        outcome=outcome,
        outcome_source=source,
        trajectory_correct=trajectory_correct,
        image_hashes=[hasher(r) for r in _image_refs(call.messages)],
        **_step_fields(step, hasher),
    )


class SampleSet(BaseModel):
    """Samples of one or more roles from a runs directory, and the runs they came from."""

    samples: list[Sample]
    runs: list[str] = Field(description="run ids read")
    skipped: dict[str, str] = Field(default_factory=dict, description="run dir -> why it was not read")


def collect_samples(runs_dir: Path | str, roles: Iterable[str] | None = None) -> SampleSet:
    """Read every finished run under ``runs_dir``. Runs still ``running`` are skipped (and listed)."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise TraceError(
            f"runs directory {root} does not exist", hint="pass --runs-dir DIR with run directories"
        )
    roles = list(roles) if roles is not None else None
    samples: list[Sample] = []
    runs: list[str] = []
    skipped: dict[str, str] = {}
    for run_dir in iter_runs(root):
        run = load_run(run_dir)
        if run.run.status == "running":
            skipped[str(run_dir)] = "still running (or killed without a final status)"
            continue
        runs.append(run.run.run_id)
        samples.extend(samples_from_run(run, roles))
    return SampleSet(samples=samples, runs=runs, skipped=skipped)
