"""The promotion gate of ``agent-runtime evolve``, and its final test.

Why it looks like this (issue 33): a gate that tests each iteration at a fixed level, on the same
instances, with every instance an independent pair, promotes a candidate that is no better than
the start in a third of 5-iteration runs, and the promoted model's reported rate is the
evaluation it was selected on. So:

* **Three disjoint instance sets.** Rollouts play ``train`` instances; promotions are decided on
  ``selection`` instances; the start and the model finally kept are scored once each on ``final``
  instances (:mod:`agent_runtime.simphone.tasks.registry` partitions them by parameter hash). The
  final test is never looked at by a decision, so its numbers are not selected on.
* **Template-clustered.** The candidate is compared with the current model by
  :func:`~agent_runtime.evaluation.paired.clustered_test`: the unit is a template's difference in
  solved instances, not an instance.
* **Corrected for the iterations.** The run's family-wise level ``promote_alpha`` is split evenly
  over the iterations planned when the run started (Bonferroni: the chance that any of them
  promotes a no-better candidate is at most ``promote_alpha``). Iterations added later by
  ``--resume`` have no level left and never promote; their data is still carried over.

With k templates that moved, the smallest clustered p-value is 2^-k, so a gate at level a can
only open with at least log2(1/a) templates: :func:`min_templates` says how many, and the run
says so up front.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from agent_runtime.errors import TrainingError
from agent_runtime.evaluation.paired import ClusteredResult, clustered_test, outcomes
from agent_runtime.evaluation.report import EvalReport, Stats


def iteration_alpha(alpha: float, planned: int, iteration: int) -> float:
    """The level iteration ``iteration`` (1-based) is tested at: ``alpha / planned`` for the
    planned iterations, 0 after them (the run's level is spent).

    >>> iteration_alpha(0.05, 5, 1), iteration_alpha(0.05, 5, 6)
    (0.01, 0.0)
    """
    return alpha / planned if 1 <= iteration <= planned else 0.0


def min_templates(level: float) -> int:
    """Templates that must all move the same way for the clustered test to reach ``level``.

    >>> min_templates(0.01), min_templates(0.05)
    (7, 5)
    """
    return math.ceil(math.log2(1 / level)) if level > 0 else 0


def decide(best: EvalReport, candidate: EvalReport, alpha: float) -> tuple[bool, ClusteredResult, str]:
    """Promote iff the candidate solves more selection instances than the current model and the
    one-sided template-clustered p-value is at most ``alpha`` (this iteration's level)."""
    test = clustered_test(outcomes(best.results), outcomes(candidate.results))
    if test.missing:
        raise TrainingError(
            "the candidate and the current model were evaluated on different instances "
            f"({len(test.missing)} differ)",
            hint="held-out settings changed between iterations; start a new evolve run",
        )
    promoted, why = rule(test, alpha)
    return promoted, test, why


def rule(test: ClusteredResult, alpha: float) -> tuple[bool, str]:
    """The decision on a clustered test at level ``alpha``, and why."""
    moved = f"{test.better} template(s) better, {test.worse} worse, net {test.net:+d}"
    if test.net <= 0:
        return False, f"no net gain ({moved})"
    if alpha <= 0:
        return False, f"no level left: the run's alpha was spent on its planned iterations ({moved})"
    if test.p_greater > alpha:
        return False, f"gain not significant ({moved}, clustered p = {test.p_greater:.3g} > {alpha:.3g})"
    return True, f"{moved}, clustered p = {test.p_greater:.3g} ≤ {alpha:.3g}"


class FinalScore(BaseModel):
    """One model on the final test."""

    iteration: int = Field(description="the iteration that produced it (0: the start)")
    ref: str
    instance_heldout: Stats = Field(description="final instances of the trained templates")
    template_heldout: Stats | None = Field(
        None, description="instances of templates never trained on (None: not measured)"
    )


class FinalTest(BaseModel):
    """The start and the model finally kept, each scored once on the final instances."""

    start: FinalScore
    kept: FinalScore
    instance_heldout: ClusteredResult = Field(description="kept against start, template-clustered")
    template_heldout: ClusteredResult | None = None
    note: str = Field(
        "",
        description="what the numbers cannot show (a start whose own training saw the held-out templates)",
    )


def final_test(
    start: tuple[int, str, EvalReport, EvalReport | None],
    kept: tuple[int, str, EvalReport, EvalReport | None],
    *,
    note: str = "",
) -> FinalTest:
    """The final test's record from each model's (iteration, ref, instance-held-out report,
    template-held-out report or None)."""

    def score(entry: tuple[int, str, EvalReport, EvalReport | None]) -> FinalScore:
        iteration, ref, instances, templates = entry
        return FinalScore(
            iteration=iteration,
            ref=ref,
            instance_heldout=Stats.of(instances.results),
            template_heldout=Stats.of(templates.results) if templates is not None else None,
        )

    s_inst, k_inst = start[2], kept[2]
    s_tmpl, k_tmpl = start[3], kept[3]
    return FinalTest(
        start=score(start),
        kept=score(kept),
        instance_heldout=clustered_test(outcomes(s_inst.results), outcomes(k_inst.results)),
        template_heldout=(
            clustered_test(outcomes(s_tmpl.results), outcomes(k_tmpl.results))
            if s_tmpl is not None and k_tmpl is not None
            else None
        ),
        note=note,
    )
