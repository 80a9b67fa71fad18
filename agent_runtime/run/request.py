"""What a run is asked to do: a new task (:class:`NewRun`) or a resume (:class:`ResumeRun`).

:class:`~agent_runtime.runtime.Runtime`'s ``run``/``stream``/``resume``/``stream_resume`` each
build one; the rest of the run reads its fields by name, so a request cannot carry an option
its kind of run does not take (a resume has no task, a new run no reply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_runtime.control import InputReply, InputRequest
from agent_runtime.device import Device

#: Answers a person's requests for a run: called with the request, returns the reply.
OnInput = Callable[[InputRequest], InputReply]


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What every run is asked with: where it plays and who attends it."""

    #: A Device (the caller keeps it), a spec like ``simphone:3``, or None for the configured one.
    device: Device | str | None = None
    #: Answers the run's requests of a person as they come (``run``/``resume``).
    on_input: OnInput | None = None
    #: A person attends an event stream and answers with ``Runtime.respond``.
    interactive: bool = False

    @property
    def attended(self) -> bool:
        """Whether a person can answer the run's requests (else they are settled unattended)."""
        return self.interactive or self.on_input is not None


@dataclass(frozen=True, kw_only=True)
class NewRun(RunRequest):
    """A new run of ``task``."""

    task: str
    #: The step limit; None: the configuration's ``[graph] max_steps``.
    max_steps: int | None = None


@dataclass(frozen=True, kw_only=True)
class ResumeRun(RunRequest):
    """Continue run ``run_id`` from its last checkpoint."""

    run_id: str
    #: The answer to the request the run waits for, if it waits.
    reply: InputReply | None = None
