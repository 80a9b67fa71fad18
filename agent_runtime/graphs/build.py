"""Compile the graph of a kind (``[graph] kind``) over the shared state and nodes.

* ``mobile_agent_v3`` — Mobile-Agent-v3's Manager, Worker, Reflector, Notetaker and RAG
  (:mod:`.mobile_agent_v3`): three sequential model calls per step.
* ``hi_agent`` — Hi-Agent's high and low levels (:mod:`.hi_agent`): two.
* ``single`` — GUI-Owl end to end (:mod:`.single`): one.
* ``auto`` — ``single`` first; after ``graph.escalate_after`` consecutive failed steps (or a
  failure the single model would end the run on) the same run continues in ``mobile_agent_v3``
  with the history handed over (:func:`~.shared.escalate`), in the same trace.

Every kind shares ``execute``, ``reflect``, ``finish`` (and ``advance``) from :mod:`.shared` and
``human`` (a person answers, confirms or takes over) from :mod:`.human`,
the state (:mod:`.state`), the step records, the checkpointer and resume.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agent_runtime.config import GRAPH_KINDS, GraphKind
from agent_runtime.errors import ConfigError
from agent_runtime.graphs import hi_agent, single
from agent_runtime.graphs.context import RunContext
from agent_runtime.graphs.human import human_node, pausable, route_after_human
from agent_runtime.graphs.mobile_agent_v3 import add_team
from agent_runtime.graphs.shared import (
    advance_node,
    execute_node,
    finish_node,
    reflect_node,
    route_after_advance,
    route_after_reflect,
)
from agent_runtime.graphs.state import CHECKPOINT_TYPES, AgentState
from agent_runtime.specs import DEFAULT_GRAPH, TEAM, graph_spec


def sqlite_checkpointer(conn: sqlite3.Connection) -> SqliteSaver:
    """The SQLite checkpointer a resumable run uses: it rebuilds the state's :class:`Step`
    (:data:`CHECKPOINT_TYPES`) and otherwise only the types LangGraph itself deems safe — and,
    unlike its permissive default, without warning about "unregistered" types on resume."""
    return SqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES))


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None, *, kind: GraphKind = DEFAULT_GRAPH
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled graph of ``kind``; pass a checkpointer to make runs resumable."""
    if kind not in GRAPH_KINDS:
        raise ConfigError(f"unknown graph kind {kind!r}", hint=f"use one of: {', '.join(GRAPH_KINDS)}")
    g: StateGraph[Any, Any, Any, Any] = StateGraph(AgentState, context_schema=RunContext)
    g.add_node("execute", execute_node)
    g.add_node("reflect", reflect_node)
    g.add_node("finish", finish_node)
    g.add_node("human", human_node)
    g.add_edge("execute", "reflect")
    g.add_edge("finish", END)
    team = kind in (TEAM, "auto")
    if team:
        add_team(g)
    if kind == TEAM:
        g.add_edge(START, "rag")
        g.add_conditional_edges("reflect", route_after_reflect, ["plan", "finish"])
        g.add_conditional_edges("human", route_after_human, ["execute", "plan", "act", "finish", "human"])
        return g.compile(checkpointer=checkpointer)
    g.add_node("advance", advance_node)
    if kind == "hi_agent":
        g.add_node("high", pausable(hi_agent.high_node))
        g.add_node("low", hi_agent.low_node)
        g.add_edge(START, "high")
        g.add_conditional_edges("high", hi_agent.route_after_high, ["low", "human", "advance"])
        g.add_conditional_edges("low", hi_agent.route_after_low, ["execute", "human", "advance"])
        g.add_conditional_edges("human", route_after_human, ["execute", "advance", "high", "human"])
        g.add_conditional_edges("reflect", route_after_reflect, ["advance"])
        g.add_conditional_edges("advance", route_after_advance, ["high", "finish"])
    else:
        g.add_node("single", pausable(single.single_node))
        g.add_edge(START, "single")
        g.add_conditional_edges("single", single.route_after_single, ["execute", "human", "advance"])
        after_human = (
            ["execute", "advance", "single", "plan", "act", "finish", "human"]
            if team
            else ["execute", "advance", "single", "human"]
        )
        g.add_conditional_edges("human", route_after_human, after_human)
        after_reflect = ["advance", "plan", "finish"] if team else ["advance"]
        g.add_conditional_edges("reflect", route_after_reflect, after_reflect)
        after_advance = ["single", "rag", "finish"] if team else ["single", "finish"]
        g.add_conditional_edges("advance", route_after_advance, after_advance)
    return g.compile(checkpointer=checkpointer)


def initial_state(task: str, *, platform: str, max_steps: int, kind: GraphKind = DEFAULT_GRAPH) -> AgentState:
    """The state a fresh run of ``kind`` starts from (``auto`` starts as ``single``, and may
    escalate from it: its spec's ``starts_as``)."""
    starts_as = graph_spec(kind).starts_as
    return AgentState(
        task=task,
        graph=starts_as or kind,
        escalate=starts_as is not None,
        escalated_at=None,
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
        request=None,
        answers=[],
        interventions=0,
        reason="",
    )
