"""Mobile-Agent-v3's execution loop (the paper's Algorithm 1) as a LangGraph ``StateGraph``.

::

    START → rag → plan ─┬─→ act ─┬─→ execute → reflect ─┬─→ plan (update) …
                        │        ├─→ plan  (format failure: replan with the error)
                        └────────┴──────────────────────┴─→ finish → END

* ``rag``: ``K_RAG ← RAG(I)`` (skipped with a notice when retrieval is unavailable).
* ``plan``: ``M_init`` on the first visit, ``M_update`` afterwards; it commits the finished step
  to ``steps.jsonl`` and ends the run when the plan is Finished or the step budget is spent. A
  plan that could not be parsed keeps the previous one and never finishes the run.
* ``act``: the Worker picks ``A_t``; ``answer``/``terminate`` end the run, so does the same
  action chosen ``repeat_limit`` times in a row (swipe, scroll and Back are exempt).
* ``execute``: the action in screen pixels on the device, then the new observation ``S_{t+1}``.
* ``reflect``: the Reflector judges ``S_t → S_{t+1}`` while the Notetaker reads ``S_{t+1}``
  *concurrently*; the notes are kept only on SUCCESS, so the critical path of a step is three
  sequential model calls (Worker, Reflector, Manager), not four. With no Reflector, a step is a
  success only if the device reported no failure and the screen changed. ``stuck_after`` consecutive
  failures show the Manager the Potentially Stuck block; ``give_up_after`` more end the run.

``execute``, ``reflect`` and ``finish`` are the nodes every graph kind shares
(:mod:`agent_runtime.graphs.shared`); :func:`add_team` adds this graph's own nodes to a graph
being built (:mod:`agent_runtime.graphs.build`: alone, or behind the single model in ``auto``).
Nodes return partial state (plain data and the typed :class:`~agent_runtime.graphs.state.Step` in
progress, checkpointed after every node); live objects come from
:class:`~agent_runtime.graphs.context.RunContext`. Events go to LangGraph's custom stream.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Literal

from langgraph.graph import StateGraph

from agent_runtime.config import shows_tree
from agent_runtime.costs import spent_budget
from agent_runtime.events import Notice, RoleOutputEvent, StepStarted
from agent_runtime.graphs.human import pausable
from agent_runtime.graphs.inputs import images_for, manager_inputs, worker_inputs
from agent_runtime.graphs.official import after_plan, ask, official_role, pool_of, tracks_pool
from agent_runtime.graphs.shared import Ctx, after_action, begin_step, format_failure, take_action
from agent_runtime.graphs.state import AgentState
from agent_runtime.graphs.steps import commit, observe, role_event
from agent_runtime.profiles import mobile_agent_v3 as official_prompts
from agent_runtime.roles import manager, worker
from agent_runtime.roles.caller import ImageInput
from agent_runtime.roles.rag import retrieve_knowledge
from agent_runtime.specs import TEAM


# -- nodes ----------------------------------------------------------------------------------------
def rag_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """Algorithm 1 line 3: retrieve knowledge for the instruction before the first plan."""
    ctx, emit = runtime.context, runtime.stream_writer
    caller = ctx.callers.get("rag")
    if caller is None:
        emit(Notice(message="retrieval disabled ([roles.rag] enabled = false)"))
        return {"knowledge": ""}
    out, notice = retrieve_knowledge(state["task"], ctx.config.memory, partial(caller.ask_text, step=-1))
    if notice:
        emit(Notice(message=notice, level="warning"))
    else:
        emit(RoleOutputEvent(step=-1, role="rag", output=out.model_dump(mode="json")))
    return {"knowledge": out.knowledge}


def plan_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """``M_init`` (first visit) or ``M_update``; commits the pending step; decides Finished/budget."""
    ctx, emit = runtime.context, runtime.stream_writer
    obs, ref = observe(ctx, state)
    pending = state.get("pending")
    init = not state.get("planned")
    mode = ctx.mode("manager")
    sections: tuple[str, ...]
    if init:
        sections, call_step = manager.SECTIONS_INIT, -1
    else:
        sections = manager.SECTIONS_UPDATE
        call_step = pending.step if pending is not None else state.get("step", 0)
    profile = official_role(ctx, "manager")
    if profile is not None:
        pool = pool_of(state, pending)
        image = [ImageInput(obs.screenshot, ref)]
        result = ask(ctx, "manager", profile, pool, image, manager.parse_manager, step=call_step)
    else:
        inputs = manager_inputs(
            state, pending, obs=obs, mode=mode, device_word=ctx.device_word, graph=ctx.config.graph
        )
        result = ctx.callers["manager"].call(
            inputs.model_dump(),
            manager.parse_manager,
            images=images_for(mode, ImageInput(obs.screenshot, ref)),
            step=call_step,
            sections=sections,
        )
    emit(role_event(call_step, "manager", result))
    update: dict[str, Any] = {"screen": ref, "planned": True}
    if tracks_pool(ctx):
        update["info_pool"] = after_plan(state, pending, result)
    finished = False
    if result.output is not None:
        out = result.output
        finished = out.finished
        update["plan"] = out.plan
        update["thought"] = out.thought
        # The Manager restates Historical Operations cumulatively; keep ours if it left them out.
        update["completed"] = out.completed or ([] if init else state.get("completed", []))
    else:
        # Unparseable plan: keep the previous one (first plan: the request itself is the subgoal).
        update["plan"] = state.get("plan") or [state["task"]]
        update["completed"] = state.get("completed", [])
    step = state.get("step", 0)
    if pending is not None:
        commit(ctx, state, pending, manager_ms=result.latency_ms)
        update["pending"] = None
        step = pending.step + 1
        update["step"] = step
    if finished:
        update.update(status="completed", success=True, reason="the Manager marked the plan Finished")
    elif step >= state["max_steps"]:
        update.update(status="max_steps", success=False, reason=f"step budget of {state['max_steps']} spent")
    elif (spent := spent_budget(ctx)) is not None:
        update.update(status="max_steps", success=False, reason=spent)
    return update


def act_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """``A_t ← W(I, S_t, SS_t, F_{t-1}, N_t)``; answer/terminate/repeat end the run."""
    ctx, emit = runtime.context, runtime.stream_writer
    obs, ref = observe(ctx, state)
    step = state.get("step", 0)
    plan = state.get("plan", [])
    subgoal = plan[0] if plan else state["task"]
    emit(StepStarted(step=step, subgoal=subgoal))
    t0 = time.time()
    mode = ctx.mode("worker")
    sees_tree = shows_tree(mode)
    profile = official_role(ctx, "worker")
    if profile is not None:
        image = [ImageInput(obs.screenshot, ref)]
        result = ask(
            ctx, "worker", profile, pool_of(state), image, official_prompts.parse_worker_reply, step=step
        )
    else:
        inputs = worker_inputs(
            state,
            obs=obs,
            mode=mode,
            device_word=ctx.device_word,
            platform=ctx.platform,
            model=ctx.model("worker"),
        )
        result = ctx.callers["worker"].call(
            inputs.model_dump(),
            partial(
                worker.parse_worker,
                platform=ctx.platform,
                screen=obs if sees_tree else None,
                indices=sees_tree,
            ),
            images=images_for(mode, ImageInput(obs.screenshot, ref)),
            step=step,
            sections=worker.SECTIONS,
        )
    emit(role_event(step, "worker", result))
    pending = begin_step(
        ctx,
        state,
        obs,
        ref,
        t0,
        result,
        role="worker",
        graph=TEAM,
        actor="worker",
        subgoal=subgoal,
        plan=plan,
        completed=state.get("completed", []),
    )
    update: dict[str, Any] = {"screen": ref}
    if result.output is None:
        return update | format_failure(runtime, state, pending, "worker", result.error)
    return update | take_action(ctx, state, obs, pending, result.output)


# -- routers --------------------------------------------------------------------------------------
def route_after_plan(state: AgentState) -> Literal["act", "finish"]:
    return "finish" if state.get("status") else "act"


def route_after_act(state: AgentState) -> Literal["execute", "human", "plan", "finish"]:
    where = after_action(state)
    if where != "next":
        return where
    if state.get("status"):
        return "finish"
    if state.get("pending") is None:
        raise RuntimeError("act finished without a pending step")
    return "plan"


def add_team(g: StateGraph[Any, Any, Any, Any]) -> None:
    """Add Mobile-Agent-v3's nodes and edges to ``g`` (which has ``execute``, ``reflect`` and
    ``finish``); the graph enters it at ``rag``."""
    g.add_node("rag", rag_node)
    g.add_node("plan", plan_node)
    g.add_node("act", pausable(act_node))
    g.add_edge("rag", "plan")
    g.add_conditional_edges("plan", route_after_plan, ["act", "finish"])
    g.add_conditional_edges("act", route_after_act, ["execute", "human", "plan", "finish"])
