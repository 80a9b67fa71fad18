"""The typed output of each role — the contract between parsers, the graph, traces and trainers.

Each role's parser (``agent_runtime/roles/<role>.py``) turns model text into one of these or raises
:class:`~agent_runtime.errors.ParseError`. Formats follow Mobile-Agent-v3 / GUI-Owl, so released
GUI-Owl checkpoints work unmodified.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_runtime.actions import Action
from agent_runtime.traces import Verdict


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True)


class ManagerOutput(_Output):
    """Manager: the plan. ``finished`` is True only when the plan says Finished; an unfinished
    plan always has a subgoal (an empty plan is a parse error, not a finished task)."""

    thought: str = ""
    completed: list[str] = Field(default_factory=list, description="Historical Operations, newest first")
    plan: list[str] = Field(default_factory=list, description="pending subgoals, in order")
    finished: bool = False

    @model_validator(mode="after")
    def _plan_or_finished(self) -> ManagerOutput:
        """The type rules out reading an empty plan as Finished, whoever builds the output."""
        if self.finished and self.plan:
            raise ValueError("a finished plan has no subgoals left")
        if not self.finished and not self.plan:
            raise ValueError("an unfinished plan needs at least one subgoal")
        return self

    @property
    def current_subgoal(self) -> str:
        return self.plan[0] if self.plan else ""


class WorkerOutput(_Output):
    """Worker: one action in the *model's* coordinate space, plus why and what it should do."""

    thought: str = ""
    action: Action
    raw_action: dict = Field(
        default_factory=dict, description="the action object exactly as the model wrote it"
    )
    description: str = ""


class SubgoalOutput(_Output):
    """Hi-Agent's high level: why, and the next subgoal instruction for the low level."""

    reasoning: str = ""
    instruction: str = Field(min_length=1)


class Outcome(StrEnum):
    """Reflector verdicts: A success/partial, B wrong page (go back), C no change."""

    A = "A"
    B = "B"
    C = "C"


class ReflectorOutput(_Output):
    outcome: Outcome
    error_description: str = ""

    @property
    def success(self) -> bool:
        return self.outcome is Outcome.A

    @property
    def verdict(self) -> Verdict:
        """The judgement in the shape the graph, the traces and the events share."""
        return Verdict.of(self.outcome.value, self.error_description, source="reflector")


class NotetakerOutput(_Output):
    """The full updated notes (they replace the previous ones)."""

    notes: str = ""


class RagOutput(_Output):
    """RAG: the queries asked and the summarised knowledge handed to the Manager's first plan."""

    queries: list[str] = Field(default_factory=list)
    knowledge: str = ""
    sources: list[str] = Field(default_factory=list)


RoleOutput = ManagerOutput | WorkerOutput | ReflectorOutput | NotetakerOutput | RagOutput
