"""Step bookkeeping for every graph kind: observations, failure accounting, step records.

Kept apart from the nodes so :mod:`agent_runtime.graphs.mobile_agent_v3` reads as Algorithm 1.
"""

from __future__ import annotations

import time
from typing import Any

from agent_runtime.events import RoleOutputEvent
from agent_runtime.graphs.context import RunContext
from agent_runtime.graphs.inputs import HISTORY_KEEP, action_text, fold_history
from agent_runtime.graphs.state import AgentState, Step
from agent_runtime.observation import Observation
from agent_runtime.roles.caller import RoleResult
from agent_runtime.roles.notes import NoteStore

#: The timing parts that are model calls on a step's critical path, in every graph kind
#: (``reflect_model``: the Reflector plus the part of the Notetaker that outlasted it).
CRITICAL_MODEL_PARTS = ("manager", "worker", "reflect_model", "high", "low", "single")

__all__ = [
    "CRITICAL_MODEL_PARTS",
    "HISTORY_KEEP",
    "account",
    "action_text",
    "commit",
    "observe",
    "role_event",
]


def observe(ctx: RunContext, state: AgentState) -> tuple[Observation, str]:
    """The live observation of the current screen; observed afresh when not cached (resume)."""
    ref = state.get("screen")
    obs = ctx.cached(ref)
    if obs is not None and ref is not None:
        return obs, ref
    start = time.perf_counter()
    obs = ctx.device.observe()
    ctx.add_device_ms((time.perf_counter() - start) * 1000)
    ref = ctx.save_new_screen(state.get("step", 0), obs.screenshot)
    ctx.remember(ref, obs)
    return obs, ref


def role_event(step: int, role: str, result: RoleResult[Any]) -> RoleOutputEvent:
    return RoleOutputEvent(
        step=step,
        role=role,
        output=result.output.model_dump(mode="json") if result.output is not None else None,
        error=result.error,
        attempts=result.attempts,
        latency_ms=round(result.latency_ms, 2),
    )


def account(ctx: RunContext, state: AgentState, step: Step) -> dict[str, Any]:
    """Fold a judged step into history and the failure count; end the run on a stalemate."""
    update = fold_history(state, step)
    failures = update["failures"]
    graph = ctx.config.graph
    if failures >= graph.stuck_after + graph.give_up_after:
        update.update(
            status="gave_up",
            success=False,
            reason=f"stalemate: {failures} consecutive failed steps",
        )
    return update


def commit(ctx: RunContext, state: AgentState, step: Step, manager_ms: float = 0.0) -> None:
    """Write the finished step to steps.jsonl with its measured critical path."""
    t = step.timings.model_copy()
    if manager_ms:
        t.manager = manager_ms
    t.critical_path = (time.time() - step.t0) * 1000
    t.model_critical = t.ms(*CRITICAL_MODEL_PARTS)
    t.overhead = max(0.0, t.critical_path - t.model_critical - t.ms("execute", "observe"))
    t.critical_calls = float(step.critical_calls + (1 if manager_ms else 0))
    notes = NoteStore.from_state(state.get("notes")).render()
    ctx.write_step(step.record(notes=notes, timings=t))
