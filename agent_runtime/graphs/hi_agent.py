"""Hi-Agent's hierarchical agent (Hi-Agent §3) as nodes of the shared loop.

::

    START → high ─┬─→ low ─┬─→ execute → reflect → advance ─┬─→ high …
                  │        │                                 └─→ finish → END
                  └────────┴─→ advance (format failure, answer, terminate, stalemate)

* ``high``: π_h reads the goal, the screen and its earlier instructions and writes the next
  subgoal instruction (the step's subgoal and description).
* ``low``: π_ℓ turns (instruction, screen) into one action in its model's coordinate space.

Two sequential model calls per step (plus the Reflector's with ``graph.reflect``). The prompts
are the ones ``distill --method grpo`` trains (:mod:`agent_runtime.roles.hi_agent`), screenshot
first, so a GRPO-trained adapter plays here as ``[roles.high]`` / ``[roles.low]``.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Literal

from agent_runtime.config import shows_tree
from agent_runtime.events import StepStarted
from agent_runtime.graphs.inputs import answer_lines, history_line, images_for, tree_for
from agent_runtime.graphs.shared import Ctx, after_action, begin_step, format_failure, take_action
from agent_runtime.graphs.state import AgentState
from agent_runtime.graphs.steps import observe, role_event
from agent_runtime.roles import hi_agent
from agent_runtime.roles.caller import ImageInput
from agent_runtime.roles.worker import parse_worker

KIND = "hi_agent"


def _previous(state: AgentState) -> list[str]:
    """Earlier instructions, oldest first; a failed one says so (the high level would repeat it)."""
    return [history_line(h, h["description"]) for h in state.get("history", []) if h["description"]]


def high_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """π_h: the next subgoal instruction for the current screen."""
    ctx, emit = runtime.context, runtime.stream_writer
    obs, ref = observe(ctx, state)
    step = state.get("step", 0)
    emit(StepStarted(step=step, subgoal=state["task"]))
    mode = ctx.mode("high")
    inputs = hi_agent.HighInputs(
        answers=answer_lines(state),
        problem=state["task"],
        history=hi_agent.history_text(_previous(state)),
        observation=mode,
        ui_tree=tree_for(mode, obs),
    )
    t0 = time.time()
    result = ctx.callers["high"].call(
        inputs.model_dump(),
        hi_agent.parse_high,
        images=images_for(mode, ImageInput(obs.screenshot, ref)),
        step=step,
        reply_format=hi_agent.HIGH_FORMAT,
    )
    emit(role_event(step, "high", result))
    instruction = result.output.instruction if result.output is not None else ""
    pending = begin_step(
        ctx,
        state,
        obs,
        ref,
        t0,
        result,
        role="high",
        graph=KIND,
        actor="low",
        subgoal=instruction or state["task"],
        plan=[instruction] if instruction else [],
        thought=result.output.reasoning if result.output is not None else "",
        description=instruction,
    )
    update: dict[str, Any] = {"screen": ref, "plan": pending.plan}
    if result.output is None:
        return update | format_failure(runtime, state, pending, "high", result.error)
    return update | {"pending": pending}


def low_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """π_ℓ: one action for the instruction on the current screen."""
    ctx, emit = runtime.context, runtime.stream_writer
    obs, ref = observe(ctx, state)
    pending = state.get("pending")
    if pending is None:
        raise RuntimeError("the low level ran without an instruction")
    mode = ctx.mode("low")
    size = ctx.mapper(obs.size, "low").from_screen(obs.size.width, obs.size.height)
    inputs = hi_agent.LowInputs(
        width=hi_agent.extent(size[0]),
        height=hi_agent.extent(size[1]),
        instruction=pending.subgoal,
        platform=ctx.platform,
        observation=mode,
        ui_tree=tree_for(mode, obs),
    )
    sees_tree = shows_tree(mode)
    result = ctx.callers["low"].call(
        inputs.model_dump(),
        partial(parse_worker, platform=ctx.platform, screen=obs if sees_tree else None, indices=sees_tree),
        images=images_for(mode, ImageInput(obs.screenshot, ref)),
        step=pending.step,
        reply_format=hi_agent.LOW_FORMAT,
    )
    emit(role_event(pending.step, "low", result))
    pending = pending.model_copy(
        update={
            "timings": pending.timings.model_copy(update={"low": result.latency_ms}),
            "critical_calls": pending.critical_calls + result.attempts,
        }
    )
    if result.output is None:
        return format_failure(runtime, state, pending, "low", result.error)
    # The step's description stays the instruction: that is what the next high-level call reads.
    out = result.output.model_copy(
        update={"description": pending.description, "thought": pending.thought or result.output.thought}
    )
    return take_action(ctx, state, obs, pending, out)


def route_after_high(state: AgentState) -> Literal["low", "human", "advance"]:
    if state.get("request"):
        return "human"  # a pause
    pending = state.get("pending")
    return "advance" if pending is None or pending.format_failure else "low"


def route_after_low(state: AgentState) -> Literal["execute", "human", "advance"]:
    where = after_action(state)
    return "advance" if where == "next" else where
