"""An in-process chat model that plays every role from SimPhone's oracle, inside the real graph.

Demonstrations are ordinary runs of :class:`~agent_runtime.runtime.Runtime`: the graph builds
each prompt and :class:`~agent_runtime.roles.caller.RoleCaller` records each call, exactly as in
any other run. Only the replies come from here — the *ideal* reply for each role, read off the
expert's :class:`~agent_runtime.trainers.demos.plans.ExpertPlan` and the live phone:

* Manager: the subgoal plan first, then after every step the updated Historical Operations and
  remaining plan (``Finished`` at the end);
* Worker: thought, the expert's action (element-index form in ``ui_tree``/``both`` mode), and a
  description naming the element;
* Reflector: ``A`` for actions that did what they should, and — with ``perturb`` P — realistic
  failures: with probability P the Worker takes a wrong action instead (``C``: nothing changed;
  ``B``: a wrong page, after which the ideal Worker goes Back) and then the expert recovers;
* Notetaker: the notes so far plus what later steps need (entered text, the answer on screen).

Some calls are played but must not be learnt: the Worker's wrong action (a wrong action must
never become a Worker target), Manager updates left out by ``update_share``, and the roles a
demonstration does not teach. Their replies carry ``not_a_target`` with the reason, which the
caller keeps in the record's ``extra`` and :mod:`agent_runtime.trainers.data.samples` skips.

One :class:`OracleEpisode` holds an episode's bookkeeping; the graph calls the Notetaker beside
the Reflector, so every reply is computed under a lock from state keyed by the call's step.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from agent_runtime.actions import Action, SystemButton
from agent_runtime.config import ModelConfig
from agent_runtime.coords import Size
from agent_runtime.device import Device, DeviceInfo
from agent_runtime.errors import ConfigError
from agent_runtime.observation import Observation
from agent_runtime.roles.caller import RECORD_LABELS
from agent_runtime.roles.notes import NoteStore
from agent_runtime.trainers.data.samples import NOT_A_TARGET
from agent_runtime.trainers.data.worker_prompts import format_worker_reply
from agent_runtime.trainers.demos.plans import ExpertPlan, check_in_sync, find_mistake

if TYPE_CHECKING:
    from agent_runtime.actions import ActionResult
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import Task

ORACLE_MODEL = "simphone-oracle"
ROLES = ("manager", "worker", "reflector", "notetaker")
_BACK = SystemButton(button="Back").to_json()
_SPACE = re.compile(r"\s+")


class RecordingDevice(Device):
    """A SimPhone that remembers what the graph executed and what it saw after each step.

    The oracle needs both without touching the phone itself: a wrong action is searched on a
    replica with the executed actions replayed, and the Notetaker of step *k* — which may run
    late, beside the Reflector — reads the screen that followed step *k*, not the current one.
    """

    kind: ClassVar[str] = "simphone"

    def __init__(self, phone: SimPhone) -> None:
        self.phone = phone
        self.executed: list[Action] = []
        self.afters: list[Observation] = []
        self.current: Observation | None = None
        self._moved = False

    @property
    def screen_size(self) -> Size:
        return self.phone.screen_size

    def observe(self) -> Observation:
        obs = self.phone.observe()
        if self._moved:  # the first look after a step's actions is that step's after-screen
            self.afters.append(obs)
            self._moved = False
        self.current = obs
        return obs

    def execute(self, action: Action) -> ActionResult:
        self._moved = True
        self.executed.append(action)
        return self.phone.execute(action)

    def info(self) -> DeviceInfo:
        return self.phone.info()


@dataclass
class _Move:
    """One action the oracle's Worker took, and what the other roles make of it."""

    raw: dict[str, Any]
    description: str
    outcome: Literal["A", "B", "C"]
    closes_subgoal: bool
    target: bool
    notes_before: list[dict[str, Any]]
    notes: str | None = None


class OracleEpisode:
    """The ideal replies of one episode (see the module doc), in the order the graph asks."""

    def __init__(
        self,
        task: Task,
        plan: ExpertPlan,
        device: RecordingDevice,
        *,
        mode: str,
        model: ModelConfig,
        perturb: float,
        roles: tuple[str, ...],
        update_share: float,
    ) -> None:
        self.task = task
        self.plan = plan
        self.device = device
        self.mode = mode
        self.model = model
        self.perturb = perturb
        self.roles = roles
        self.update_share = update_share
        self.rng = random.Random(f"demo/{task.name}/{task.seed}/{perturb}")
        self.keep_rng = random.Random(f"keep/{task.name}/{task.seed}/{update_share}")
        self.perturbed = 0
        self.calls: Counter[str] = Counter()
        self._next = 0  # index of the planned step the Worker takes next
        self._drawn = False  # whether that step's chance of a mistake was drawn already
        self._back_next = False
        self._subgoals: list[str] = []
        self._completed: list[str] = []
        self._notes = NoteStore()
        self._moves: dict[int, _Move] = {}
        self._lock = threading.Lock()

    def reply(self, role: str, step: int) -> tuple[str, dict[str, Any]]:
        """``(completion, labels for the call record)`` for ``role``'s call at ``step``."""
        with self._lock:
            if role == "manager":
                text, why = self._manager(step)
            elif role == "worker":
                text, why = self._worker(step)
            elif role == "reflector":
                text, why = self._reflector(step)
            elif role == "notetaker":
                text, why = self._notetaker(step)
            else:
                raise ConfigError(f"the SimPhone oracle plays no {role!r} role", hint=f"roles: {ROLES}")
            if role not in self.roles:
                why = f"the {role} is not demonstrated"
            if why:
                return text, {"demonstration": True, NOT_A_TARGET: why}
            self.calls[role] += 1
            return text, {"demonstration": True}

    # -- roles ------------------------------------------------------------------------------------
    def _manager(self, step: int) -> tuple[str, str]:
        if step < 0:
            # One line each: a plan item is one line of the reply, and the graph hands the Worker
            # what it parses from the reply (a typed "line\nbreak" would come back joined).
            self._subgoals = [_SPACE.sub(" ", s).strip() for s in self.plan.subgoals]
            n = len(self._subgoals)
            thought = f'To complete "{self.task.goal}", work through {n} subgoal(s) in order.'
            return f"### Thought ###\n{thought}\n\n### Plan ###\n{_numbered(self._subgoals)}\n", ""
        move = self._moves[step]
        if move.outcome == "A" and move.notes:
            self._notes.merge(move.notes, step)
        closes = move.outcome == "A" and move.closes_subgoal
        if closes and self._subgoals:
            self._completed = [self._subgoals.pop(0), *self._completed]
        history = "\n".join(f"- {c}" for c in self._completed) or "None"
        text = (
            f"### Thought ###\n{_update_thought(move.outcome, move.description, closes)}\n\n"
            f"### Historical Operations ###\n{history}\n\n### Plan ###\n{_numbered(self._subgoals)}\n"
        )
        # Drawn only for a demonstrated Manager, so the kept share does not depend on the roles.
        left_out = "manager" in self.roles and self.keep_rng.random() >= self.update_share
        return text, "a Manager update left out by update_share" if left_out else ""

    def _worker(self, step: int) -> tuple[str, str]:
        obs = self.device.current
        assert obs is not None  # the graph looks at the screen before the Worker acts
        if self._back_next:
            self._back_next = False
            move = self._move(_BACK, "Go back to the previous screen.")
        else:
            move = self._expert_or_mistake(obs)
        self._moves[step] = move
        previous = self._moves.get(step - 1)
        failed = previous is not None and previous.outcome != "A"
        retry = " The previous attempt failed, so I correct course." if failed else ""
        subgoal = self._subgoals[0] if self._subgoals else self.task.goal
        target = _target(obs, move.raw)
        thought = f'The current subgoal is "{subgoal}".{retry}{target} Next: {move.description}'
        text = format_worker_reply(thought, move.raw, move.description)
        return text, "" if move.target else "a wrong action (perturbation) is never a Worker target"

    def _expert_or_mistake(self, obs: Observation) -> _Move:
        planned = self.plan.steps[self._next]
        check_in_sync(planned, obs, self.task)
        if not self._drawn and planned.kind != "answer" and self.rng.random() < self.perturb:
            self._drawn = True
            mistake = find_mistake(
                self.task, self.device.executed, obs, self.mode, self.model, planned.screen, self.rng
            )
            if mistake is not None:
                self.perturbed += 1
                self._back_next = mistake.outcome == "B"
                return self._move(mistake.raw, mistake.description, mistake.outcome, target=False)
        self._next += 1
        self._drawn = False
        return self._move(planned.raw, planned.description, closes=planned.closes_subgoal)

    def _move(
        self,
        raw: dict[str, Any],
        description: str,
        outcome: Literal["A", "B", "C"] = "A",
        *,
        closes: bool = False,
        target: bool = True,
    ) -> _Move:
        # The notes as they stand before this step: its Notetaker starts from them, however late.
        return _Move(raw, description, outcome, closes, target, self._notes.to_state())

    def _reflector(self, step: int) -> tuple[str, str]:
        move = self._moves[step]
        feedback = _feedback(move.outcome, move.description) if move.outcome != "A" else "None"
        return f"### Outcome ###\n{move.outcome}\n\n### Error Description ###\n{feedback}\n", ""

    def _notetaker(self, step: int) -> tuple[str, str]:
        move = self._moves[step]
        notes = NoteStore.from_state(move.notes_before)
        notes.merge("\n".join(_new_notes(self.task, self.device.afters[step], move.raw)), step)
        move.notes = notes.render()
        return f"### Important Notes ###\n{move.notes or 'None'}\n", ""


class OracleChatModel(BaseChatModel):
    """One role of an :class:`OracleEpisode` as a LangChain chat model (what Runtime calls)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    episode: OracleEpisode
    role: str
    model_name: str = ORACLE_MODEL

    @property
    def _llm_type(self) -> str:
        return "simphone-oracle"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # RoleCaller names the step of every call in the run metadata (the Notetaker of a step
        # may be answered after the next step began).
        meta = (run_manager.metadata if run_manager else None) or {}
        text, labels = self.episode.reply(self.role, int(meta.get("agent_runtime_step", -1)))
        message = AIMessage(
            content=text, response_metadata={"model_name": ORACLE_MODEL, RECORD_LABELS: labels}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def oracle_models(episode: OracleEpisode) -> dict[str, OracleChatModel]:
    """The chat model per role for ``Runtime(models=...)``."""
    return {role: OracleChatModel(episode=episode, role=role) for role in ROLES}


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {p}" for i, p in enumerate(items, 1)) or "Finished"


def _target(obs: Observation, raw: dict[str, Any]) -> str:
    """`` Target: LABEL [i].`` for an element-index action: the row as the compact tree writes it,
    so the model names the element first and then copies the index that follows it there."""
    index = raw.get("index")
    if not isinstance(index, int) or not 0 <= index < len(obs.elements):
        return ""
    label = obs.elements[index].label
    return f" Target: {label} [{index}]." if label else f" Target: [{index}]."


def _update_thought(outcome: str, description: str, closes: bool) -> str:
    what = description.rstrip(".")
    if outcome == "B":
        return f"The last action ({what}) opened the wrong screen; go back and retry the subgoal."
    if outcome == "C":
        return f"The last action ({what}) changed nothing; retry the current subgoal differently."
    if closes:
        return "The last action completed the current subgoal; move on to the next one."
    return "The last action succeeded; the current subgoal is still in progress."


def _feedback(outcome: str, description: str) -> str:
    what = description.rstrip(".")
    if outcome == "B":
        return f"{what} led to a wrong page that does not help the current subgoal; go back."
    return f"{what} produced no change on the screen."


def _new_notes(task: Task, after: Observation, raw: dict[str, Any]) -> list[str]:
    """What a later step needs from this one: text entered, the answer when it is on screen."""
    notes = []
    if raw.get("action") == "type" and raw.get("text"):
        notes.append(f'Entered "{raw["text"]}"')
    expected = task.expected_answer() if task.answer_task else None
    if expected:
        want = _SPACE.sub(" ", expected).casefold()
        for el in after.elements:
            if el.label and want in _SPACE.sub(" ", el.label).casefold():
                notes.append(f"On screen: {el.label}")
                break
    return notes
