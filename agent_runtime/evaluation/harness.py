"""The evaluation harness: run a policy over SimPhone task instances, K episodes at a time.

Each episode gets its own :class:`~agent_runtime.simphone.SimPhone` seeded with the
instance's seed, so episodes share nothing and can run in parallel: in threads (right for the
agent policy, which waits on model servers) or in processes (right for the CPU-bound oracle on
several cores). Success is judged by the task from app state after the policy returns.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from agent_runtime.errors import ConfigError, DependencyError, ModelError
from agent_runtime.evaluation.episode import AgentPolicy, Policy, policy_name
from agent_runtime.evaluation.report import EpisodeResult, EvalReport

Executor = Literal["thread", "process"]
SUITES = ("simphone",)
#: How long a stopped evaluation waits for its episodes in flight to end (seconds).
STOP_GRACE_S = 1.0


def run_episode(policy: Policy, name: str, seed: int) -> EpisodeResult:
    """Build instance ``(name, seed)`` on a fresh phone, let ``policy`` play, judge it.

    Errors raised while playing are recorded on the result (status ``error``) so one broken
    episode does not lose the rest of the evaluation — except configuration and dependency
    errors and model-server failures, which would fail every episode alike and are re-raised.
    """
    from agent_runtime.evaluation.check import check_task
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import make_task, split_of
    from agent_runtime.traces import annotate_run

    task = make_task(name, seed)
    started = time.perf_counter()
    phone = SimPhone(seed=seed)
    answer: str | None = None
    calls: int | None = None
    run_dir: str | None = None
    steps, status, error, score, check = 0, "error", None, 0.0, ""
    try:
        task.setup(phone)
        outcome = policy(task, phone)
        answer, steps, status, calls = outcome.answer, outcome.steps, outcome.status, outcome.critical_calls
        run_dir = outcome.run_dir
        verification = check_task(task, phone, answer)
        if not verification.checked:  # the checker itself failed: an episode error
            raise RuntimeError(verification.detail)
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
    )


def oracle_steps(name: str, seed: int) -> int | None:
    """How many steps the expert needs for instance ``(name, seed)`` (None if it cannot solve it).

    Played on its own fresh phone from the UI tree only (no screenshots): milliseconds.
    """
    from agent_runtime.evaluation.episode import ExpertPolicy
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import make_task

    task = make_task(name, seed)
    phone = SimPhone(seed=seed)
    try:
        task.setup(phone)
        outcome = ExpertPolicy(screenshots=False)(task, phone)
        return outcome.steps if task.is_successful(phone, outcome.answer) else None
    except Exception:  # an instance the expert cannot play has no reference length
        return None
    finally:
        phone.close()


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
) -> EvalReport:
    """Evaluate ``policy`` on ``episodes`` instances of each selected template in ``split``.

    ``tasks`` is a pattern (glob, ``re:REGEX``, comma-separated) or a list of patterns; None
    means every template. ``workers`` episodes run at once in ``executor`` (``process``
    needs a picklable policy, e.g. :func:`~agent_runtime.evaluation.oracle_policy`).
    ``on_plan`` receives the number of episodes before they start, ``on_result`` each result
    as it finishes (progress bars). ``distinct`` plays only instances with different parameters
    (see :func:`~agent_runtime.simphone.tasks.registry.task_instances`).
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
    results = list(_run_all(policy, plan, workers, executor, on_result))
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


def share_cores(threads: int) -> None:
    """Cap this worker process's math threads at its share of the machine's cores.

    Each process would otherwise start as many BLAS/OpenMP threads as there are cores: two
    workers on 2 cores then run 4 busy threads, and a small in-process model decodes many
    times slower (measured ~8x) than one worker alone. Set before torch is imported, the
    environment variables size its thread pools; an already imported torch is told directly.
    """
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def _run_all(
    policy: Policy,
    plan: list[tuple[str, int]],
    workers: int,
    executor: Executor,
    on_result: Callable[[EpisodeResult], None] | None,
) -> Iterable[EpisodeResult]:
    if workers == 1 or len(plan) <= 1:
        for name, seed in plan:
            result = run_episode(policy, name, seed)
            if on_result is not None:
                on_result(result)
            yield result
        return
    pool: cf.Executor
    if executor == "process":
        # forkserver: workers start from a clean interpreter, not a fork of a threaded parent.
        pool = cf.ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("forkserver"),
            initializer=share_cores,
            initargs=(max(1, (os.cpu_count() or 1) // workers),),
        )
    else:
        pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="eval")
    futures = [pool.submit(run_episode, policy, name, seed) for name, seed in plan]
    try:
        for future in cf.as_completed(futures):
            result = future.result()
            if on_result is not None:
                on_result(result)
            yield result
    except BaseException:
        # Stopped (Ctrl-C cancels every run in flight: they record it within milliseconds) or
        # failed: give the episodes in flight a moment, not the minutes that work nothing can
        # cut short (a model still loading) would take.
        for f in futures:
            f.cancel()
        cf.wait(futures, timeout=STOP_GRACE_S)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
