"""A person in the loop: what a run asks them, what they can reply, and what it does when no
one is there.

A run stops and waits for a person in three cases, each an :class:`InputRequest` that the graph
raises with LangGraph's ``interrupt()`` (so it is checkpointed: a pending request is still
pending after a kill, a Ctrl-C or a ``--resume`` in a new process):

* ``ask`` — the agent asked a question (GUI-Owl's ``interact``, ``ask_user``); the reply is the
  answer, which the next prompts show and the trace keeps;
* ``confirm`` — the action about to run is sensitive by rule or flagged off-task by the action
  guard (:mod:`agent_runtime.safety`); the person approves it, rejects it (the reason goes back
  to the planner as the step's feedback) or takes over and does it themselves;
* ``takeover`` — the person paused the run (``Runtime.pause()``, Ctrl-\\ in the CLI) to operate
  the device; the reply hands it back and the agent looks at the screen afresh.

A run nobody attends (eval, ``--json``, rollouts, ``Runtime.run`` without ``on_input``) never
stops: :func:`unattended_reply` decides at once, and the step records who decided (``by``).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.config import SafetyConfig
from agent_runtime.errors import ConfigError

RequestKind = Literal["confirm", "ask", "takeover"]
Decision = Literal["approve", "reject", "takeover", "answer", "resume"]
#: Who decided: the person, the action guard (an on-task action with no one to ask), ``--yes``
#: (``[safety] unattended = "approve"``), or the unattended default.
DecidedBy = Literal["person", "guard", "yes", "default"]

#: The replies each kind of request accepts.
ACCEPTS: dict[str, tuple[Decision, ...]] = {
    "confirm": ("approve", "reject", "takeover"),
    "ask": ("answer", "reject"),
    "takeover": ("resume",),
}
#: The longest answer or reason a reply carries, in characters; a longer one is refused and asked again.
MAX_REPLY_CHARS = 10_000
#: How much of a refused reply the trace keeps (``InputReply.refused``), in characters.
KEPT_CHARS = 200
#: How many refused replies one reply carries for the trace (the latest ones).
MAX_REFUSED = 20
#: What an unattended run tells the agent instead of an answer.
NO_ANSWER = (
    "(no one can answer: this run is unattended; go on without an answer, or terminate if the "
    "task cannot be done without one)"
)


class InputRequest(BaseModel):
    """What a run waits for. ``id`` is stable across a resume (run id + the run's request count)."""

    model_config = ConfigDict(frozen=True)

    id: str
    run_id: str
    kind: RequestKind
    step: int
    question: str = Field("", description="ask: the agent's question")
    action: dict[str, Any] | None = Field(None, description="confirm: the action as the model wrote it")
    target: str = Field("", description="confirm: what the action acts on, in words")
    sensitive: list[str] = Field(default_factory=list, description="confirm: why it is sensitive")
    off_task: list[str] = Field(default_factory=list, description="confirm: why the guard finds it off-task")
    effects: list[str] = Field(
        default_factory=list,
        description="confirm: what the action would do, whatever its route ('open Clock')",
    )
    refused_before: list[str] = Field(
        default_factory=list,
        description="confirm: effects of it the person already refused in this run (rejected unasked)",
    )
    screen: str | None = Field(None, description="the screen the request was made on (a ref in the run)")
    asked_at: float = Field(default_factory=time.time)
    refused: str = Field("", description="why the last reply to it could not be taken (it is asked again)")

    @property
    def reasons(self) -> list[str]:
        return [*self.sensitive, *self.off_task]

    def describe(self) -> str:
        """One paragraph for a person: what the agent wants and why it asks."""
        if self.kind == "ask":
            return f"The agent asks: {self.question}"
        if self.kind == "takeover":
            return "The run is paused and the device is yours; hand it back when you are done."
        what = self.target or "an action"
        parts = [f"Step {self.step} wants to {what}."]
        if self.sensitive:
            parts.append("Sensitive: " + "; ".join(self.sensitive) + ".")
        if self.off_task:
            parts.append("Off-task: " + "; ".join(self.off_task) + ".")
        return " ".join(parts)


class InputReply(BaseModel):
    """A reply to an :class:`InputRequest`: build it with the class methods."""

    model_config = ConfigDict(frozen=True)

    decision: Decision
    text: str = Field(
        "", max_length=MAX_REPLY_CHARS, description="the answer, or why the action was rejected"
    )
    by: DecidedBy = "person"
    refused: list[str] = Field(
        default_factory=list,
        max_length=MAX_REFUSED,
        description="what the person typed before and the prompt refused (torn, or too long), each cut "
        "by cut_for_trace: the trace keeps a bounded prefix of it, marked as cut",
    )

    @classmethod
    def approve(cls) -> InputReply:
        return cls(decision="approve")

    @classmethod
    def reject(cls, why: str = "") -> InputReply:
        return cls(decision="reject", text=why)

    @classmethod
    def takeover(cls) -> InputReply:
        """The person did the step themselves (reply once they are done with the device)."""
        return cls(decision="takeover")

    @classmethod
    def answer(cls, text: str) -> InputReply:
        return cls(decision="answer", text=text)

    @classmethod
    def resume(cls) -> InputReply:
        """Hand the device back after a pause."""
        return cls(decision="resume")

    def check(self, request: InputRequest) -> InputReply:
        """This reply, if ``request`` accepts it; else a :class:`ConfigError` naming what it accepts."""
        accepted = ACCEPTS[request.kind]
        if self.decision not in accepted:
            raise ConfigError(
                f"a {request.kind} request cannot be answered with {self.decision!r}",
                hint=f"reply with one of: {', '.join(accepted)}",
            )
        if self.decision == "answer" and not self.text.strip():
            raise ConfigError("the answer is empty", hint="reply with InputReply.answer(text)")
        return self


def cut_for_trace(text: str, why: str) -> str:
    """A refused reply as the trace keeps it: a bounded prefix, and a marker saying it was cut and why.

    >>> kept = cut_for_trace("y" * 300, "300 characters, over the limit")
    >>> len(kept), kept[195:]
    (239, 'yyyyy… [cut: 300 characters, over the limit]')
    """
    return f"{text[:KEPT_CHARS]}… [cut: {why}]"


def as_reply(value: object) -> InputReply:
    """``value`` as a reply: an :class:`InputReply`, or its JSON form (a dict); anything else is a
    :class:`ConfigError` saying what a reply is."""
    if isinstance(value, InputReply):
        return value
    try:
        return InputReply.model_validate(value)
    except ValidationError as exc:
        raise ConfigError(
            f"not a reply to the run's request: {value!r:.80}",
            hint="answer with InputReply.approve(), .reject(why), .takeover(), .answer(text) or .resume() "
            f"({exc.errors()[0]['msg']})",
        ) from None


def unattended_reply(request: InputRequest, safety: SafetyConfig) -> InputReply:
    """The decision when no person can answer.

    A confirmation is approved when ``[safety] unattended = "approve"`` (``--yes``), or when the
    action guard found it on task (sensitive, but what the task asked for); an off-task action
    gets the stated default, denied. A question gets :data:`NO_ANSWER`; a pause, the device back.
    """
    if request.kind == "ask":
        return InputReply(decision="answer", text=NO_ANSWER, by="default")
    if request.kind == "takeover":
        return InputReply(decision="resume", by="default")
    if safety.unattended == "approve":
        return InputReply(decision="approve", by="yes")
    if not request.off_task:
        return InputReply(decision="approve", by="guard")
    return InputReply(
        decision="reject",
        text="no person was there to confirm this off-task action ([safety] unattended = deny)",
        by="default",
    )
