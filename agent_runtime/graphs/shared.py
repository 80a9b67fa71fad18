"""The parts of the loop every graph kind shares: an acting role's reply becoming an action (or
the end of the run), executing it, judging it, committing the step, and escalation.

Each graph kind (:mod:`agent_runtime.graphs.build`) decides differently — Mobile-Agent-v3's
Manager and Worker, Hi-Agent's high and low levels, GUI-Owl's single call — and then runs these
same nodes, so state, step records, traces, checkpoints, events, re-asks, budgets and resume are
one implementation for all of them. Where the graphs differ — who judges, who commits a step,
where the next one starts — these nodes read the spec of the graph the step is played in
(:class:`~agent_runtime.specs.GraphSpec`), never its name.

* ``execute``: the step's screen-pixel action on the device, then the new observation.
* ``reflect``: the Reflector judges ``S_t → S_{t+1}`` (Mobile-Agent-v3 steps; other kinds with
  ``graph.reflect``) while the Notetaker reads ``S_{t+1}`` concurrently (Mobile-Agent-v3 steps);
  with no Reflector a step succeeds only if the device reported no failure and the screen changed.
* ``advance`` (kinds without a Manager): commits the step, ends the run on its budget, and — for
  ``auto`` — hands over to the multi-agent graph after ``graph.escalate_after`` consecutive
  failed steps, after a reply that never parsed, or when the single model would end the run
  without success (:func:`escalation_due`, :func:`escalate`).
* ``finish``: commits a step the run ended on.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from typing import Any, Literal

from agent_runtime.actions import Interact, to_screen
from agent_runtime.alignment import screen_actions
from agent_runtime.config import GraphConfig
from agent_runtime.costs import spent_budget
from agent_runtime.events import ActionExecuted, NotesEvent, Notice, VerdictEvent
from agent_runtime.graphs.context import RunContext
from agent_runtime.graphs.human import Ctx, ask_request, confirmation_request
from agent_runtime.graphs.inputs import action_text, images_for, notetaker_inputs, reflector_inputs, tree_text
from agent_runtime.graphs.official import after_notes, ask, judged_pool, official_role, pool_of
from agent_runtime.graphs.state import AgentState, HistoryItem, Step
from agent_runtime.graphs.steps import account, commit, role_event
from agent_runtime.observation import Observation
from agent_runtime.profiles.mobile_agent_v3 import parse_notetaker_reply, parse_reflector_reply
from agent_runtime.role_outputs import NotetakerOutput, ReflectorOutput, WorkerOutput
from agent_runtime.roles import notetaker, reflector
from agent_runtime.roles.caller import ImageInput, RoleResult
from agent_runtime.roles.notes import NoteStore
from agent_runtime.specs import DEFAULT_GRAPH, GraphKind, GraphSpec, graph_spec, role_spec
from agent_runtime.traces import Verdict

#: Actions that legitimately repeat (scrolling a long list, backing out of nested pages).
_REPEAT_EXEMPT = {"swipe", "scroll", "hscroll"}
#: End statuses the single model may reach that the team is asked to retrieve instead.
_ESCALATABLE = {"failed", "gave_up"}


def in_progress(state: AgentState) -> Step:
    """The step the execute and reflect nodes work on (an acting node always leaves one)."""
    pending = state.get("pending")
    if pending is None:
        raise RuntimeError("no step in progress")
    return pending


def begin_step(
    ctx: RunContext,
    state: AgentState,
    obs: Observation,
    ref: str,
    t0: float,
    result: RoleResult[Any],
    *,
    role: str,
    graph: str,
    actor: str,
    **fields: Any,
) -> Step:
    """The step in progress after its first model call (``role``'s, whose latency and attempts
    start the step's critical path); ``actor`` is the role whose action it will execute."""
    return Step(
        step=state.get("step", 0),
        before_screen=ref,
        # The Reflector compares trees; keep the "before" one with the step (it survives a resume).
        before_tree=tree_text(obs) if ctx.any_tree else "",
        t0=t0,
        timings={role: result.latency_ms},
        critical_calls=result.attempts,
        graph=graph,
        actor=actor,
        **fields,
    )


def format_failure(
    runtime: Ctx, state: AgentState, pending: Step, role: str, error: str | None
) -> dict[str, Any]:
    """``role`` never produced a parseable reply: the step fails (verdict C) with no action."""
    unparsed = f"the {role_spec(role).title}'s reply could not be parsed: {error}"
    verdict = Verdict.of("C", unparsed, source="format")
    pending = pending.model_copy(update={"format_failure": True, "verdict": verdict})
    runtime.stream_writer(VerdictEvent.of(pending.step, verdict))
    return {"pending": pending, **account(runtime.context, state, pending)}


def take_action(
    ctx: RunContext, state: AgentState, obs: Observation, pending: Step, out: WorkerOutput
) -> dict[str, Any]:
    """What an acting role's parsed reply does: ``answer``/``terminate`` end the run, a question
    (``interact``) goes to the person (:mod:`.human`), the same action chosen ``repeat_limit``
    times in a row is a stalemate; any other action is mapped to screen pixels for ``execute`` —
    by way of the person when the safety policy asks for a confirmation."""
    action = out.action
    pending = pending.model_copy(
        update={
            "thought": out.thought,
            "description": out.description,
            "action": out.raw_action or action.to_json(),
        }
    )
    update: dict[str, Any] = {}
    who = role_spec(pending.actor).title
    if isinstance(action, Interact):
        pending = pending.model_copy(update={"action_screen": action})
        return {"pending": pending, "request": ask_request(ctx, state, pending, action.text)}
    if action.action in ("answer", "terminate"):
        pending = pending.model_copy(update={"action_screen": action})
        if action.action == "answer":
            return {
                "pending": pending,
                "status": "completed",
                "success": True,
                "answer": action.text,
                "reason": f"the {who} answered",
            }
        ok = action.status == "success"
        return {
            "pending": pending,
            "status": "completed" if ok else "failed",
            "success": ok,
            "reason": f"the {who} terminated with {action.status}",
        }
    key = json.dumps(action.to_json(), sort_keys=True)
    exempt = action.action in _REPEAT_EXEMPT or getattr(action, "button", None) == "Back"
    repeats = state.get("repeats", 0) + 1 if key == state.get("last_action_key") and not exempt else 1
    update.update(repeats=repeats, last_action_key=key)
    if repeats >= ctx.config.graph.repeat_limit:
        update.update(
            pending=pending,
            status="gave_up",
            success=False,
            reason=f"stalemate: the {who} chose the same action {repeats} times in a row",
        )
        return update
    if action.by_index:
        # ReachAgent's action alignment: the element's centre / central axis in screen pixels.
        executed = screen_actions(action, obs)
        screen: dict[str, Any] = {"action_screen": executed[-1]}
        if len(executed) > 1:
            screen["screen_actions"] = executed
    else:
        executed = [to_screen(action, ctx.mapper(obs.size, pending.actor))]
        screen = {"action_screen": executed[0]}
    pending = pending.model_copy(update=screen)
    update["pending"] = pending
    update["request"] = confirmation_request(ctx, state, obs, pending, executed)
    return update


def after_action(state: AgentState) -> Literal["execute", "human", "next"]:
    """Where an acting node's step goes: to the person when it left a request, to ``execute``
    with an action, else on (the run ended, or the reply never parsed) — the caller names it."""
    if state.get("request"):
        return "human"
    pending = state.get("pending")
    if state.get("status") or pending is None or pending.format_failure:
        return "next"
    return "execute"


def execute_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """``S_{t+1} ← ExecuteOnDevice(A_t)``: the screen-pixel action, then a fresh observation."""
    ctx, emit = runtime.context, runtime.stream_writer
    pending = in_progress(state)
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
    timings = pending.timings.model_copy(
        update={"execute": (executed - start) * 1000, "observe": (observed - executed) * 1000}
    )
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
            duration_ms=round(timings.ms("execute"), 2),
        )
    )
    return {"pending": pending, "screen": ref}


def reflect_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """``F_t ← R(I, S_t, S_{t+1}, A_t)`` with the Notetaker running beside it (kept on SUCCESS).

    The Reflector, when enabled, judges the steps of a graph that always reflects
    (Mobile-Agent-v3's) and the other graphs' steps with ``graph.reflect``; the Notetaker serves
    the Manager, so only a planned graph's steps run it (:class:`~agent_runtime.specs.GraphSpec`).
    """
    ctx, emit = runtime.context, runtime.stream_writer
    pending = in_progress(state)
    step = pending.step
    after_ref = pending.after_screen
    if after_ref is None:
        raise RuntimeError(f"step {step} reached the Reflector without an after-screen")
    graph = graph_spec(pending.graph)
    before = ImageInput(ctx.png(pending.before_screen), pending.before_screen)
    after = ImageInput(ctx.png(after_ref), after_ref)
    notes = NoteStore.from_state(state.get("notes"))
    phase_start = time.perf_counter()
    future, official_notes = _start_notetaker(ctx, state, pending, after) if graph.planned else (None, False)
    done = pending.action_result
    device_ok = done is None or done.ok
    device_report = ""
    if done is not None and not done.ok:
        device_report = f"the device reported a failure: {done.error or 'unknown'}"
    timings = pending.timings.model_copy()
    calls = pending.critical_calls
    if "reflector" in ctx.callers and (graph.always_reflects or ctx.config.graph.reflect):
        result = _ask_reflector(ctx, state, pending, before, after, device_report)
        emit(role_event(step, "reflector", result))
        timings.reflector = result.latency_ms
        timings.reflect_model = result.latency_ms
        calls += result.attempts
        if result.output is not None:
            verdict = result.output.verdict
        else:
            verdict = Verdict.of(
                "C", f"the Reflector's reply could not be parsed: {result.error}", source="format"
            )
    elif not device_ok:
        verdict = Verdict.of("C", device_report, source="device")
    elif before.png == after.png:
        # No Reflector judges: an action that changed nothing on screen (a tap on empty space)
        # is no evidence of progress, so it is not a success.
        verdict = Verdict.of("C", "the screen did not change", source="screen_diff")
    else:
        # Only that the screen changed: whether it was the right action nobody judged.
        verdict = Verdict.of("A", source="screen_diff")
    if not device_ok and verdict.success:
        # A failure the device itself detected is never recorded as success.
        feedback = "; ".join(p for p in (device_report, verdict.feedback) if p)
        verdict = Verdict.of("C", feedback, source="device")
    update: dict[str, Any] = {}
    if future is not None:
        if verdict.success:
            wait_start = time.perf_counter()
            n = future.result()
            waited_ms = (time.perf_counter() - wait_start) * 1000
            emit(role_event(step, "notetaker", n))
            timings.notetaker = n.latency_ms
            # Only the part of the Notetaker's call that outlasted the Reflector is on the path.
            timings.notetaker_wait = waited_ms
            timings.reflect_model = timings.ms("reflect_model") + waited_ms
            if n.output is not None:
                added = notes.merge(n.output.notes, step)
                update["notes"] = notes.to_state()
                if official_notes:
                    update["info_pool"] = after_notes(state, n.output.notes)
                emit(NotesEvent(step=step, added=[i.text for i in added], notes=notes.render(), used=True))
        else:
            emit(NotesEvent(step=step, notes=notes.render(), used=False))
    timings.reflect_phase = (time.perf_counter() - phase_start) * 1000
    pending = pending.model_copy(update={"verdict": verdict, "timings": timings, "critical_calls": calls})
    emit(VerdictEvent.of(step, verdict))
    update["pending"] = pending
    update.update(account(ctx, state, pending))
    return update


def _start_notetaker(
    ctx: RunContext, state: AgentState, pending: Step, after: ImageInput
) -> tuple[Future[RoleResult[NotetakerOutput]] | None, bool]:
    """The Notetaker's call on the after-screen, started beside the Reflector's (its notes are
    kept only if the step succeeds), or None without a Notetaker; True when it runs under an
    official profile, whose pool then takes its notes too."""
    profile = official_role(ctx, "notetaker")
    if profile is not None:
        pool = judged_pool(state, pending)
        future = ctx.executor.submit(
            ask,
            ctx,
            "notetaker",
            profile,
            pool,
            [after],
            parse_notetaker_reply,
            step=pending.step,
            extra={"speculative": True},
        )
        return future, True
    if "notetaker" not in ctx.callers:
        return None, False
    mode = ctx.mode("notetaker")
    inputs = notetaker_inputs(state, pending, mode=mode, device_word=ctx.device_word)
    future = ctx.executor.submit(
        ctx.callers["notetaker"].call,
        inputs.model_dump(),
        notetaker.parse_notetaker,
        images=images_for(mode, after),
        step=pending.step,
        sections=notetaker.SECTIONS,
        extra={"speculative": True},
    )
    return future, False


def _ask_reflector(
    ctx: RunContext,
    state: AgentState,
    pending: Step,
    before: ImageInput,
    after: ImageInput,
    device_report: str,
) -> RoleResult[ReflectorOutput]:
    """The Reflector's judgement of ``S_t → S_{t+1}``: with an official profile's prompt when its
    model runs under one, else with the runtime's (which also reads the device's report)."""
    screen = ctx.cached(pending.after_screen)
    size = screen.size if screen is not None else ctx.device.screen_size
    mode = ctx.mode("reflector")
    profile = official_role(ctx, "reflector")
    if profile is not None:
        pool = pool_of(state, pending)
        return ask(ctx, "reflector", profile, pool, [before, after], parse_reflector_reply, step=pending.step)
    inputs = reflector_inputs(
        state,
        pending,
        mode=mode,
        device_word=ctx.device_word,
        worker_model=ctx.model(pending.actor),
        screen_size=size,
        device_report=device_report,
    )
    return ctx.callers["reflector"].call(
        inputs.model_dump(),
        reflector.parse_reflector,
        images=images_for(mode, before, after),
        step=pending.step,
        sections=reflector.SECTIONS,
    )


def finish_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """Commit a step the run ended on (answer, terminate, stalemate) that no plan update follows."""
    pending = state.get("pending")
    if pending is None:
        return {}
    commit(runtime.context, state, pending)
    return {"pending": None, "step": pending.step + 1}


def advance_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """Commit the step (kinds without a Manager), then end the run on its budget or escalate."""
    ctx, emit = runtime.context, runtime.stream_writer
    update: dict[str, Any] = {}
    step = state.get("step", 0)
    pending = state.get("pending")
    if pending is not None:
        commit(ctx, state, pending)
        step = pending.step + 1
        update.update(pending=None, step=step)
    status = state.get("status")
    unparsed = pending is not None and pending.format_failure
    target = playing(state).escalates_to
    if target is not None and escalation_due(state, ctx.config.graph, step, status, unparsed):
        if status:
            why = state.get("reason", "")
        elif unparsed:
            why = "its reply could not be parsed, even after re-asking"
        else:
            why = f"{state.get('failures', 0)} consecutive failed steps"
        emit(Notice(message=f"escalating to the multi-agent graph at step {step}: {why}"))
        update.update(escalate(state, pending, target), escalated_at=step)
        return update
    if status is None and step >= state["max_steps"]:
        update.update(status="max_steps", success=False, reason=f"step budget of {state['max_steps']} spent")
    elif status is None and (spent := spent_budget(ctx)) is not None:
        update.update(status="max_steps", success=False, reason=spent)
    return update


def escalation_due(
    state: AgentState, graph: GraphConfig, step: int, status: str | None, unparsed: bool
) -> bool:
    """An ``auto`` run hands over after ``escalate_after`` consecutive failed steps, at once
    when the single model's reply could not be parsed even after the re-asks (a model that does
    not speak the format will not start to), or when it would end the run without success
    (terminate failure, stalemate) — never after a success claim or with no step left."""
    if not state.get("escalate") or step >= state["max_steps"]:
        return False
    if status is not None:
        return status in _ESCALATABLE
    return unparsed or state.get("failures", 0) >= graph.escalate_after


def escalate(state: AgentState, last: Step | None, target: GraphKind) -> dict[str, Any]:
    """The state update that hands an ``auto`` run to the multi-agent graph ``target``.

    The team starts as Mobile-Agent-v3 always does — RAG, then the Manager's first plan from the
    screen as it is now — with the single model's steps handed over: the Manager's first prompt
    lists them (Earlier Steps), its successful ones seed the Historical Operations, and the
    Worker's action history keeps them. Replies that never parsed did nothing and are left out.
    The failure count starts afresh: the team has its own ``stuck_after``/``give_up_after``.
    """
    history = state.get("history", [])
    played = [h for h in history if h.get("parsed", True)]
    if last is not None and last.verdict is None and last.action is not None:
        # A step that ended the single model's part without being judged (terminate, stalemate).
        played.append(
            HistoryItem(
                step=last.step,
                action=action_text(last),
                description=last.description,
                success=False,
                feedback=state.get("reason", ""),
                parsed=True,
            )
        )
    lines = [
        f"{h['action']} — {h['description'] or 'no description'} — "
        + ("Successful" if h["success"] else f"Failed{': ' + h['feedback'] if h['feedback'] else ''}")
        for h in played
    ]
    return {
        "graph": target,
        "escalate": False,
        "planned": False,
        "plan": [],
        "completed": [h["description"] or h["action"] for h in reversed(played) if h["success"]],
        "handover": lines,
        "failures": 0,
        "repeats": 0,
        "last_action_key": "",
        "status": None,
        "success": None,
        "answer": None,
        "reason": "",
    }


def playing(state: AgentState) -> GraphSpec:
    """The spec of the graph the run plays now (``auto``: ``single``, then the team)."""
    return graph_spec(state.get("graph", DEFAULT_GRAPH))


def route_after_reflect(state: AgentState) -> str:
    """A judged step goes on as its graph says (:meth:`~agent_runtime.specs.GraphSpec.after_judged`)."""
    return playing(state).after_judged(bool(state.get("status")))


def route_after_advance(state: AgentState) -> str:
    """After ``advance``: the run's end, or the next step of the graph it plays now (its start,
    which for a run just escalated is the team's)."""
    if state.get("status"):
        return "finish"
    return playing(state).start
