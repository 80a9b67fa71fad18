"""The roles and the graph kinds, each described once.

A role (``[roles.NAME]``) and a graph kind (``[graph] kind``) were named in a dozen tables across
the configuration, the runtime, the graph nodes and the trainers, so adding one meant finding
them all, and a shared node asked which kind it served by comparing strings. Each is now one
record here: a :class:`RoleSpec` says what a role's calls are (prompt template, inputs, reply
parser and typed output, whether it can be switched off, what trains it); a :class:`GraphSpec`
what a graph kind plays (its roles, the node its run and its steps start at, who commits a step,
whether the Reflector always judges, where it escalates to). Everything else reads these: the
shared nodes behave by the fields of the graph a step is played in, never by its name.

:mod:`agent_runtime.config` reads this module at start-up, so it imports nothing of the runtime:
a role's inputs, parser and output are *named* (``module:attribute``), not imported — the role
modules themselves read the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["manager", "worker", "reflector", "notetaker", "rag", "high", "low", "single"]
#: Which agent design a run plays (:mod:`agent_runtime.graphs.build`): Mobile-Agent-v3's four
#: roles, Hi-Agent's two levels, GUI-Owl's single model, or the single model escalating to the team.
GraphKind = Literal["mobile_agent_v3", "hi_agent", "single", "auto"]


@dataclass(frozen=True)
class RoleSpec:
    """One role: what its model is asked with, what its reply becomes, and what trains it."""

    name: Role
    #: How reasons and verdicts name it ("the Worker's reply could not be parsed").
    title: str
    #: The reply's typed output (:mod:`agent_runtime.role_outputs`), as ``module:Class``.
    output: str
    #: The built-in prompt template (``prompts/NAME``); None: the role renders no template (RAG).
    template: str | None = None
    #: Whether ``prompts/compact/`` has its template too (else ``prompts = "compact"`` does not
    #: apply to it and it gets the full one).
    compact: bool = False
    #: A system-message template sent before the prompt (GUI-Owl's function declaration).
    system_template: str | None = None
    #: Whether its prompt shows the screenshot before the text (as Hi-Agent's levels were trained).
    images_first: bool = False
    #: What its template renders (a pydantic model), as ``module:Class``.
    inputs: str | None = None
    #: The parser of its replies, as ``module:function``.
    parser: str | None = None
    #: Whether ``enabled = false`` switches it off (else a graph that calls it needs it).
    optional: bool = False
    #: Whether its prompt shows the screen (RAG sees only the request).
    sees_screen: bool = True
    #: Whether its recorded calls are training rows (``distill --method sft``).
    trainable: bool = True
    #: The Hi-Agent level ``distill --method grpo`` trains it as (None: GRPO does not train it).
    grpo_level: Literal["high", "low"] | None = None
    #: The graph whose online-RL rollouts call it at every step (None: online RL does not train it).
    rollout_graph: GraphKind | None = None


@dataclass(frozen=True)
class GraphSpec:
    """One graph kind: the roles it calls and how its steps run through the shared nodes."""

    kind: GraphKind
    #: The roles it calls, in the order they are built (optional ones only when enabled).
    roles: tuple[Role, ...]
    #: The node a run enters at; a run escalated into this graph enters here too.
    start: str
    #: The node each step starts at: after a pause the step starts here again.
    step_start: str
    #: Whether a Manager plans every step: it then commits the step before (else ``advance`` does),
    #: and the Notetaker, whose notes the Manager reads, runs beside the Reflector.
    planned: bool
    #: Whether the Reflector judges every step (else only with ``graph.reflect``).
    always_reflects: bool
    #: The graph a run of this one hands over to when it may escalate (``auto``'s single model).
    escalates_to: GraphKind | None = None
    #: The graph a run of this kind plays first (None: itself); ``auto`` starts as ``single``.
    starts_as: GraphKind | None = None

    def after_judged(self, ended: bool) -> str:
        """The node a judged or settled step goes to: in a planned graph the Manager's next plan,
        which commits it (``finish`` when the run has ended); otherwise ``advance``.

        >>> graph_spec("mobile_agent_v3").after_judged(False), graph_spec("single").after_judged(True)
        ('plan', 'advance')
        """
        if not self.planned:
            return "advance"
        return "finish" if ended else "plan"


_ROLES = (
    RoleSpec(
        name="manager",
        title="Manager",
        output="agent_runtime.role_outputs:ManagerOutput",
        template="manager.j2",
        compact=True,
        inputs="agent_runtime.roles.manager:ManagerInputs",
        parser="agent_runtime.roles.manager:parse_manager",
        grpo_level="high",
        rollout_graph="mobile_agent_v3",
    ),
    RoleSpec(
        name="worker",
        title="Worker",
        output="agent_runtime.role_outputs:WorkerOutput",
        template="worker.j2",
        compact=True,
        inputs="agent_runtime.roles.worker:WorkerInputs",
        parser="agent_runtime.roles.worker:parse_worker",
        grpo_level="low",
        rollout_graph="mobile_agent_v3",
    ),
    RoleSpec(
        name="reflector",
        title="Reflector",
        output="agent_runtime.role_outputs:ReflectorOutput",
        template="reflector.j2",
        compact=True,
        inputs="agent_runtime.roles.reflector:ReflectorInputs",
        parser="agent_runtime.roles.reflector:parse_reflector",
        optional=True,
    ),
    RoleSpec(
        name="notetaker",
        title="Notetaker",
        output="agent_runtime.role_outputs:NotetakerOutput",
        template="notetaker.j2",
        compact=True,
        inputs="agent_runtime.roles.notetaker:NotetakerInputs",
        parser="agent_runtime.roles.notetaker:parse_notetaker",
        optional=True,
    ),
    RoleSpec(
        name="rag",
        title="RAG",
        output="agent_runtime.role_outputs:RagOutput",
        optional=True,
        sees_screen=False,
        trainable=False,
    ),
    RoleSpec(
        name="high",
        title="high level",
        output="agent_runtime.role_outputs:SubgoalOutput",
        template="hi_agent_high.j2",
        images_first=True,
        inputs="agent_runtime.roles.hi_agent:HighInputs",
        parser="agent_runtime.roles.hi_agent:parse_high",
        grpo_level="high",
    ),
    RoleSpec(
        name="low",
        title="low level",
        output="agent_runtime.role_outputs:WorkerOutput",
        template="hi_agent_low.j2",
        images_first=True,
        inputs="agent_runtime.roles.hi_agent:LowInputs",
        parser="agent_runtime.roles.worker:parse_worker",
        grpo_level="low",
    ),
    RoleSpec(
        name="single",
        title="agent",
        output="agent_runtime.role_outputs:WorkerOutput",
        template="gui_owl.j2",
        system_template="gui_owl_system.j2",
        inputs="agent_runtime.roles.gui_owl:GuiOwlInputs",
        parser="agent_runtime.roles.gui_owl:parse_gui_owl",
        rollout_graph="single",
    ),
)
#: Every role by name, in the order ``[roles]`` lists them.
ROLE_SPECS: dict[str, RoleSpec] = {spec.name: spec for spec in _ROLES}

#: The graph a configuration plays unless ``[graph] kind`` says otherwise.
DEFAULT_GRAPH: GraphKind = "mobile_agent_v3"
#: Mobile-Agent-v3's team: the graph ``auto`` escalates to.
TEAM: GraphKind = "mobile_agent_v3"

_GRAPHS = (
    GraphSpec(
        kind="mobile_agent_v3",
        roles=("manager", "worker", "reflector", "notetaker", "rag"),
        start="rag",
        step_start="act",
        planned=True,
        always_reflects=True,
    ),
    GraphSpec(
        kind="hi_agent",
        roles=("high", "low", "reflector"),
        start="high",
        step_start="high",
        planned=False,
        always_reflects=False,
    ),
    GraphSpec(
        kind="single",
        roles=("single", "reflector"),
        start="single",
        step_start="single",
        planned=False,
        always_reflects=False,
        escalates_to=TEAM,
    ),
    # Its steps are played as ``single`` and, once escalated, as the team: the shared nodes read
    # those specs. Its own entries say where it starts and every role either phase calls.
    GraphSpec(
        kind="auto",
        roles=("single", "manager", "worker", "reflector", "notetaker", "rag"),
        start="single",
        step_start="single",
        planned=False,
        always_reflects=True,
        starts_as="single",
    ),
)
#: Every graph kind by name.
GRAPH_SPECS: dict[str, GraphSpec] = {spec.kind: spec for spec in _GRAPHS}


def role_spec(name: str) -> RoleSpec:
    """The spec of role ``name`` (a KeyError for a name that is no role)."""
    return ROLE_SPECS[name]


def graph_spec(kind: str) -> GraphSpec:
    """The spec of graph kind ``kind`` (a KeyError for a name that is no kind)."""
    return GRAPH_SPECS[kind]


def prompt_template(role: str, *, system: bool = False) -> str:
    """The built-in prompt template of ``role`` (``system``: its system-message template).

    >>> prompt_template("worker"), prompt_template("single", system=True)
    ('worker.j2', 'gui_owl_system.j2')
    """
    spec = role_spec(role)
    template = spec.system_template if system else spec.template
    if template is None:
        raise ValueError(f"the {role} role has no {'system ' * system}prompt template")
    return template
