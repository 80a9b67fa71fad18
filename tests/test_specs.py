"""The role and graph specs: one record per role and per graph kind, and what reads them.

The names the configuration accepts come from the specs, every name a spec gives (a template, a
parser, an output type) exists, and the shared nodes behave by the fields of the graph a step is
played in — a made-up graph kind routes through them without a line of :mod:`graphs.shared`
naming it.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from typing import Any

import pytest

from agent_runtime import specs
from agent_runtime.config import (
    GRAPH_KINDS,
    OPTIONAL_ROLES,
    ROLES,
    GraphConfig,
    GraphKind,
    Role,
    RoleConfig,
    RuntimeConfig,
)
from agent_runtime.graphs.human import route_after_human
from agent_runtime.graphs.shared import route_after_advance, route_after_reflect
from agent_runtime.graphs.state import AgentState, Step
from agent_runtime.roles.templates import role_template
from agent_runtime.specs import GRAPH_SPECS, ROLE_SPECS, GraphSpec, graph_spec, role_spec
from agent_runtime.traces import Verdict


def _load(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def test_every_role_and_graph_kind_has_one_spec() -> None:
    assert set(typing.get_args(Role)) == set(ROLE_SPECS) == set(ROLES)
    assert set(typing.get_args(GraphKind)) == set(GRAPH_SPECS) == set(GRAPH_KINDS)
    assert all(name == spec.name for name, spec in ROLE_SPECS.items())
    assert all(kind == spec.kind for kind, spec in GRAPH_SPECS.items())
    assert OPTIONAL_ROLES == ("reflector", "notetaker", "rag")


def test_every_graph_kind_plays_roles_and_graphs_that_exist() -> None:
    for spec in GRAPH_SPECS.values():
        assert spec.roles and set(spec.roles) <= set(ROLE_SPECS), spec.kind
        for other in (spec.escalates_to, spec.starts_as):
            assert other is None or other in GRAPH_SPECS, spec.kind
    assert graph_spec("auto").starts_as == "single"
    assert graph_spec("single").escalates_to == specs.TEAM


def test_what_a_role_spec_names_exists() -> None:
    """Templates render from the package (both prompt sets where the spec says so); inputs and
    parsers import; a parser returns the output type its spec names."""
    for spec in ROLE_SPECS.values():
        output = _load(spec.output)
        if spec.template is not None:
            role_template(spec.template)
            if spec.compact:
                role_template(spec.template, "compact")
        if spec.system_template is not None:
            role_template(spec.system_template)
        if spec.inputs is not None:
            assert issubclass(_load(spec.inputs), object)
        if spec.parser is not None:
            parser = _load(spec.parser)
            assert typing.get_type_hints(parser)["return"] is output, spec.name


def test_training_tables_agree_with_the_specs() -> None:
    """The trainers' own role tables name the roles the specs say they train."""
    from agent_runtime.trainers.data.samples import TRAINABLE_ROLES
    from agent_runtime.trainers.hi_agent.grpo_config import GRPO_LEVELS
    from agent_runtime.trainers.online.rollouts import ROLLOUT_GRAPHS

    assert TRAINABLE_ROLES == tuple(r for r, s in ROLE_SPECS.items() if s.trainable)
    assert GRPO_LEVELS == {r: s.grpo_level for r, s in ROLE_SPECS.items() if s.grpo_level}
    assert ROLLOUT_GRAPHS == {r: s.rollout_graph for r, s in ROLE_SPECS.items() if s.rollout_graph}


@pytest.mark.parametrize(
    ("kind", "reflect", "roles"),
    [
        ("mobile_agent_v3", False, ("manager", "worker", "reflector", "notetaker", "rag")),
        ("hi_agent", False, ("high", "low")),
        ("hi_agent", True, ("high", "low", "reflector")),
        ("single", False, ("single",)),
        ("auto", False, ("single", "manager", "worker", "reflector", "notetaker", "rag")),
    ],
)
def test_graph_roles_follow_the_spec(kind: GraphKind, reflect: bool, roles: tuple[str, ...]) -> None:
    cfg = RuntimeConfig(graph=GraphConfig(kind=kind, reflect=reflect))
    assert cfg.graph_roles() == roles
    off = cfg.model_copy(update={"roles": {"notetaker": RoleConfig(enabled=False)}})
    assert "notetaker" not in off.graph_roles()


def test_role_titles_name_roles_in_reasons() -> None:
    assert [role_spec(r).title for r in ("worker", "low", "high", "single", "manager")] == [
        "Worker",
        "low level",
        "high level",
        "agent",
        "Manager",
    ]


def _state(graph: str, **fields: Any) -> AgentState:
    return typing.cast(AgentState, {"graph": graph, "step": 1, "max_steps": 10, **fields})


def _judged(graph: str) -> Step:
    return Step(step=1, before_screen="s.png", graph=graph, verdict=Verdict.of("A"))


def test_the_shared_routers_read_the_graph_spec() -> None:
    team = _state("mobile_agent_v3")
    assert route_after_reflect(team) == "plan"
    assert route_after_reflect({**team, "status": "completed"}) == "finish"
    assert route_after_reflect(_state("hi_agent", status="failed")) == "advance"
    assert route_after_advance(_state("hi_agent")) == "high"
    assert route_after_advance(_state("mobile_agent_v3")) == "rag"  # an escalated run enters at rag
    assert route_after_human(team) == "act"  # after a pause: the step starts again
    assert route_after_human({**team, "pending": _judged("mobile_agent_v3")}) == "plan"


def test_a_new_graph_kind_routes_by_its_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph registered only in the specs: the shared routers follow its fields."""
    spec = GraphSpec(
        kind="single",  # the Literal has no room for it; the name is all the registry keys on
        roles=("single",),
        start="look",
        step_start="decide",
        planned=True,
        always_reflects=True,
    )
    monkeypatch.setitem(GRAPH_SPECS, "made_up", spec)
    state = _state("made_up")
    assert route_after_advance(state) == "look"
    assert route_after_human(state) == "decide"
    assert route_after_reflect(state) == "plan"
    assert route_after_reflect({**state, "status": "completed"}) == "finish"
    monkeypatch.setitem(GRAPH_SPECS, "made_up", dataclasses.replace(spec, planned=False))
    assert route_after_reflect({**state, "status": "completed"}) == "advance"
    assert route_after_human({**state, "pending": _judged("made_up")}) == "advance"
