"""The checkpointed state of a run, shared by every graph kind (:mod:`agent_runtime.graphs.build`).

Everything here is plain data — JSON-like values plus the one typed :class:`Step` in progress —
so LangGraph's SQLite checkpointer can store it and a killed run can resume in a new process
(:data:`CHECKPOINT_TYPES` is what the checkpointer is allowed to rebuild). Observations are *not*
state: the state holds screen refs (``screens/0003.png`` in the run directory); the live
:class:`~agent_runtime.observation.Observation` objects sit in the run context's cache, and after
a resume the device is simply observed again. Every node returns a partial update; no channel has
a reducer, the last write wins.
"""

from __future__ import annotations

import time
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import ConfigDict, Field

from agent_runtime.actions import Action, ActionResult
from agent_runtime.traces import StepFields, StepRecord, StepTimings

#: How a run can end (the subset of :data:`agent_runtime.traces.RunStatus` the graph decides).
EndStatus = Literal["completed", "failed", "gave_up", "max_steps"]


class HistoryItem(TypedDict):
    """One executed (or attempted) step, as the Worker and the stuck block show it."""

    step: int
    action: str
    """The action JSON as the model wrote it, or a note that no valid action was produced."""
    description: str
    success: bool
    feedback: str
    parsed: NotRequired[bool]
    """False when no valid action was produced (absent in checkpoints written before it)."""


class Step(StepFields):
    """The step in progress: filled by act → execute → reflect, committed by plan or finish.

    Immutable: a node hands on ``step.model_copy(update=...)``, never changes the checkpointed
    one. The fields it shares with its step record are declared once (:class:`StepFields`), so
    :meth:`record` derives the record instead of copying them one by one.
    """

    model_config = ConfigDict(frozen=True)

    before_screen: str
    before_tree: str = Field("", description="the indexed UI tree before the action (tree modes)")
    after_tree: str = Field("", description="the indexed UI tree after the action (tree modes)")
    action_screen: Action | None = Field(None, description="the action as executed, in screen pixels")
    screen_actions: list[Action] = Field(
        default_factory=list,
        description="every action executed when there are several (a type by index: tap, then type)",
    )
    action_result: ActionResult | None = None
    t0: float = Field(default_factory=time.time, description="wall clock when the step began")
    timings: StepTimings = Field(default_factory=StepTimings, description="milliseconds, per part")
    critical_calls: int = Field(0, description="model calls on the critical path so far (re-asks too)")

    @property
    def to_execute(self) -> list[Action]:
        """The screen-pixel actions to run, in order."""
        if self.screen_actions:
            return self.screen_actions
        if self.action_screen is None:
            raise ValueError(f"step {self.step} has no action to execute")
        return [self.action_screen]

    def record(self, *, notes: str, timings: StepTimings) -> StepRecord:
        """The step's line in steps.jsonl (actions and results in their JSON form)."""
        screen, result = self.action_screen, self.action_result
        # A "type" by element index ran as a focusing tap plus the typing: record both.
        extra = {"screen_actions": [a.to_json() for a in self.screen_actions]} if self.screen_actions else {}
        shared = {name: getattr(self, name) for name in StepFields.model_fields}
        return StepRecord(
            **shared,
            action_screen=screen.to_json() if screen is not None else None,
            action_result=result.model_dump(mode="json") if result is not None else None,
            notes=notes,
            timings_ms=timings.as_ms(),
            **extra,
        )


#: The classes the checkpointer may rebuild from a checkpoint (module, name): the state's only
#: non-JSON value is the :class:`Step`, whose nested actions and verdict travel as plain data.
CHECKPOINT_TYPES = ((Step.__module__, Step.__name__),)


class AgentState(TypedDict, total=False):
    task: str
    """The user instruction ``I``."""
    graph: str
    """The graph kind playing now: ``mobile_agent_v3``, ``hi_agent`` or ``single`` (``auto``
    starts with ``single`` and turns into ``mobile_agent_v3`` when it escalates)."""
    escalate: bool
    """Whether the run may still escalate to the multi-agent graph (``auto`` until it does)."""
    escalated_at: int | None
    """The step at which an ``auto`` run handed over to the multi-agent graph."""
    handover: list[str]
    """What the single model did before an ``auto`` run escalated, for the Manager's first plan."""
    platform: str
    """``mobile`` or ``desktop`` — which actions the Worker may use."""
    max_steps: int
    """The step budget ``T_max`` (lives in state so a resumed run keeps it)."""
    step: int
    """Index of the next step to execute; equals the number of steps taken."""
    screen: str | None
    """Ref of the current observation in the run directory."""
    knowledge: str
    """``K_RAG``, retrieved once before the first plan."""
    planned: bool
    """Whether the Manager's first plan exists (selects init vs update)."""
    thought: str
    """The Manager's latest thought."""
    plan: list[str]
    """Pending subgoals ``SS_t``, in order."""
    completed: list[str]
    """Completed subgoals ``CS_t`` (Historical Operations), newest first."""
    notes: list[dict[str, Any]]
    """The NoteStore ``N_t`` (see :mod:`agent_runtime.roles.notes`)."""
    history: list[HistoryItem]
    """Recent steps, oldest first (bounded); the Worker sees the last five."""
    turns: list[dict[str, Any]]
    """The single model's parsed replies under an official model profile, oldest first:
    ``{"step", "screen", "reply", "summary"}`` (its multi-turn layout resends them)."""
    info_pool: dict[str, str]
    """Mobile-Agent-v3's InfoPool texts when its roles run under the ``gui-owl`` profile
    (:mod:`agent_runtime.graphs.official`): the plan and historical operations as the Manager wrote
    them, the progress status and the important notes, in the official flattened forms."""
    failures: int
    """Consecutive failed steps (Reflector B/C or format failures)."""
    repeats: int
    """How many times in a row the Worker chose the same (non-exempt) action."""
    last_action_key: str
    """Canonical JSON of the last action, for repeat detection."""
    pending: Step | None
    """The step in progress: filled by act → execute → reflect, committed by plan or finish."""
    status: EndStatus | None
    """Set by the node that ends the run."""
    request: dict[str, Any] | None
    """The :class:`~agent_runtime.control.InputRequest` (JSON) a person is asked next: the
    ``human`` node raises it with ``interrupt()`` (or decides at once when no one attends)."""
    answers: list[dict[str, Any]]
    """The user's answers to the agent's questions: ``{"step", "question", "answer"}``."""
    interventions: int
    """How many requests the run has made of a person (numbers the next request's id)."""
    refused_effects: list[str]
    """Effects the person refused (``"open Clock"``, ``"buy"``): the same effect by any route is
    refused again for the rest of the run (:attr:`~agent_runtime.safety.Assessment.effects`)."""
    contacts_at_start: dict[str, Any] | None
    """The device's :class:`~agent_runtime.device.AddressBook` (JSON) when the run started: a
    contact whose number changed since is not trusted as a recipient (None: the device cannot
    say)."""
    success: bool | None
    answer: str | None
    reason: str
    """Why the run ended, in words."""
