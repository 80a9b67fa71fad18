"""The checkpointed state of a Mobile-Agent-v3 run.

Everything here is plain JSON-like data, so LangGraph's SQLite checkpointer can store it and a
killed run can resume in a new process. Observations are *not* state: the state holds screen refs
(``screens/0003.png`` in the run directory); the live :class:`~agent_runtime.observation.Observation`
objects sit in the run context's cache, and after a resume the device is simply observed again.
Every node returns a partial update; no channel has a reducer, the last write wins.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

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


class AgentState(TypedDict, total=False):
    task: str
    """The user instruction ``I``."""
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
    failures: int
    """Consecutive failed steps (Reflector B/C or format failures)."""
    repeats: int
    """How many times in a row the Worker chose the same (non-exempt) action."""
    last_action_key: str
    """Canonical JSON of the last action, for repeat detection."""
    pending: dict[str, Any] | None
    """The step in progress: filled by act → execute → reflect, committed by plan or finish."""
    status: EndStatus | None
    """Set by the node that ends the run."""
    success: bool | None
    answer: str | None
    reason: str
    """Why the run ended, in words."""
