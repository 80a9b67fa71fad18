"""π_h's own subgoals as low-level training records: the low level's half of eq. 5 (Hi-Agent §4.2).

Eq. 5 updates π_ℓ^(k) with π_h^(k-1) fixed: the low level has to learn to carry out the subgoals
the high level writes, not only the oracle's. So before each alternating low-level phase,
π_h^(k-1) writes one subgoal on every recorded state (greedy: the one the runtime would act on),
and a well-formed one that differs from the oracle's instruction becomes a copy of that state's
record with this instruction (``instruction_by="high_level"``).

**Its target.** Hi-Agent's low-level reward is r_ℓ = r_env(s_t, g_t, π_ℓ): the match of π_ℓ's
action with the state's oracle action â_t, whatever g_t says (§4.2, App. C.2); we keep â_t as the
target. That is right only when g_t means the oracle's step. The paper leaves this to π_h being
trained towards such subgoals; a subgoal naming another step would teach π_ℓ to ignore its
instruction. The judge cannot tell: it checks feasibility, and its own "click back button" edge
case (valid but unrelated) scores 1. So ``subgoal_filter="env"`` (the default) keeps a subgoal
only when r_env agrees that it names the oracle's step: π_ℓ^(k-1), the low level before this
update, run greedily on it, already gives â_t (same type, points within ε, same text — r_ℓ's
test). The GRPO phase then samples π_ℓ at the training temperature on these rows, where it can
still miss: what it learns is to follow π_h's wording as reliably as the oracle's.
``subgoal_filter="none"`` keeps every well-formed subgoal, as the paper is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.trainers.hi_agent.grpo_config import SubgoalFilter
from agent_runtime.trainers.hi_agent.grpo_data import GRPORecord, high_level_text
from agent_runtime.trainers.hi_agent.grpo_rewards import (
    LowLevelPolicy,
    make_low_level_reward,
    parse_subgoal,
    same_text,
)

#: π_h: (row with the screenshot, the high-level prompt text) → its reply.
HighLevelPolicy = Callable[[Mapping[str, Any], str], str]
SUBGOALS_FILE = "subgoals.jsonl"


class SubgoalStats(BaseModel):
    """What became of π_h's subgoals in one iteration (``metrics.jsonl``: ``subgoals``)."""

    states: int = Field(description="recorded states π_h wrote a subgoal for")
    well_formed: int = Field(description="subgoals matching the <reasoning>/<instruction> format")
    oracle_wording: int = Field(description="well-formed ones equal to the oracle's instruction (already in)")
    kept: int = Field(description="subgoals added to the low level's data")


def _as_reply(action: Any) -> str:
    """π_ℓ's answer as the JSON text r_ℓ reads (a policy may return a dict or ForesightAction)."""
    if isinstance(action, str):
        return action
    return json.dumps(action.model_dump(mode="json") if isinstance(action, BaseModel) else dict(action))


def subgoal_records(
    records: Sequence[GRPORecord],
    high: HighLevelPolicy,
    low: LowLevelPolicy,
    *,
    subgoal_filter: SubgoalFilter,
    epsilon: float,
) -> tuple[list[GRPORecord], SubgoalStats]:
    """The records of π_h's subgoals that the low level trains on next (module docstring)."""
    from agent_runtime.models.hf import defuse_vision_text
    from agent_runtime.trainers.data.datasets import ImageLoader

    loader = ImageLoader()
    executes = make_low_level_reward(epsilon=epsilon)
    kept: list[GRPORecord] = []
    well_formed = oracle_wording = 0
    for record in records:
        path = Path(record.image_path)
        row = {
            "image": loader.load(path.parent, path.name, record.image_seen),
            "image_size": list(record.image_size),
            "problem": record.problem,
        }
        instruction = parse_subgoal(high(row, defuse_vision_text(high_level_text(record))))
        if instruction is None:
            continue
        well_formed += 1
        if same_text(instruction, record.instruction):
            oracle_wording += 1
            continue
        if subgoal_filter == "env":
            solution = json.dumps(record.solution.model_dump(mode="json"))
            action = _as_reply(low(row, instruction))
            if executes([action], solution=[solution], image_size=[row["image_size"]]) != [1.0]:
                continue
        kept.append(record.model_copy(update={"instruction": instruction, "instruction_by": "high_level"}))
    stats = SubgoalStats(
        states=len(records), well_formed=well_formed, oracle_wording=oracle_wording, kept=len(kept)
    )
    return kept, stats
