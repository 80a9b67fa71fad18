"""Success / critic filter (Mobile-Agent-v3 §2.2.3, step 1).

A sample is kept when

1. its run succeeded (``require_success``): labelled a success by SimPhone's judgement (eval runs,
   demonstrations), the run's end-of-run check, or the trajectory critic. A success the agent
   only claimed is ``unknown`` (see :func:`~agent_runtime.trainers.data.samples.run_outcome`)
   and dropped, like a failure,
2. the trajectory critic did not judge the run Incorrect (``require_trajectory_correct``; the
   consensus of the text and multimodal channels, paper eq. 4), and
3. its step's critic score is at least ``critic_threshold`` (τ_c; GOOD 1.0, NEUTRAL 0.5,
   HARMFUL 0.0). Calls without a step label (calls before the first step, or runs never
   judged) follow ``missing_critic``: ``keep`` (default) or ``drop``.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from agent_runtime.trainers.data.filters import Filtered, report
from agent_runtime.trainers.data.samples import Sample

DEFAULT_CRITIC_THRESHOLD = 0.5


def filter_outcome(
    samples: list[Sample],
    *,
    critic_threshold: float = DEFAULT_CRITIC_THRESHOLD,
    require_success: bool = True,
    require_trajectory_correct: bool = True,
    missing_critic: Literal["keep", "drop"] = "keep",
) -> Filtered:
    """Keep samples from successful, critic-approved steps (see the module docstring)."""
    kept: list[Sample] = []
    why_kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for s in samples:
        if require_success and s.outcome != "success":
            unverified = s.outcome == "unknown" and s.outcome_source == "agent"
            why = "run outcome unknown (an unverified claim)" if unverified else f"run outcome {s.outcome}"
            dropped[why] += 1
            continue
        if require_trajectory_correct and s.trajectory_correct is False:
            dropped["trajectory critic: Incorrect"] += 1
            continue
        if s.critic_score is None:
            if missing_critic == "drop":
                dropped["no critic label"] += 1
                continue
            why_kept["no critic label"] += 1
        elif s.critic_score < critic_threshold:
            dropped[f"critic score < {critic_threshold:g}"] += 1
            continue
        else:
            why_kept[f"critic score >= {critic_threshold:g}"] += 1
        kept.append(s)
    return Filtered(
        kept,
        report(
            "outcome",
            len(samples),
            why_kept,
            dropped,
            critic_threshold=critic_threshold,
            require_success=require_success,
            require_trajectory_correct=require_trajectory_correct,
            missing_critic=missing_critic,
        ),
    )
