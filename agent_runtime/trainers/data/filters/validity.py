"""Drop calls whose completion never parsed: training on them would teach the format errors."""

from __future__ import annotations

from collections import Counter

from agent_runtime.trainers.data.filters import Filtered, report
from agent_runtime.trainers.data.samples import Sample


def filter_valid(samples: list[Sample]) -> Filtered:
    """Keep samples whose completion parsed into the role's output.

    A re-asked call appears twice in a trace: the unparseable attempt (dropped here) and the
    attempt that parsed (kept, its prompt carrying the re-ask).
    """
    kept: list[Sample] = []
    why_kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for s in samples:
        if not s.completion.strip():
            dropped["empty completion"] += 1
        elif not s.valid:
            dropped["parse error"] += 1
        else:
            kept.append(s)
            why_kept["parsed"] += 1
    return Filtered(kept, report("validity", len(samples), why_kept, dropped))
