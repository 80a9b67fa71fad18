"""The evaluation harness: run a policy over SimPhone task instances, K episodes at a time.

Each episode gets its own :class:`~agent_runtime.simphone.SimPhone` seeded with the
instance's seed, so episodes share nothing and can run in parallel: in threads (right for the
agent policy, which waits on model servers) or in processes (right for the CPU-bound oracle on
several cores). Success is judged by the task from app state after the policy returns, and only
counts when no app data outside the task's footprint changed (:meth:`Task.side_effects`).
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_runtime.errors import ClusterError, ConfigError, DependencyError, ModelError
from agent_runtime.evaluation.episode import AgentPolicy, Policy, policy_name
from agent_runtime.evaluation.report import EpisodeResult, EvalReport
from agent_runtime.execution.backend import (
    SCHEDULE_TIMEOUT_S,
    Backend,
    Executor,
    Job,
    Workplace,
    open_backend,
)
from agent_runtime.execution.backend import share_cores as share_cores  # re-exported

SUITES = ("simphone",)


def run_episode(policy: Policy, name: str, seed: int) -> EpisodeResult:
    """Build instance ``(name, seed)`` on a fresh phone, let ``policy`` play, judge it.

    Errors raised while playing are recorded on the result (status ``error``) so one broken
    episode does not lose the rest of the evaluation — except configuration and dependency
    errors and model-server failures, which would fail every episode alike and are re-raised.
    """
    from agent_runtime.checks import check_task
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import make_task, split_of
    from agent_runtime.simphone.tasks.base import Judgement
    from agent_runtime.traces import annotate_run

    task = make_task(name, seed)
    started = time.perf_counter()
    phone = SimPhone(seed=seed)
    answer: str | None = None
    calls: int | None = None
    run_dir: str | None = None
    steps, status, error, score, check = 0, "error", None, 0.0, ""
    side_effects: list[str] = []
    try:
        task.setup(phone)
        before = phone.state()
        outcome = policy(task, phone)
        answer, steps, status, calls = outcome.answer, outcome.steps, outcome.status, outcome.critical_calls
        run_dir = outcome.run_dir
        verification = check_task(task, phone, answer)
        if not verification.checked:  # the checker itself failed: an episode error
            raise RuntimeError(verification.detail)
        side_effects = task.side_effects(before, phone.state())
        if side_effects:
            reason = Judgement(float(verification.score or 0.0), tuple(side_effects)).reason
            verification = verification.model_copy(
                update={"success": False, "score": 0.0, "detail": f"{verification.detail}; but {reason}"}
            )
        score, check = float(verification.score or 0.0), verification.detail
        if outcome.run_dir:
            # The checker's verdict outranks the agent's own status for trainers and memory.
            annotate_run(
                outcome.run_dir,
                eval={
                    "task": name,
                    "seed": seed,
                    "split": split_of(task),
                    "task_success": score >= 1.0,
                    "score": score,
                },
                verification=verification,
            )
    except (ConfigError, DependencyError, ModelError):
        raise
    except Exception as exc:  # recorded, see the docstring
        error = f"{type(exc).__name__}: {exc}"
    finally:
        phone.close()
    return EpisodeResult(
        task=name,
        app=task.app,
        seed=seed,
        split=split_of(task),
        goal=task.goal,
        success=score >= 1.0 and error is None,
        score=score,
        steps=steps,
        max_steps=task.max_steps,
        status=status,
        answer=answer,
        expected_answer=task.expected_answer(),
        error=error,
        check=check,
        duration_s=round(time.perf_counter() - started, 3),
        oracle_steps=steps if policy_name(policy) == "oracle" else oracle_steps(name, seed),
        critical_calls=calls,
        run_dir=run_dir,
        side_effects=side_effects,
    )


def oracle_steps(name: str, seed: int) -> int | None:
    """How many steps the expert needs for instance ``(name, seed)`` (None if it cannot solve it):
    :func:`~agent_runtime.simphone.tasks.expert.expert_steps`."""
    from agent_runtime.simphone.tasks.expert import expert_steps

    return expert_steps(name, seed)


def _instances(
    tasks: str | Sequence[str] | None, split: str, episodes: int, seed: int, distinct: bool
) -> list[tuple[str, int]]:
    from agent_runtime.simphone.tasks import select, task_instances

    names = select(tasks)
    found = task_instances(names, split=split, episodes=episodes, seed=seed, distinct=distinct)  # type: ignore[arg-type]
    return [(t.name, t.seed) for t in found]


def evaluate(
    policy: Policy,
    *,
    suite: str = "simphone",
    tasks: str | Sequence[str] | None = None,
    split: str = "test",
    episodes: int = 3,
    seed: int = 0,
    workers: int = 1,
    executor: Executor = "thread",
    on_result: Callable[[EpisodeResult], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
    distinct: bool = False,
    ray: str | None = None,
    backend: Backend | None = None,
) -> EvalReport:
    """Evaluate ``policy`` on ``episodes`` instances of each selected template in ``split``.

    ``tasks`` is a pattern (glob, ``re:REGEX``, comma-separated) or a list of patterns; None
    means every template. ``workers`` episodes run at once in ``executor`` (``process``
    needs a picklable policy, e.g. :func:`~agent_runtime.evaluation.oracle_policy`).
    ``on_plan`` receives the number of episodes before they start, ``on_result`` each result
    as it finishes (progress bars). ``distinct`` plays only instances with different parameters
    (see :func:`~agent_runtime.simphone.tasks.registry.task_instances`).

    Where episodes run: ``backend`` when given (kept open: a caller evaluating several times
    reuses its workers and their loaded models), else a Ray cluster when ``ray`` names one
    (``local``, ``auto`` or an address; ``workers`` SimPhone workers there), else ``workers``
    local threads or processes (``executor``). Every backend plays the same instances, and a
    deterministic policy gets the same per-episode outcomes on each.
    """
    if suite not in SUITES:
        raise ConfigError(f"unknown evaluation suite {suite!r}", hint=f"use one of: {', '.join(SUITES)}")
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    if executor not in ("thread", "process"):
        raise ConfigError(f"unknown executor {executor!r}", hint="use thread or process")
    plan = _instances(tasks, split, episodes, seed, distinct)
    if on_plan is not None:
        on_plan(len(plan))
    started = time.perf_counter()
    wait = policy.config.cluster.schedule_timeout_s if isinstance(policy, AgentPolicy) else SCHEDULE_TIMEOUT_S
    runner = backend or open_backend(ray, workers, executor, schedule_timeout_s=wait)
    results = _run_all(policy, plan, runner, on_result, close=backend is None)
    from agent_runtime.simphone.tasks import registry

    reg = registry()
    return EvalReport.build(
        results,
        complexity={name: reg[name].complexity for name, _ in plan},
        suite=suite,
        split=split,
        policy=policy_name(policy),
        episodes=episodes,
        seed=seed,
        workers=workers,
        duration_s=round(time.perf_counter() - started, 2),
    )


def executor_for(policy: Policy) -> Executor:
    """Where parallel episodes of ``policy`` run: threads for an agent, processes for the oracle.

    An agent's models either answer over HTTP (threads wait cheaply) or run in-process
    (``transformers:``/``gguf:``), where one engine per process decodes the calls of every
    concurrent episode together (:mod:`agent_runtime.models.batching`): threads then share one
    copy of the weights and one batch, where processes would each load the model and fight for
    the cores. The oracle computes in Python, so only processes put more cores to work for it.
    """
    return "thread" if isinstance(policy, AgentPolicy) else "process"


def _run_all(
    policy: Policy,
    plan: list[tuple[str, int]],
    backend: Backend,
    on_result: Callable[[EpisodeResult], None] | None,
    close: bool,
) -> list[EpisodeResult]:
    home = Path(policy.config.runs.dir).expanduser().resolve() if isinstance(policy, AgentPolicy) else None
    jobs = [
        Job(
            f"{name}/{seed}",
            functools.partial(_episode_job, policy, name, seed),
            home=home,
            lost=functools.partial(lost_episode, name, seed),
        )
        for name, seed in plan
    ]
    results = []
    try:
        for _job, result in backend.run(jobs):
            if on_result is not None:
                on_result(result)
            results.append(result)
    finally:
        if close:
            backend.close()
    return results


def _episode_job(policy: Policy, name: str, seed: int, place: Workplace) -> EpisodeResult:
    """One evaluation episode as a backend job: an agent writes its run where the worker says."""
    return run_episode(in_runs_dir(policy, place.runs_dir), name, seed)


def lost_episode(name: str, seed: int, error: ClusterError) -> EpisodeResult:
    """The record of an episode the cluster could not play: a failed episode saying why."""
    from agent_runtime.simphone.tasks import make_task, split_of

    task = make_task(name, seed)
    return EpisodeResult(
        task=name, app=task.app, seed=seed, split=split_of(task), goal=task.goal, success=False,
        score=0.0, steps=0, max_steps=task.max_steps, status="error", error=f"ClusterError: {error}",
        expected_answer=task.expected_answer(),
    )  # fmt: skip


def in_runs_dir(policy: Policy, runs_dir: Path | None) -> Policy:
    """``policy`` writing its runs under ``runs_dir`` (itself when None, or when it writes none)."""
    if runs_dir is None or not isinstance(policy, AgentPolicy):
        return policy
    moved = copy.copy(policy)
    moved.config = policy.config.model_copy(
        update={"runs": policy.config.runs.model_copy(update={"dir": runs_dir})}
    )
    return moved
