"""Paired comparisons of two policies on the same task instances, and a correction for several.

Two evaluations of the same instances (same task, seed and sampling seed) differ only where one
succeeded and the other did not. McNemar's exact test looks at just those discordant pairs: under
"no difference" each is a fair coin, so with ``gains`` fail→success and ``losses`` success→fail
the one-sided p-value is P(X ≥ gains) for X ~ Binomial(gains + losses, 1/2). That is sharper than
comparing two Wilson intervals, which ignores the pairing. Several methods compared against one
start are corrected with Holm's step-down procedure, which controls the family-wise error without
Bonferroni's loss of power.

>>> r = paired_test({"a": True, "b": False, "c": False}, {"a": True, "b": True, "c": True})
>>> (r.gains, r.losses, r.p_greater)
(2, 0, 0.25)
>>> holm([0.01, 0.04, 0.03])
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from agent_runtime.evaluation.report import EpisodeResult


def instance_key(result: EpisodeResult) -> str:
    """What identifies an instance across two evaluations: the template and its seed."""
    return f"{result.task}/{result.seed}"


def outcomes(results: Sequence[EpisodeResult]) -> dict[str, bool]:
    """Instance key → success, for :func:`paired_test`."""
    return {instance_key(r): r.success for r in results}


def _upper_tail(k: int, n: int) -> float:
    """P(X ≥ k) for X ~ Binomial(n, 1/2), exactly."""
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


class PairedResult(BaseModel):
    """``after`` against ``before`` on the instances both evaluated."""

    pairs: int = Field(description="instances in both evaluations")
    before_successes: int
    after_successes: int
    gains: int = Field(description="fail → success")
    losses: int = Field(description="success → fail")
    p_greater: float = Field(description="one-sided exact McNemar p-value for 'after is better'")
    p_two_sided: float = Field(description="two-sided exact McNemar p-value")
    missing: list[str] = Field(default_factory=list, description="instances only one side evaluated")


def paired_test(before: Mapping[str, bool], after: Mapping[str, bool]) -> PairedResult:
    """McNemar's exact test of ``after`` against ``before`` (module docstring)."""
    common = sorted(set(before) & set(after))
    gains = sum(1 for k in common if not before[k] and after[k])
    losses = sum(1 for k in common if before[k] and not after[k])
    n = gains + losses
    two_sided = min(1.0, 2 * _upper_tail(max(gains, losses), n)) if n else 1.0
    return PairedResult(
        pairs=len(common),
        before_successes=sum(1 for k in common if before[k]),
        after_successes=sum(1 for k in common if after[k]),
        gains=gains,
        losses=losses,
        p_greater=round(_upper_tail(gains, n), 6),
        p_two_sided=round(two_sided, 6),
        missing=sorted(set(before) ^ set(after)),
    )


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: the i-th smallest is multiplied by (m − i),
    then made monotone, so a method is significant at level α iff its adjusted value ≤ α."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = round(running, 6)
    return adjusted
