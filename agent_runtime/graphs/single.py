"""GUI-Owl end to end (Mobile-Agent-v3 paper §3): one model, one call per step.

::

    START → single ─┬─→ execute → reflect → advance ─┬─→ single …
                    │                                 ├─→ rag → plan → … (auto: escalated)
                    └─→ advance (format failure,      └─→ finish → END
                        answer, terminate, interact, stalemate)

The model sees GUI-Owl's native prompt — the ``mobile_use``/``computer_use`` function in the
system message, the query, its earlier steps' conclusions and the screen — and answers with a
``<tool_call>`` (:mod:`agent_runtime.roles.gui_owl`). One model call per step on the critical
path (plus the Reflector's with ``graph.reflect``).
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
from agent_runtime.roles import gui_owl
from agent_runtime.roles.caller import ImageInput
from agent_runtime.roles.worker import screen_note

KIND = "single"


def _history(state: AgentState) -> list[str]:
    """One line per earlier step kept in the state (``Step4: …``, numbered from 1 like GUI-Owl's
    prompt): its conclusion (else its action), and how a failed one failed."""
    return [
        f"Step{h['step'] + 1}: {history_line(h, h['description'] or h['action'])}"
        for h in state.get("history", [])
    ]


def single_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """The one model call of a step: thinking, a tool call, a conclusion."""
    ctx, emit = runtime.context, runtime.stream_writer
    obs, ref = observe(ctx, state)
    step = state.get("step", 0)
    emit(StepStarted(step=step, subgoal=state["task"]))
    t0 = time.time()
    mode = ctx.mode("single")
    cfg = ctx.model("single")
    inputs = gui_owl.GuiOwlInputs(
        answers=answer_lines(state),
        task=state["task"],
        tools=gui_owl.tools_json(ctx.platform, screen_note(cfg.coords, obs.size, cfg.budget, mode), mode),
        history=_history(state),
        observation=mode,
        ui_tree=tree_for(mode, obs),
    )
    sees_tree = shows_tree(mode)
    result = ctx.callers["single"].call(
        inputs.model_dump(),
        partial(
            gui_owl.parse_gui_owl, platform=ctx.platform, screen=obs if sees_tree else None, indices=sees_tree
        ),
        images=images_for(mode, ImageInput(obs.screenshot, ref)),
        step=step,
        reply_format=gui_owl.REPLY_FORMAT,
    )
    emit(role_event(step, "single", result))
    pending = begin_step(
        ctx, state, obs, ref, t0, result, role="single", graph=KIND, actor="single", subgoal=state["task"]
    )
    update: dict[str, Any] = {"screen": ref}
    if result.output is None:
        return update | format_failure(runtime, state, pending, "single", result.error)
    return update | take_action(ctx, state, obs, pending, result.output)


def route_after_single(state: AgentState) -> Literal["execute", "human", "advance"]:
    where = after_action(state)
    return "advance" if where == "next" else where
