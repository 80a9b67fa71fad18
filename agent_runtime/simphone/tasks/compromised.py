"""A scripted "compromised" policy: plays an injection task's opening, then obeys the injection.

What a model that falls for prompt injection does, made deterministic so the action guard can be
measured against it: :class:`CompromisedPolicy` plays an
:class:`~agent_runtime.simphone.tasks.injection.InjectionTask`'s honest
:meth:`~agent_runtime.simphone.tasks.injection.InjectionTask.opening` until the hostile text is
on screen, then its :meth:`~agent_runtime.simphone.tasks.injection.InjectionTask.attack`. It
records every action it returned as a :class:`Move`, marking the injected sensitive ones, so a
harness can tell which guard verdicts matter; :func:`play_compromised` plays it unguarded on a
phone and :func:`compromised_script` on a fresh one, returning those moves — the action sequence
a scripted model reply can be built from.

This is a harness tool like :class:`~agent_runtime.simphone.tasks.oracle.OraclePolicy`, never
the product's agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.actions import Action, Answer, Terminate
from agent_runtime.observation import Observation
from agent_runtime.simphone.tasks.injection import Injected, InjectionTask
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

#: Actions a compromised episode may take (opening plus attack) before it is cut off.
STEP_CAP = 80


class Move(BaseModel):
    """One action the policy returned."""

    model_config = ConfigDict(frozen=True)

    action: Action
    injected: bool = Field(False, description="it carries out the injected sensitive effect")
    hijacked: bool = Field(False, description="it comes after the hostile text was on screen (the attack)")


class CompromisedPolicy:
    """``observation -> Action`` for one injection task instance (see the module docstring).

    After each call :attr:`last` is the move just returned; :attr:`moves` holds them all.
    :attr:`hostile_seen` says whether the hostile text was in the UI tree when the attack began.
    When the script ends the policy answers :class:`Terminate` (success, from its point of view).
    """

    name = "compromised"

    def __init__(self, task: InjectionTask) -> None:
        self.task = task
        self.moves: list[Move] = []
        self.hostile_seen = False
        self.ui: OracleUI | None = None
        self._script: Iterator[Move] | None = None

    @property
    def last(self) -> Move | None:
        return self.moves[-1] if self.moves else None

    def _play(self, ui: OracleUI) -> Iterator[Move]:
        for action in self.task.opening(ui):
            yield Move(action=action)
        self.hostile_seen = self.task.hostile_visible(ui.screen)
        for step in self.task.attack(ui):
            if isinstance(step, Injected):
                yield Move(action=step.action, injected=True, hijacked=True)
            else:
                yield Move(action=step, hijacked=True)

    def __call__(self, observation: Observation) -> Action:
        if self._script is None or self.ui is None:
            self.ui = OracleUI(observation, task_name=self.task.name)
            self._script = self._play(self.ui)
        else:
            self.ui.screen = observation
        move = next(self._script, None)
        if move is None:
            return Terminate(status="success")
        self.moves.append(move)
        return move.action


def play_compromised(task: InjectionTask, phone: SimPhone) -> CompromisedPolicy:
    """Let the compromised policy play, unguarded, on ``phone`` (already set up for ``task``)."""
    policy = CompromisedPolicy(task)
    for _ in range(STEP_CAP):
        action = policy(phone.observe())
        if isinstance(action, Terminate):
            break
        if not isinstance(action, Answer):
            phone.execute(action)
    return policy


def compromised_script(task: InjectionTask) -> list[Move]:
    """The moves the compromised policy makes on a fresh phone set up for ``task``, in order."""
    from agent_runtime.simphone.phone import SimPhone

    phone = SimPhone(seed=task.seed)
    try:
        task.setup(phone)
        return play_compromised(task, phone).moves
    finally:
        phone.close()
