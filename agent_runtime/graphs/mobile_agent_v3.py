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

Nodes return partial state (plain data and the typed :class:`~agent_runtime.graphs.state.Step` in
progress, checkpointed after every node); live objects come from
:class:`~agent_runtime.graphs.context.RunContext`. Events go to LangGraph's custom stream.
"""

from __future__ import annotations

import json
import sqlite3
import time
from concurrent.futures import Future
from functools import partial
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime as GraphRuntime

from agent_runtime.actions import to_screen
from agent_runtime.alignment import screen_actions
from agent_runtime.config import shows_tree
from agent_runtime.events import (
    ActionExecuted,
    NotesEvent,
    Notice,
    RoleOutputEvent,
    StepStarted,
    VerdictEvent,
)
from agent_runtime.graphs.context import RunContext
from agent_runtime.graphs.inputs import (
    images_for,
    manager_inputs,
    notetaker_inputs,
    reflector_inputs,
    tree_text,
    worker_inputs,
)
from agent_runtime.graphs.state import CHECKPOINT_TYPES, AgentState, Step
from agent_runtime.graphs.steps import account, commit, observe, role_event
from agent_runtime.role_outputs import NotetakerOutput
from agent_runtime.roles import manager, notetaker, reflector, worker
from agent_runtime.roles.caller import ImageInput, RoleResult
from agent_runtime.roles.notes import NoteStore
from agent_runtime.roles.rag import retrieve_knowledge
from agent_runtime.traces import Verdict

#: Actions that legitimately repeat (scrolling a long list, backing out of nested pages).
_REPEAT_EXEMPT = {"swipe", "scroll"}

Ctx = GraphRuntime[RunContext]


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
    inputs = manager_inputs(
        state, pending, obs=obs, mode=mode, device_word=ctx.device_word, graph=ctx.config.graph
    )
    sections: tuple[str, ...]
    if init:
        sections, call_step = manager.SECTIONS_INIT, -1
    else:
        sections = manager.SECTIONS_UPDATE
        call_step = pending.step if pending is not None else state.get("step", 0)
    result = ctx.callers["manager"].call(
        inputs.model_dump(),
        manager.parse_manager,
        images=images_for(mode, ImageInput(obs.screenshot, ref)),
        step=call_step,
        sections=sections,
    )
    emit(role_event(call_step, "manager", result))
    update: dict[str, Any] = {"screen": ref, "planned": True}
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
    inputs = worker_inputs(
        state, obs=obs, mode=mode, device_word=ctx.device_word, platform=ctx.platform, model=ctx.worker_model
    )
    sees_tree = shows_tree(mode)
    result = ctx.callers["worker"].call(
        inputs.model_dump(),
        partial(
            worker.parse_worker, platform=ctx.platform, screen=obs if sees_tree else None, indices=sees_tree
        ),
        images=images_for(mode, ImageInput(obs.screenshot, ref)),
        step=step,
        sections=worker.SECTIONS,
    )
    emit(role_event(step, "worker", result))
    pending = Step(
        step=step,
        subgoal=subgoal,
        plan=plan,
        completed=state.get("completed", []),
        before_screen=ref,
        # The Reflector compares trees; keep the "before" one with the step (it survives a resume).
        before_tree=tree_text(obs) if ctx.any_tree else "",
        t0=t0,
        timings={"worker": result.latency_ms},
        critical_calls=result.attempts,
    )
    update: dict[str, Any] = {"screen": ref}
    if result.output is None:
        verdict = Verdict.of("C", f"the Worker's reply could not be parsed: {result.error}")
        pending = pending.model_copy(update={"format_failure": True, "verdict": verdict})
        emit(VerdictEvent.of(step, verdict))
        update.update(pending=pending, **account(ctx, state, pending))
        return update
    out = result.output
    action = out.action
    pending = pending.model_copy(
        update={
            "thought": out.thought,
            "description": out.description,
            "action": out.raw_action or action.to_json(),
        }
    )
    if action.action == "answer":
        update.update(
            pending=pending.model_copy(update={"action_screen": action}),
            status="completed",
            success=True,
            answer=action.text,
            reason="the Worker answered",
        )
        return update
    if action.action == "terminate":
        ok = action.status == "success"
        update.update(
            pending=pending.model_copy(update={"action_screen": action}),
            status="completed" if ok else "failed",
            success=ok,
            reason=f"the Worker terminated with {action.status}",
        )
        return update
    key = json.dumps(action.to_json(), sort_keys=True)
    exempt = action.action in _REPEAT_EXEMPT or getattr(action, "button", None) == "Back"
    repeats = state.get("repeats", 0) + 1 if key == state.get("last_action_key") and not exempt else 1
    update.update(repeats=repeats, last_action_key=key)
    if repeats >= ctx.config.graph.repeat_limit:
        update.update(
            pending=pending,
            status="gave_up",
            success=False,
            reason=f"stalemate: the Worker chose the same action {repeats} times in a row",
        )
        return update
    if action.by_index:
        # ReachAgent's action alignment: the element's centre / central axis in screen pixels.
        executed = screen_actions(action, obs)
        screen: dict[str, Any] = {"action_screen": executed[-1]}
        if len(executed) > 1:
            screen["screen_actions"] = executed
    else:
        screen = {"action_screen": to_screen(action, ctx.mapper(obs.size))}
    update["pending"] = pending.model_copy(update=screen)
    return update


def execute_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """``S_{t+1} ← ExecuteOnDevice(A_t)``: the screen-pixel action, then a fresh observation."""
    ctx, emit = runtime.context, runtime.stream_writer
    pending = _in_progress(state)
    start = time.perf_counter()
    # Usually one action; a "type" by element index is a focusing tap and then the typing.
    for action in pending.to_execute:
        result = ctx.device.execute(action)
        if not result.ok:
            break
    executed = time.perf_counter()
    obs = ctx.device.observe()
    observed = time.perf_counter()
    ctx.add_device_ms((observed - start) * 1000)
    ref = ctx.save_new_screen(pending.step + 1, obs.screenshot)
    ctx.remember(ref, obs)
    timings = dict(pending.timings)
    timings.update(execute=(executed - start) * 1000, observe=(observed - executed) * 1000)
    pending = pending.model_copy(
        update={
            "action_result": result,
            "after_screen": ref,
            "after_tree": tree_text(obs) if ctx.any_tree else "",
            "timings": timings,
        }
    )
    emit(
        ActionExecuted(
            step=pending.step,
            action=pending.action or {},
            action_screen=pending.to_execute[-1].to_json(),
            ok=result.ok,
            message=result.error or result.message,
            duration_ms=round(timings["execute"], 2),
        )
    )
    return {"pending": pending, "screen": ref}


def reflect_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """``F_t ← R(I, S_t, S_{t+1}, A_t)`` with the Notetaker running beside it (kept on SUCCESS)."""
    ctx, emit = runtime.context, runtime.stream_writer
    pending = _in_progress(state)
    step = pending.step
    after_ref = pending.after_screen
    if after_ref is None:
        raise RuntimeError(f"step {step} reached the Reflector without an after-screen")
    before = ImageInput(ctx.png(pending.before_screen), pending.before_screen)
    after = ImageInput(ctx.png(after_ref), after_ref)
    notes = NoteStore.from_state(state.get("notes"))
    phase_start = time.perf_counter()
    future: Future[RoleResult[NotetakerOutput]] | None = None
    if "notetaker" in ctx.callers:
        n_mode = ctx.mode("notetaker")
        n_inputs = notetaker_inputs(state, pending, mode=n_mode, device_word=ctx.device_word)
        future = ctx.executor.submit(
            ctx.callers["notetaker"].call,
            n_inputs.model_dump(),
            notetaker.parse_notetaker,
            images=images_for(n_mode, after),
            step=step,
            sections=notetaker.SECTIONS,
            extra={"speculative": True},
        )
    done = pending.action_result
    device_ok = done is None or done.ok
    device_report = ""
    if done is not None and not done.ok:
        device_report = f"the device reported a failure: {done.error or 'unknown'}"
    timings = dict(pending.timings)
    calls = pending.critical_calls
    if "reflector" in ctx.callers:
        screen = ctx.cached(after_ref)
        size = screen.size if screen is not None else ctx.device.screen_size
        r_mode = ctx.mode("reflector")
        r_inputs = reflector_inputs(
            state,
            pending,
            mode=r_mode,
            device_word=ctx.device_word,
            worker_model=ctx.worker_model,
            screen_size=size,
            device_report=device_report,
        )
        result = ctx.callers["reflector"].call(
            r_inputs.model_dump(),
            reflector.parse_reflector,
            images=images_for(r_mode, before, after),
            step=step,
            sections=reflector.SECTIONS,
        )
        emit(role_event(step, "reflector", result))
        timings["reflector"] = result.latency_ms
        timings["reflect_model"] = result.latency_ms
        calls += result.attempts
        if result.output is not None:
            verdict = result.output.verdict
        else:
            verdict = Verdict.of("C", f"the Reflector's reply could not be parsed: {result.error}")
    elif not device_ok:
        verdict = Verdict.of("C", device_report)
    elif before.png == after.png:
        # No Reflector judges: an action that changed nothing on screen (a tap on empty space)
        # is no evidence of progress, so it is not a success.
        verdict = Verdict.of("C", "the screen did not change")
    else:
        verdict = Verdict.of("A")
    if not device_ok and verdict.success:
        # A failure the device itself detected is never recorded as success.
        verdict = Verdict.of("C", "; ".join(p for p in (device_report, verdict.feedback) if p))
    update: dict[str, Any] = {}
    if future is not None:
        if verdict.success:
            wait_start = time.perf_counter()
            n = future.result()
            waited_ms = (time.perf_counter() - wait_start) * 1000
            emit(role_event(step, "notetaker", n))
            timings["notetaker"] = n.latency_ms
            # Only the part of the Notetaker's call that outlasted the Reflector is on the path.
            timings["notetaker_wait"] = waited_ms
            timings["reflect_model"] = timings.get("reflect_model", 0.0) + waited_ms
            if n.output is not None:
                added = notes.merge(n.output.notes, step)
                update["notes"] = notes.to_state()
                emit(NotesEvent(step=step, added=[i.text for i in added], notes=notes.render(), used=True))
        else:
            emit(NotesEvent(step=step, notes=notes.render(), used=False))
    timings["reflect_phase"] = (time.perf_counter() - phase_start) * 1000
    pending = pending.model_copy(update={"verdict": verdict, "timings": timings, "critical_calls": calls})
    emit(VerdictEvent.of(step, verdict))
    update["pending"] = pending
    update.update(account(ctx, state, pending))
    return update


def finish_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """Commit a step the run ended on (answer, terminate, stalemate) that no plan update follows."""
    pending = state.get("pending")
    if pending is None:
        return {}
    commit(runtime.context, state, pending)
    return {"pending": None, "step": pending.step + 1}


def _in_progress(state: AgentState) -> Step:
    """The step the execute and reflect nodes work on (act always leaves one)."""
    pending = state.get("pending")
    if pending is None:
        raise RuntimeError("no step in progress")
    return pending


# -- routers --------------------------------------------------------------------------------------
def route_after_plan(state: AgentState) -> Literal["act", "finish"]:
    return "finish" if state.get("status") else "act"


def route_after_act(state: AgentState) -> Literal["execute", "plan", "finish"]:
    if state.get("status"):
        return "finish"
    pending = state.get("pending")
    if pending is None:
        raise RuntimeError("act finished without a pending step")
    if pending.format_failure:
        return "plan"
    return "execute"


def route_after_reflect(state: AgentState) -> Literal["plan", "finish"]:
    return "finish" if state.get("status") else "plan"


def sqlite_checkpointer(conn: sqlite3.Connection) -> SqliteSaver:
    """The SQLite checkpointer a resumable run uses: it rebuilds the state's :class:`Step`
    (:data:`CHECKPOINT_TYPES`) and otherwise only the types LangGraph itself deems safe — and,
    unlike its permissive default, without warning about "unregistered" types on resume."""
    return SqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES))


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled Mobile-Agent-v3 graph; pass a checkpointer to make runs resumable."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(AgentState, context_schema=RunContext)
    g.add_node("rag", rag_node)
    g.add_node("plan", plan_node)
    g.add_node("act", act_node)
    g.add_node("execute", execute_node)
    g.add_node("reflect", reflect_node)
    g.add_node("finish", finish_node)
    g.add_edge(START, "rag")
    g.add_edge("rag", "plan")
    g.add_conditional_edges("plan", route_after_plan, ["act", "finish"])
    g.add_conditional_edges("act", route_after_act, ["execute", "plan", "finish"])
    g.add_edge("execute", "reflect")
    g.add_conditional_edges("reflect", route_after_reflect, ["plan", "finish"])
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer)


def initial_state(task: str, *, platform: str, max_steps: int) -> AgentState:
    """The state a fresh run starts from."""
    return AgentState(
        task=task,
        platform=platform,
        max_steps=max_steps,
        step=0,
        screen=None,
        knowledge="",
        planned=False,
        plan=[],
        completed=[],
        notes=[],
        history=[],
        failures=0,
        repeats=0,
        last_action_key="",
        pending=None,
        status=None,
        success=None,
        answer=None,
        reason="",
    )
