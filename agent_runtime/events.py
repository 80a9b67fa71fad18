"""Typed events a run streams while it works: what the CLI renders and ``Runtime.stream`` yields.

Every graph node emits events as it goes; the runtime adds :class:`RunStarted` and
:class:`RunFinished`. Events are monitoring only — nothing steers control flow by them, so a
consumer that ignores them loses nothing (the traces hold the full record).
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agent_runtime.control import InputRequest
from agent_runtime.traces import Verdict, VerdictSource


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    time: float = Field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    run_id: str
    task: str
    run_dir: str
    device: str
    resumed: bool = False


class Notice(_Event):
    """Something the user should know that is not an error (retrieval skipped, run resumed)."""

    type: Literal["notice"] = "notice"
    message: str
    level: Literal["info", "warning"] = "info"


class StepStarted(_Event):
    type: Literal["step_started"] = "step_started"
    step: int
    subgoal: str


class RoleOutputEvent(_Event):
    """A role answered: its parsed output, or the parse error after every re-ask failed."""

    type: Literal["role_output"] = "role_output"
    step: int
    role: str
    output: dict[str, Any] | None = None
    error: str | None = None
    attempts: int = 1
    latency_ms: float = 0.0


class ActionExecuted(_Event):
    type: Literal["action_executed"] = "action_executed"
    step: int
    action: dict[str, Any] = Field(description="as the model wrote it (model coordinates)")
    action_screen: dict[str, Any] = Field(description="as executed (screen pixels)")
    ok: bool
    message: str = ""
    duration_ms: float = 0.0


class VerdictEvent(_Event):
    """A step was judged: the fields of its :class:`~agent_runtime.traces.Verdict`, kept flat so
    the event stream reads the same as before the verdict had a type of its own."""

    type: Literal["verdict"] = "verdict"
    step: int
    outcome: Literal["A", "B", "C"]
    success: bool
    feedback: str = ""
    #: What reached it (:class:`~agent_runtime.traces.Verdict`'s ``source``): ``screen_diff``
    #: is only whether the screen changed, not a judgement of the action.
    source: VerdictSource | None = None

    @classmethod
    def of(cls, step: int, verdict: Verdict) -> VerdictEvent:
        return cls(
            step=step,
            outcome=verdict.outcome,
            success=verdict.success,
            feedback=verdict.feedback,
            source=verdict.source,
        )


class NotesEvent(_Event):
    """The speculative Notetaker finished: ``used`` is False when the step failed (discarded)."""

    type: Literal["notes"] = "notes"
    step: int
    added: list[str] = Field(default_factory=list)
    notes: str = ""
    used: bool = True


class InputRequested(_Event):
    """The run waits for a person: answer with ``Runtime.respond(request.id, reply)`` before
    taking the next event (an interactive stream), or the run ends with status ``waiting`` and
    ``Runtime.resume(run_id, reply=...)`` continues it later."""

    type: Literal["input_requested"] = "input_requested"
    request: InputRequest


class InputAnswered(_Event):
    """A request was settled: by the person, or — in a run no one attends — by the guard or the
    stated default (``by``)."""

    type: Literal["input_answered"] = "input_answered"
    request_id: str
    kind: str
    decision: str
    by: str


class RunFinished(_Event):
    type: Literal["run_finished"] = "run_finished"
    run_id: str
    status: str
    success: bool
    answer: str | None = None
    steps: int = 0
    reason: str = ""
    run_dir: str = ""
    error: dict[str, Any] | None = None


Event = Annotated[
    RunStarted
    | Notice
    | StepStarted
    | RoleOutputEvent
    | ActionExecuted
    | VerdictEvent
    | NotesEvent
    | InputRequested
    | InputAnswered
    | RunFinished,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

__all__ = [
    "EVENT_ADAPTER",
    "ActionExecuted",
    "Event",
    "InputAnswered",
    "InputRequested",
    "Notice",
    "NotesEvent",
    "RoleOutputEvent",
    "RunFinished",
    "RunStarted",
    "StepStarted",
    "VerdictEvent",
]
