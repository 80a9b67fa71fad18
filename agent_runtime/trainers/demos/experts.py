"""Expert demonstrations: SimPhone's oracle plays tasks; each step becomes an action-only record.

An :class:`ExpertStep` is (observation, goal, expert action) — the screenshot stored once by hash
under the output directory, the action in screen pixels, and the *target element* the action
touched (its bounds decide whether a model's click "matches" in IRR). Only episodes the task
judges successful are kept: a demonstration that fails teaches the wrong thing.

Actions carry no reasoning; :mod:`agent_runtime.trainers.irr_trainer` bootstraps it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agent_runtime.actions import Action, ActionResult
from agent_runtime.coords import Size
from agent_runtime.observation import Observation, UIElement
from agent_runtime.roles.worker import HistoryEntry
from agent_runtime.trainers.data.worker_prompts import PromptSettings, worker_messages

if TYPE_CHECKING:
    from agent_runtime.simphone.tasks import Task

EXPERTS_FILE = "experts.jsonl"
TOUCH_ACTIONS = ("click", "long_press", "double_click", "right_click", "middle_click")


class ExpertStep(BaseModel):
    """One expert action at one state."""

    task_name: str
    seed: int
    goal: str
    step: int
    root: str = Field(description="directory the screen ref resolves against")
    screen_ref: str
    screen: Size
    action: dict[str, Any] = Field(description="screen pixels, JSON form")
    target_bounds: tuple[int, int, int, int] | None = Field(None, description="element the action touched")
    description: str = ""
    history: list[HistoryEntry] = Field(default_factory=list, description="earlier steps of the episode")

    @property
    def image_root(self) -> str:
        return self.root

    def messages(self, settings: PromptSettings) -> list[dict[str, Any]]:
        """The Worker prompt at this state, as a recorded call."""
        return worker_messages(self.goal, self.screen_ref, self.screen, settings, history=self.history)


def target_element(elements: list[UIElement], x: float, y: float) -> UIElement | None:
    """The smallest actionable element under a point (what a tap there activates)."""
    hits = [e for e in elements if e.actionable and e.bounds.area > 0 and e.bounds.contains(x, y)]
    return min(hits, key=lambda e: e.bounds.area) if hits else None


def element_label(elements: list[UIElement], el: UIElement) -> str:
    """The element's own label, else the first label among its descendants."""
    if el.label:
        return el.label
    inside = {el.index}
    for other in elements[el.index + 1 :]:
        if other.parent not in inside:
            break
        inside.add(other.index)
        if other.label:
            return other.label
    return ""


def describe_action(action: dict[str, Any], elements: list[UIElement]) -> str:
    """A short description of a screen-pixel action, naming the element it touches.

    >>> describe_action({"action": "system_button", "button": "Back"}, [])
    'Press the Back button.'
    """
    kind = action.get("action")
    point = action.get("coordinate")
    if kind in TOUCH_ACTIONS and point is not None:
        el = target_element(elements, *point)
        label = element_label(elements, el) if el is not None else ""
        verb = "Long-press" if kind == "long_press" else "Tap"
        return f'{verb} "{label}".' if label else f"{verb} the screen at {tuple(point)}."
    if kind == "swipe" and point is not None and action.get("coordinate2") is not None:
        (x1, y1), (x2, y2) = point, action["coordinate2"]
        if abs(y2 - y1) >= abs(x2 - x1):
            return "Swipe up to scroll down." if y2 < y1 else "Swipe down to scroll up."
        return "Swipe left." if x2 < x1 else "Swipe right."
    if kind == "type":
        return f'Type "{action.get("text", "")}".'
    if kind == "open_app":
        return f"Open the {action.get('text', '')} app."
    if kind == "system_button":
        return f"Press the {action.get('button')} button."
    if kind == "answer":
        return f'Answer "{action.get("text", "")}".'
    if kind == "terminate":
        return (
            "The task is complete." if action.get("status") == "success" else "The task cannot be completed."
        )
    if kind == "wait":
        return "Wait for the screen to update."
    return f"Perform {kind}."


class ExpertSet(BaseModel):
    """Expert steps and the episode bookkeeping ``distill`` reports."""

    steps: list[ExpertStep] = Field(default_factory=list)
    episodes: int = 0
    successful_episodes: int = 0
    failed: dict[str, str] = Field(default_factory=dict, description="task/seed -> why it was not kept")


class Episode(BaseModel):
    """One oracle episode: its steps, the observations they were taken at, and the judgement."""

    model_config = {"arbitrary_types_allowed": True}

    steps: list[ExpertStep]
    observations: list[Observation]
    success: bool
    answer: str | None = None


class _Recorder:
    """Collects (observation, action) pairs of one episode, storing screenshots by hash."""

    def __init__(self, out_dir: Path, task_name: str, seed: int, goal: str) -> None:
        self.out_dir = out_dir
        self.task_name, self.seed, self.goal = task_name, seed, goal
        self.steps: list[ExpertStep] = []
        self.observations: list[Observation] = []
        self.history: list[HistoryEntry] = []

    def __call__(self, observation: Observation, action: Action, result: ActionResult | None) -> None:
        digest = hashlib.sha1(observation.screenshot).hexdigest()
        ref = f"screens/{digest}.png"
        path = self.out_dir / ref
        if not path.exists():
            path.write_bytes(observation.screenshot)
        data = action.to_json()
        el = (
            target_element(observation.elements, *data["coordinate"])
            if data["action"] in TOUCH_ACTIONS
            else None
        )
        description = describe_action(data, observation.elements)
        self.observations.append(observation)
        self.steps.append(
            ExpertStep(
                task_name=self.task_name,
                seed=self.seed,
                goal=self.goal,
                step=len(self.steps),
                root=str(self.out_dir),
                screen_ref=ref,
                screen=observation.size,
                action=data,
                target_bounds=(el.bounds.x1, el.bounds.y1, el.bounds.x2, el.bounds.y2)
                if el is not None
                else None,
                description=description,
                history=list(self.history),
            )
        )
        self.history.append(
            HistoryEntry(action=json.dumps(data), description=description, outcome="Successful")
        )


def play_expert_episode(task: Task, out_dir: Path) -> Episode:
    """Play ``task``'s oracle on a fresh SimPhone, recording every step (screens under ``out_dir``)."""
    from agent_runtime.evaluation import play
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import OraclePolicy

    (out_dir / "screens").mkdir(parents=True, exist_ok=True)
    recorder = _Recorder(out_dir, task.name, task.seed, task.goal)
    phone = SimPhone(seed=task.seed)
    try:
        task.setup(phone)
        outcome = play(OraclePolicy(task), phone, max_steps=task.max_steps, on_step=recorder)
        success = task.is_successful(phone, outcome.answer) >= 1.0
    finally:
        phone.close()
    return Episode(
        steps=recorder.steps, observations=recorder.observations, success=success, answer=outcome.answer
    )


def collect_expert_steps(
    out_dir: Path | str,
    *,
    tasks: str | list[str] | None = None,
    split: str = "train",
    episodes: int = 1,
    seed: int = 0,
    on_episode: Callable[[str], None] | None = None,
) -> ExpertSet:
    """Play the oracle on each selected task instance and keep the steps of successful episodes.

    Screenshots go to ``out_dir/screens/``, the records to ``out_dir/experts.jsonl``.
    """
    from agent_runtime.simphone.tasks import select, task_instances

    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    result = ExpertSet()
    for task in task_instances(select(tasks), split=split, episodes=episodes, seed=seed):  # type: ignore[arg-type]
        key = f"{task.name}/{task.seed}"
        result.episodes += 1
        try:
            episode = play_expert_episode(task, out)
        except Exception as exc:  # a broken template must not lose the other demonstrations
            result.failed[key] = f"{type(exc).__name__}: {exc}"
            continue
        if on_episode is not None:
            on_episode(key)
        if not episode.success:
            result.failed[key] = "the oracle's episode did not succeed"
            continue
        result.successful_episodes += 1
        result.steps.extend(episode.steps)
    with open(out / EXPERTS_FILE, "w", encoding="utf-8") as fh:
        for s in result.steps:
            fh.write(s.model_dump_json() + "\n")
    return result
