"""Agent graphs compared on the same task instances (``agent-runtime eval --graph A,B``).

Each graph kind is evaluated on its own (:func:`~agent_runtime.evaluation.evaluate`) with the
same templates, split, seeds and episode count, so every kind plays the same instances and a
difference in success comes from the graph, not the draw. :func:`compare_graphs` turns those
reports into one :class:`GraphComparison`: per kind the usual report plus the model calls per
step on the critical path (the cost a graph adds: 1 for ``single``, 2 for ``hi_agent``, 3 for
``mobile_agent_v3``), then every kind against the first one with McNemar's exact test on the
paired instances (:mod:`agent_runtime.evaluation.paired`), Holm-corrected over the kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

from agent_runtime.errors import ConfigError
from agent_runtime.evaluation.paired import PairedResult, holm, outcomes, paired_test
from agent_runtime.evaluation.report import EpisodeResult, EvalReport, TaskStats


def critical_calls_per_step(results: Iterable[EpisodeResult]) -> float | None:
    """Model calls per step on the critical path, over the episodes whose calls were counted.

    Episodes without a count (the policy raised before its run was recorded, or a policy that
    calls no model) are left out rather than counted as zero calls; None when none was counted.

    >>> r = dict(app="Shop", split="test", goal="g", success=True, score=1.0, max_steps=9, status="completed")
    >>> critical_calls_per_step([EpisodeResult(task="T", seed=0, steps=2, critical_calls=6, **r),
    ...                          EpisodeResult(task="T", seed=1, steps=1, critical_calls=4, **r),
    ...                          EpisodeResult(task="T", seed=2, steps=5, **r)])
    3.33
    """
    counted = [(r.critical_calls, r.steps) for r in results if r.critical_calls is not None]
    steps = sum(s for _, s in counted)
    if not steps:
        return None
    return round(sum(c for c, _ in counted) / steps, 2)


class GraphResult(BaseModel):
    """One graph kind's evaluation."""

    kind: str
    report: EvalReport
    critical_calls_per_step: float | None = Field(
        None, description="mean model calls per step on the critical path (see critical_calls_per_step)"
    )


class GraphPairing(BaseModel):
    """One kind against the baseline (the first kind) on the instances both played."""

    kind: str
    baseline: str
    paired: PairedResult = Field(description="McNemar's exact test of kind (after) against baseline (before)")
    p_holm: float = Field(description="the two-sided p-value, Holm-adjusted over all the pairings")


class GraphComparison(BaseModel):
    """Several graph kinds on the same instances: results per kind (in the order asked, the first
    being the baseline), paired tests against the baseline, and per-task stats per kind."""

    graphs: list[GraphResult]
    comparisons: list[GraphPairing]
    per_task: dict[str, dict[str, TaskStats]] = Field(description="template → kind → its stats")

    @property
    def baseline(self) -> str:
        return self.graphs[0].kind


def compare_graphs(reports: Mapping[str, EvalReport]) -> GraphComparison:
    """Compare the reports of several graph kinds (kind → report; the first is the baseline).

    Raises :class:`ConfigError` for fewer than two kinds, or reports of different instances:
    a paired test is only meaningful on the same ones.
    """
    if len(reports) < 2:
        raise ConfigError(f"a comparison needs at least two graph kinds, got {len(reports)}")
    kinds = list(reports)
    baseline = kinds[0]
    played = {kind: sorted(outcomes(r.results)) for kind, r in reports.items()}
    for kind in kinds[1:]:
        if played[kind] != played[baseline]:
            raise ConfigError(
                f"graph {kind!r} played other instances than {baseline!r}",
                hint="evaluate every kind with the same tasks, split, episodes and seed",
            )
    tests = [
        paired_test(outcomes(reports[baseline].results), outcomes(reports[k].results)) for k in kinds[1:]
    ]
    adjusted = holm([t.p_two_sided for t in tests])
    tasks = sorted({name for r in reports.values() for name in r.per_task})
    return GraphComparison(
        graphs=[
            GraphResult(kind=kind, report=r, critical_calls_per_step=critical_calls_per_step(r.results))
            for kind, r in reports.items()
        ],
        comparisons=[
            GraphPairing(kind=kind, baseline=baseline, paired=test, p_holm=p)
            for kind, test, p in zip(kinds[1:], tests, adjusted, strict=True)
        ],
        per_task={name: {kind: r.per_task[name] for kind, r in reports.items()} for name in tasks},
    )
