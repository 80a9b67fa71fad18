"""Reflector balancing (Mobile-Agent-v3 §2.2.3, step 4).

Reflectors mostly say "success", so their data is recalibrated per trajectory:

1. a **negative** judgement at step *i* (outcome B or C) is kept only if the Reflector judged
   step *i + 1* positive — the feedback led to a corrected step. (The paper's "this feedback
   causes step i+1 to be judged positive"; we read causation as adjacency, which is what a trace
   can show.)
2. a **positive** judgement (outcome A) is kept only from trajectories whose steps were *all*
   judged positive;
3. then positives and negatives are equalised by down-sampling the larger class (seeded).

Samples of other roles pass through unchanged.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

from agent_runtime.trainers.data.filters import Filtered, report
from agent_runtime.trainers.data.samples import Sample


def is_positive(sample: Sample) -> bool | None:
    """The Reflector's judgement in this call: True for A, False for B/C, None if unknown."""
    outcome = (sample.parsed or {}).get("outcome")
    if outcome is None and sample.verdict is not None:
        outcome = sample.verdict.outcome
    if outcome is None:
        return None
    return str(outcome).strip().upper() == "A"


def filter_reflector(samples: list[Sample], *, balance: bool = True, seed: int = 0) -> Filtered:
    """Apply the i → i+1 rule, the all-positive rule, then balance (module docstring)."""
    by_run: dict[str, dict[int, Sample]] = defaultdict(dict)
    for s in samples:
        if s.role == "reflector" and is_positive(s) is not None:
            # The last attempt of a step is the judgement the run acted on.
            prev = by_run[s.run_id].get(s.step)
            if prev is None or s.attempt >= prev.attempt:
                by_run[s.run_id][s.step] = s
    chosen = {id(s) for steps in by_run.values() for s in steps.values()}
    why_kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    positives: list[Sample] = []
    negatives: list[Sample] = []
    for steps in by_run.values():
        all_positive = all(is_positive(s) for s in steps.values())
        for step, s in steps.items():
            if is_positive(s):
                if all_positive:
                    positives.append(s)
                else:
                    dropped["positive in a trajectory with negatives"] += 1
            else:
                following = steps.get(step + 1)
                if following is not None and is_positive(following):
                    negatives.append(s)
                else:
                    dropped["negative not followed by a positive"] += 1
    if balance:
        rng = random.Random(seed)
        n = min(len(positives), len(negatives))
        for name, group in (("positives", positives), ("negatives", negatives)):
            if len(group) > n:
                dropped[f"balance: excess {name}"] += len(group) - n
                group[:] = rng.sample(group, n)
    keep_ids = {id(s) for s in positives + negatives}
    kept: list[Sample] = []
    for s in samples:
        if s.role != "reflector":
            why_kept["not a reflector call"] += 1
            kept.append(s)
        elif id(s) not in chosen:
            dropped["superseded attempt or no judgement"] += 1
        elif id(s) in keep_ids:
            why_kept[
                "positive, all-positive trajectory" if is_positive(s) else "negative followed by a positive"
            ] += 1
            kept.append(s)
    rep = report("reflector", len(samples), why_kept, dropped, balance=balance, seed=seed)
    rep.details = {"positives": len(positives), "negatives": len(negatives)}
    return Filtered(kept, rep)
