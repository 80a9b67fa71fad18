"""Rejection-sampling filters (Mobile-Agent-v3 §2.2.3): pure functions over samples.

Each filter takes a list of :class:`~agent_runtime.trainers.data.samples.Sample` and returns a
:class:`Filtered` — the kept samples and a :class:`FilterReport` counting what was kept and
dropped, by reason. ``agent-runtime distill`` prints the reports and writes them to the manifest.

Modules, in the order :func:`.pipeline.default_pipeline` applies them:

* :mod:`.validity` — drop completions that never parsed into the role's output;
* :mod:`.outcome` — success / critic filter with threshold τ_c and the trajectory consensus;
* :mod:`.consistency` — thought–action consistency of Worker calls (documented heuristic);
* :mod:`.reflector` — Reflector balancing (the i → i+1 rule, then positive/negative equalisation);
* :mod:`.dedup` — exact duplicates (same prompt, screenshots and completion);
* :mod:`.reweight` — task re-weighting by success rate (runs last: it duplicates samples).

:mod:`.hint_leak` is no step of the pipeline: it is the check hint-guided sampling
(:mod:`agent_runtime.trainers.data.hints`) applies before a hinted reply can become a sample.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from agent_runtime.trainers.data.samples import Sample


class FilterReport(BaseModel):
    """What one filter did: counts before/after and per-reason counts of kept and dropped samples."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    before: int
    after: int
    kept: dict[str, int] = Field(default_factory=dict)
    dropped: dict[str, int] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        """One line for the console: ``outcome: 40 -> 31 (dropped: run failed 7, critic < 0.5 2)``."""
        text = f"{self.name}: {self.before} -> {self.after}"
        if self.dropped:
            text += " (dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items())) + ")"
        return text


class Filtered(NamedTuple):
    samples: list[Sample]
    report: FilterReport


SampleFilter = Callable[[list[Sample]], Filtered]


def report(
    name: str, before: int, kept: Counter[str], dropped: Counter[str], after: int | None = None, **params: Any
) -> FilterReport:
    """Build a report; ``after`` defaults to the number kept."""
    return FilterReport(
        name=name,
        params=params,
        before=before,
        after=sum(kept.values()) if after is None else after,
        kept=dict(kept),
        dropped=dict(dropped),
    )


def apply_filters(
    samples: list[Sample], filters: Sequence[SampleFilter]
) -> tuple[list[Sample], list[FilterReport]]:
    """Run ``filters`` in order; return the survivors and one report per filter."""
    reports: list[FilterReport] = []
    for f in filters:
        samples, rep = f(samples)
        reports.append(rep)
    return samples, reports
