"""Task re-weighting by success rate (Mobile-Agent-v3 §2.2.3, step 3).

Tasks the agent already solves often are down-sampled and rarely solved ones up-sampled. A
task's success rate ``p`` is measured over *all* its runs (before any filtering — pass
:func:`success_rates` of the unfiltered samples), and each of its samples gets the weight

    w(p) = max_weight − (max_weight − min_weight) · p        (default 2.0 at p = 0, 0.5 at p = 1)

realised by repetition: ⌊w⌋ copies plus one more with probability w − ⌊w⌋. The draw is seeded
per sample id, so the result does not depend on sample order. Tasks with no known outcome keep
weight 1.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

from agent_runtime.trainers.data.filters import Filtered, report
from agent_runtime.trainers.data.samples import Sample


def success_rates(samples: list[Sample]) -> dict[str, float]:
    """Success rate per task key, counted over distinct runs with a known outcome. A run whose
    targets the oracle relabelled counts with the policy's own outcome (``policy_outcome``): its
    rows are right, but the policy failed that task, which is what the weight is about.

    >>> from types import SimpleNamespace as S
    >>> run = lambda r, o, p=None: S(task_key="t", run_id=r, outcome=o, policy_outcome=p)
    >>> runs = [run("a", "success"), run("b", "failure"), run("c", "success", "failure")]
    >>> success_rates(runs)
    {'t': 0.333...}
    """
    runs: dict[str, dict[str, bool]] = defaultdict(dict)
    for s in samples:
        outcome = s.policy_outcome or s.outcome
        if outcome != "unknown":
            runs[s.task_key][s.run_id] = outcome == "success"
    return {task: sum(r.values()) / len(r) for task, r in sorted(runs.items())}


def task_weight(p: float, *, min_weight: float = 0.5, max_weight: float = 2.0) -> float:
    """The sampling weight of a task with success rate ``p``.

    >>> task_weight(0.0), task_weight(1.0), task_weight(0.5)
    (2.0, 0.5, 1.25)
    """
    return max_weight - (max_weight - min_weight) * p


def filter_reweight(
    samples: list[Sample],
    *,
    rates: dict[str, float],
    min_weight: float = 0.5,
    max_weight: float = 2.0,
    seed: int = 0,
) -> Filtered:
    """Repeat or drop each sample according to its task's weight (module docstring)."""
    out: list[Sample] = []
    why_kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    per_task: dict[str, dict[str, float]] = {}
    for s in samples:
        p = rates.get(s.task_key)
        w = 1.0 if p is None else task_weight(p, min_weight=min_weight, max_weight=max_weight)
        stats = per_task.setdefault(
            s.task_key, {"success_rate": -1.0 if p is None else p, "weight": w, "before": 0, "after": 0}
        )
        copies = math.floor(w)
        if random.Random(f"{seed}/{s.id}").random() < w - copies:
            copies += 1
        stats["before"] += 1
        stats["after"] += copies
        if copies == 0:
            dropped["down-sampled (frequently solved task)"] += 1
            continue
        why_kept["kept"] += 1
        if copies > 1:
            why_kept["up-sampled copies"] += copies - 1
        out.extend([s] * copies)
    rep = report(
        "reweight",
        len(samples),
        why_kept,
        dropped,
        after=len(out),
        min_weight=min_weight,
        max_weight=max_weight,
        seed=seed,
    )
    rep.details = {"tasks": per_task}
    return Filtered(out, rep)
