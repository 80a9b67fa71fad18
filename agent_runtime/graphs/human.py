"""The person in the loop, one node every graph kind shares (see :mod:`agent_runtime.control`).

An acting node (the Worker, Hi-Agent's low level, GUI-Owl's single call) never executes a
question or an action that needs a person: it leaves an :class:`InputRequest` in state, and the
router sends the run to ``human``. So does a pause, at the start of a step. ``human`` asks with
LangGraph's ``interrupt()`` — the run stops, checkpointed, until the runtime resumes it with the
reply — or, when no one attends the run, takes :func:`unattended_reply` at once. Nothing runs
before the ``interrupt()`` call, because LangGraph re-runs the node from its start on resume.

* an approved action goes on to ``execute``, the decision recorded on its step;
* a rejected one is not executed: the step fails (verdict C) with the person's reason as its
  feedback, which the Manager (or the next step of the other kinds) reads;
* a takeover — instead of the action, or after a pause — lets the person operate the device;
  the agent then observes the screen afresh, and interventions.jsonl keeps the segment's
  before and after screens;
* an answer goes into the next prompts (``answers``) and the trace.
"""

from __future__ import annotations

import time
from functools import wraps
from typing import Any, Protocol

from langgraph.runtime import Runtime as GraphRuntime
from langgraph.types import interrupt
from pydantic import ValidationError

from agent_runtime.actions import Action
from agent_runtime.control import InputReply, InputRequest, unattended_reply
from agent_runtime.device import AddressBook
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.events import InputAnswered, Notice, VerdictEvent
from agent_runtime.graphs.context import RunContext
from agent_runtime.graphs.state import AgentState, Step
from agent_runtime.graphs.steps import account
from agent_runtime.observation import Observation
from agent_runtime.safety.guard import assess
from agent_runtime.safety.recipients import Contacts
from agent_runtime.specs import DEFAULT_GRAPH, graph_spec, role_spec
from agent_runtime.traces import InterventionRecord, Verdict

#: What LangGraph passes every node as ``runtime``: the run's context is ``runtime.context``.
Ctx = GraphRuntime[RunContext]


def _request(ctx: RunContext, state: AgentState, step: int, **fields: Any) -> dict[str, Any]:
    n = state.get("interventions", 0)
    request = InputRequest(id=f"{ctx.run_id}/{n + 1}", run_id=ctx.run_id, step=step, **fields)
    return request.model_dump(mode="json")


def ask_request(ctx: RunContext, state: AgentState, pending: Step, question: str) -> dict[str, Any]:
    """The request for the agent's question (``interact``)."""
    return _request(ctx, state, pending.step, kind="ask", question=question, screen=pending.before_screen)


def confirmation_request(
    ctx: RunContext, state: AgentState, obs: Observation, pending: Step, actions: list[Action]
) -> dict[str, Any] | None:
    """The request to confirm ``actions`` (the step's screen-pixel actions), or None when the
    safety policy lets them run unasked (see :class:`~agent_runtime.config.SafetyConfig`)."""
    safety = ctx.config.safety
    if not safety.enabled or safety.ask == "never":
        return None
    found = assess(
        actions,
        screen=obs,
        # The user's answers are their words too ("yes, send it to Ana").
        task="\n".join([state["task"], *(a["answer"] for a in state.get("answers", []))]),
        plan=[*state.get("plan", []), *state.get("completed", [])],
        flagged_by=flagged_by(pending),
        refused=state.get("refused_effects", []),
        contacts=contacts_of(ctx, state),
        config=safety,
    )
    if not (found.off_task if safety.ask == "off_task" else found.flagged):
        return None
    return _request(
        ctx,
        state,
        pending.step,
        kind="confirm",
        action=pending.action,
        target=found.target,
        sensitive=found.sensitive,
        off_task=found.off_task,
        effects=found.effects,
        refused_before=found.refused,
        screen=pending.before_screen,
    )


def contacts_of(ctx: RunContext, state: AgentState) -> Contacts:
    """What the guard may ask the device about who a name reaches, and the book as the run
    started (a send is judged by who receives it after the device resolves the address)."""
    raw = state.get("contacts_at_start")
    return Contacts(ask=ctx.device.address_book, at_start=AddressBook.model_validate(raw) if raw else None)


def flagged_by(pending: Step) -> str | None:
    """The role that asked for a confirmation itself: the acting role with ``"confirm": true`` in
    its action, or the Manager with ``[confirm]`` in the subgoal."""
    if pending.action is not None and pending.action.get("confirm") is True:
        return role_spec(pending.actor).title
    return "Manager" if "[confirm]" in pending.subgoal.lower() else None


class Node(Protocol):
    """A graph node of this runtime (LangGraph passes ``runtime`` by that name)."""

    def __call__(self, state: AgentState, runtime: Ctx) -> dict[str, Any]: ...


def pausable(node: Node) -> Node:
    """``node`` (the node a step starts at) after a look for a pause: when the person asked for
    one, the step does not start; the run goes to ``human`` with a takeover request instead."""

    @wraps(node)
    def start(state: AgentState, runtime: Ctx) -> dict[str, Any]:
        ctx = runtime.context
        if ctx.take_pause():
            return {
                "request": _request(
                    ctx, state, state.get("step", 0), kind="takeover", screen=state.get("screen")
                )
            }
        return node(state, runtime)

    return start


def human_node(state: AgentState, runtime: Ctx) -> dict[str, Any]:
    """Ask the person (or decide unattended), then apply the reply.

    A reply that cannot be applied — one the request does not accept, a device that fails when
    the person hands it back, an answer the trace cannot store — is not half-applied: the request
    goes back to this node, pending, with why it was refused (``InputRequest.refused``), and the
    runtime leaves the run waiting for another reply. (Raising instead would leave LangGraph's
    record of the reply behind, and the next resume would take that reply again unasked.)"""
    ctx = runtime.context
    raw = state.get("request")
    if raw is None:
        raise RuntimeError("the human node ran without a request")
    request = InputRequest.model_validate(raw)
    if request.refused_before and not request.refused:
        # The person's "no" was to the effect, not to one route to it: it is not asked again.
        again = InputReply.reject(f"you refused to {', '.join(request.refused_before)} earlier in this run")
        return _apply(ctx, state, request, again, runtime)
    if not (ctx.attended or ctx.replying or request.refused):
        return _apply(ctx, state, request, unattended_reply(request, ctx.config.safety), runtime)
    ctx.replying = False
    answer = interrupt(raw)
    try:
        reply = InputReply.model_validate(answer).check(request)
        return _apply(ctx, state, request, reply, runtime)
    except (AgentRuntimeError, ValidationError) as exc:
        why = exc.message if isinstance(exc, AgentRuntimeError) else exc.errors()[0]["msg"]
        runtime.stream_writer(
            Notice(
                level="warning", message=f"the reply could not be taken ({why}); the request is still pending"
            )
        )
        return {"request": request.model_copy(update={"refused": why}).model_dump(mode="json")}


def _apply(
    ctx: RunContext, state: AgentState, request: InputRequest, reply: InputReply, runtime: Ctx
) -> dict[str, Any]:
    """The run after ``reply``: the intervention on record, the step settled as it says."""
    answered = time.time()
    update: dict[str, Any] = {"request": None, "interventions": state.get("interventions", 0) + 1}
    record = InterventionRecord(
        step=request.step,
        kind=request.kind,
        request_id=request.id,
        question=request.question,
        action=request.action,
        target=request.target,
        reasons=request.reasons,
        decision=reply.decision,
        by=reply.by,
        text=reply.text,
        refused=list(reply.refused),
        asked_at=request.asked_at,
        answered_at=answered,
        before_screen=request.screen,
    )
    if reply.decision in ("takeover", "resume"):
        # The person operated the device: the agent looks afresh, and the segment is on record.
        obs = ctx.device.observe()
        ref = ctx.save_new_screen(request.step, obs.screenshot)
        ctx.remember(ref, obs)
        record = record.model_copy(update={"after_screen": ref})
        update["screen"] = ref
    ctx.write_intervention(record)
    runtime.stream_writer(
        InputAnswered(request_id=request.id, kind=request.kind, decision=reply.decision, by=reply.by)
    )
    pending = state.get("pending")
    if request.kind == "takeover" or pending is None:
        return update
    if request.kind == "ask":
        answer = reply.text if reply.decision == "answer" else ""
        if answer:
            entry = {"step": request.step, "question": request.question, "answer": answer}
            update["answers"] = [*state.get("answers", []), entry]
        if answer and reply.by == "person":
            verdict = Verdict.of("A", f"the user answered: {answer}")
        elif answer:  # no one could answer: asking again is no progress
            verdict = Verdict.of("C", answer)
        else:
            verdict = Verdict.of("C", f"the user declined to answer{': ' + reply.text if reply.text else ''}")
        return _judged(runtime, state, pending, verdict, update)
    confirmation: dict[str, Any] = {"decision": reply.decision, "by": reply.by, "reasons": request.reasons}
    if reply.text:
        confirmation["text"] = reply.text
    pending = pending.model_copy(update={"confirmation": confirmation})
    if reply.decision == "approve":
        return update | {"pending": pending}
    if reply.decision == "reject":
        if reply.by == "person" and request.effects:
            refused = state.get("refused_effects", [])
            update["refused_effects"] = list(dict.fromkeys([*refused, *request.effects]))
        who = "the person" if reply.by == "person" else "the runtime"
        why = f": {reply.text}" if reply.text else ""
        verdict = Verdict.of(
            "C", f"{who} rejected this action{why}; do not try it again unless the task needs it"
        )
        return _judged(runtime, state, pending, verdict, update)
    pending = pending.model_copy(update={"after_screen": update["screen"]})
    verdict = Verdict.of("C", "the person took over and operated the device instead of this action")
    update = _judged(runtime, state, pending, verdict, update)
    update["failures"] = 0  # the person's segment is no failure of the agent's
    return update


def _judged(
    runtime: Ctx, state: AgentState, pending: Step, verdict: Verdict, update: dict[str, Any]
) -> dict[str, Any]:
    """The step ends here, not executed: its verdict folded into history and failures, and
    announced like any other step's (the live view prints it, with the person's reason)."""
    by = (pending.confirmation or {}).get("by", "person")
    verdict = verdict.model_copy(update={"source": "person" if by == "person" else "guard"})
    pending = pending.model_copy(update={"verdict": verdict})
    runtime.stream_writer(VerdictEvent.of(pending.step, verdict))
    return update | {"pending": pending} | account(runtime.context, state, pending)


def route_after_human(state: AgentState) -> str:
    """Approved: execute. Settled without executing: the step is committed by the planner (or
    ``advance``). After a pause: the step starts again, looking at the screen afresh. A reply
    that could not be taken: ask again."""
    if state.get("request") is not None:
        return "human"
    graph = graph_spec(state.get("graph", DEFAULT_GRAPH))
    pending = state.get("pending")
    if pending is None:
        return graph.step_start
    if pending.verdict is None:
        return "execute"
    return graph.after_judged(bool(state.get("status")))
