"""Evaluation results: per-episode records, Wilson intervals, per-task and per-app tables, and
instance-held-out beside template-held-out success (:class:`Holdout`)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.costs import RunCosts

#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion.

    Unlike the normal approximation it stays inside [0, 1] and is informative at 0/n and n/n,
    which is where small agent evaluations often sit.

    >>> wilson_interval(10, 10)
    (0.7225, 1.0)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


class EpisodeResult(BaseModel):
    """One played episode, judged."""

    model_config = ConfigDict(frozen=True)

    task: str
    app: str
    seed: int
    split: str
    goal: str
    success: bool
    score: float = Field(description="is_successful's value (1.0 = success)")
    steps: int
    max_steps: int
    status: str = Field(description="how the policy ended: success, failure, max_steps or error")
    answer: str | None = None
    expected_answer: str | None = None
    error: str | None = None
    check: str = Field("", description="what the task's check found, in a sentence")
    duration_s: float = 0.0
    oracle_steps: int | None = Field(None, description="steps the expert needs for this instance")
    critical_calls: int | None = Field(
        None, description="model calls on the steps' critical paths (agent policies; None: not counted)"
    )
    run_dir: str | None = Field(None, description="the episode's trace directory, when the policy wrote one")
    side_effects: list[str] = Field(
        default_factory=list,
        description="app data paths the episode changed outside the task's footprint (any: a failure)",
    )


class Stats(BaseModel):
    """Success rate with its 95 % Wilson interval and mean steps over a group of episodes."""

    model_config = ConfigDict(frozen=True)

    n: int
    successes: int
    success_rate: float
    ci95: tuple[float, float]
    mean_steps: float
    mean_oracle_steps: float | None = Field(None, description="the expert's mean on the same instances")
    seconds_per_step: float | None = Field(None, description="wall time per step the policy took")

    @classmethod
    def of(cls, results: Iterable[EpisodeResult]) -> Stats:
        items = list(results)
        n = len(items)
        wins = sum(r.success for r in items)
        return cls(
            n=n,
            successes=wins,
            success_rate=round(wins / n, 4) if n else 0.0,
            ci95=wilson_interval(wins, n),
            mean_steps=round(sum(r.steps for r in items) / n, 2) if n else 0.0,
            mean_oracle_steps=_mean([r.oracle_steps for r in items]),
            seconds_per_step=(
                round(sum(r.duration_s for r in items) / steps, 2)
                if (steps := sum(r.steps for r in items))
                else None
            ),
        )


def _mean(values: list[int | None]) -> float | None:
    """The mean of the known values (None when any is unknown: a partial mean would mislead)."""
    if not values or any(v is None for v in values):
        return None
    return round(sum(v for v in values if v is not None) / len(values), 2)


class Holdout(BaseModel):
    """A trained model's success split by what it never saw: *instance-held-out* (unseen
    parameters of templates it trained on) and *template-held-out* (templates no training data
    came from). Reported side by side because the first says little about the second."""

    model_config = ConfigDict(frozen=True)

    instance_heldout: Stats | None = Field(description="episodes of trained templates (None: none)")
    template_heldout: Stats | None = Field(description="episodes of held-out templates (None: none)")
    template_heldout_names: list[str] = Field(description="the held-out templates that were played")

    @classmethod
    def of(cls, results: Iterable[EpisodeResult], heldout: Collection[str]) -> Holdout:
        items = list(results)
        seen = [r for r in items if r.task not in heldout]
        unseen = [r for r in items if r.task in heldout]
        return cls(
            instance_heldout=Stats.of(seen) if seen else None,
            template_heldout=Stats.of(unseen) if unseen else None,
            template_heldout_names=sorted({r.task for r in unseen}),
        )


class TaskStats(Stats):
    app: str
    complexity: float


class EvalReport(BaseModel):
    """A whole evaluation. ``episodes`` is the number asked for per template; ``n`` the total."""

    suite: str
    split: str
    policy: str
    episodes: int
    seed: int
    workers: int
    n: int
    successes: int
    success_rate: float
    ci95: tuple[float, float]
    mean_steps: float
    mean_oracle_steps: float | None = None
    seconds_per_step: float | None = None
    per_task: dict[str, TaskStats]
    per_app: dict[str, Stats]
    results: list[EpisodeResult]
    duration_s: float
    costs: RunCosts | None = Field(
        None,
        description="per-role and total tokens, latency, critical-path share and money over the "
        "episodes' runs (agent policies; None: no run traces, e.g. the oracle)",
    )
    holdout: Holdout | None = Field(
        None, description="instance- and template-held-out success, when asked (with_holdout)"
    )
    side_effect_episodes: int = Field(0, description="episodes that changed data outside their footprint")
    side_effect_rate: float = Field(0.0, description="side_effect_episodes / n")

    @classmethod
    def build(
        cls,
        results: list[EpisodeResult],
        *,
        complexity: dict[str, float],
        **meta: Any,
    ) -> EvalReport:
        """Aggregate episode results (sorted by task, then seed) into the report."""
        results = sorted(results, key=lambda r: (r.task, r.seed))
        overall = Stats.of(results)
        per_task: dict[str, TaskStats] = {}
        for name in sorted({r.task for r in results}):
            group = [r for r in results if r.task == name]
            per_task[name] = TaskStats(
                **Stats.of(group).model_dump(), app=group[0].app, complexity=complexity.get(name, 0.0)
            )
        per_app = {
            app: Stats.of(r for r in results if r.app == app) for app in sorted({r.app for r in results})
        }
        side = sum(bool(r.side_effects) for r in results)
        return cls(
            **meta,
            side_effect_episodes=side,
            side_effect_rate=round(side / len(results), 4) if results else 0.0,
            n=overall.n,
            successes=overall.successes,
            success_rate=overall.success_rate,
            ci95=overall.ci95,
            mean_steps=overall.mean_steps,
            mean_oracle_steps=overall.mean_oracle_steps,
            seconds_per_step=overall.seconds_per_step,
            per_task=per_task,
            per_app=per_app,
            results=results,
        )

    def with_holdout(self, heldout: Collection[str]) -> EvalReport:
        """This report with :attr:`holdout` filled for the template-held-out set ``heldout``
        (SimPhone's: :data:`~agent_runtime.simphone.tasks.registry.TEMPLATE_HELDOUT`)."""
        return self.model_copy(update={"holdout": Holdout.of(self.results, heldout)})

    def failures(self) -> list[EpisodeResult]:
        return [r for r in self.results if not r.success]


def failure_detail(result: EpisodeResult) -> str:
    """Why a failed episode failed: its error, or the check's verdict against the policy's claim.

    >>> r = EpisodeResult(task="SettingsToggle", app="Settings", seed=0, split="test", goal="g",
    ...     success=False, score=0.0, steps=1, max_steps=10, status="completed",
    ...     check="the phone's state does not meet the goal 'g'")
    >>> failure_detail(r)
    "failed the check (the agent claimed completed): the phone's state does not meet the goal 'g'"
    """
    if result.error:
        return f"error: {result.error}"
    claimed = result.status in ("completed", "success")
    verdict = f"failed the check (the agent claimed {result.status})" if claimed else result.status
    why = result.check or (
        f"answer {result.answer!r}, expected {result.expected_answer!r}" if result.expected_answer else ""
    )
    return f"{verdict}: {why}" if why else verdict
