"""Paired comparisons of two policies on the same task instances, and a correction for several.

Two evaluations of the same instances (same task, seed and sampling seed) differ only where one
succeeded and the other did not. McNemar's exact test looks at just those discordant pairs: under
"no difference" each is a fair coin, so with ``gains`` fail→success and ``losses`` success→fail
the one-sided p-value is P(X ≥ gains) for X ~ Binomial(gains + losses, 1/2). That is sharper than
comparing two Wilson intervals, which ignores the pairing. Several methods compared against one
start are corrected with Holm's step-down procedure, which controls the family-wise error without
Bonferroni's loss of power.

McNemar treats every instance as an independent pair, but instances of one template share its
screens, its wording and whatever training did to it: five instances of a template are closer to
one observation than to five. :func:`clustered_test` makes the *template* the unit: its statistic
is the sum over templates of each template's difference in solved instances, and under "no
difference" each template's difference is as likely negated (a sign-flip randomization test,
computed exactly by convolution, for any number of templates). With k templates that moved its
smallest p-value is 2^-k.

>>> r = paired_test({"a": True, "b": False, "c": False}, {"a": True, "b": True, "c": True})
>>> (r.gains, r.losses, r.p_greater)
(2, 0, 0.25)
>>> holm([0.01, 0.04, 0.03])
[0.03, 0.06, 0.06]
>>> c = clustered_test({"A/1": False, "A/2": False, "B/1": True}, {"A/1": True, "A/2": True, "B/1": True})
>>> (c.templates, c.better, c.worse, c.net, c.p_greater)
(2, 1, 0, 2, 0.5)
"""

from __future__ import annotations

import math
from collections import Counter
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


def template_of(key: str) -> str:
    """The template of an :func:`instance_key` (``"ClockReachTab/3"`` → ``"ClockReachTab"``)."""
    return key.rsplit("/", 1)[0]


class ClusteredResult(BaseModel):
    """``after`` against ``before`` with the template as the unit (:func:`clustered_test`)."""

    pairs: int = Field(description="instances in both evaluations")
    templates: int = Field(description="templates with at least one paired instance")
    before_successes: int
    after_successes: int
    per_template: dict[str, int] = Field(description="template → after's solved minus before's")
    better: int = Field(description="templates where after solved more")
    worse: int = Field(description="templates where after solved fewer")
    net: int = Field(description="the statistic: sum of the per-template differences")
    p_greater: float = Field(description="one-sided sign-flip p-value for 'after is better'")
    p_two_sided: float = Field(description="two-sided sign-flip p-value (|sum| at least as large)")
    missing: list[str] = Field(default_factory=list, description="instances only one side evaluated")


def _sign_flip_counts(diffs: Sequence[int]) -> Counter[int]:
    """How many of the 2^k sign assignments of ``diffs`` give each sum (exact, by convolution)."""
    counts: Counter[int] = Counter({0: 1})
    for d in diffs:
        step: Counter[int] = Counter()
        for total, ways in counts.items():
            step[total + d] += ways
            step[total - d] += ways
        counts = step
    return counts


def clustered_test(before: Mapping[str, bool], after: Mapping[str, bool]) -> ClusteredResult:
    """The template-clustered paired test of ``after`` against ``before`` (module docstring).

    Keys are instance keys (:func:`instance_key`). The one-sided p-value is the share of the 2^k sign
    assignments of the k per-template differences whose sum is at least the observed one; the
    two-sided, whose absolute sum is at least the observed absolute sum. Templates with a zero
    difference flip to themselves and leave both unchanged.
    """
    common = sorted(set(before) & set(after))
    per_template: dict[str, int] = {}
    for key in common:
        name = template_of(key)
        per_template[name] = per_template.get(name, 0) + int(after[key]) - int(before[key])
    moved = [d for d in per_template.values() if d]
    net = sum(moved)
    counts = _sign_flip_counts(moved)
    total = 2 ** len(moved)
    return ClusteredResult(
        pairs=len(common),
        templates=len(per_template),
        before_successes=sum(1 for k in common if before[k]),
        after_successes=sum(1 for k in common if after[k]),
        per_template=dict(sorted(per_template.items())),
        better=sum(1 for d in moved if d > 0),
        worse=sum(1 for d in moved if d < 0),
        net=net,
        # Not rounded: the gate compares it with a level, and k / 2^m prints exactly anyway.
        p_greater=sum(w for s, w in counts.items() if s >= net) / total,
        p_two_sided=sum(w for s, w in counts.items() if abs(s) >= abs(net)) / total,
        missing=sorted(set(before) ^ set(after)),
    )
