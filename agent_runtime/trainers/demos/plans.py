"""The expert's side of SimPhone demonstrations: its actions, their index form, subgoals, mistakes.

:func:`expert_plan` plays a task once with the oracle (tree-only observations, fast) and returns
each action in the form the trained role must write — the element-index form (ReachAgent's
action alignment) for roles that read the UI tree, model-space coordinates for VLMs — together
with the screen actions the runtime would execute for it. Executing those (not the oracle's
raw pixels) keeps the dry run and the recorded run on the same screens. Consecutive actions are
grouped into the subgoals the ideal Manager plans.

:func:`find_mistake` searches for a *realistic* wrong action at a state — one that either changes
nothing (Reflector verdict C) or opens a wrong page that Back undoes (verdict B) — by trying
candidates on a fresh replica of the episode (SimPhone is deterministic: same seed, same setup,
same actions give the same screens), so the recorded run can recover from it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.actions import (
    Action,
    Answer,
    Click,
    LongPress,
    Swipe,
    SystemButton,
    Terminate,
    Type,
    parse_action,
)
from agent_runtime.alignment import screen_actions, shown_indices
from agent_runtime.config import ModelConfig, shows_tree
from agent_runtime.coords import CoordMapper
from agent_runtime.errors import ActionParseError, TaskError
from agent_runtime.observation import Observation
from agent_runtime.trainers.critics.step import to_model_space
from agent_runtime.trainers.demos.experts import describe_action, element_label, target_element

if TYPE_CHECKING:
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import Task

#: Packages whose elements are never a "wrong action" candidate (bars, keyboard).
_SYSTEM = frozenset({"com.android.systemui", "com.google.android.inputmethod.latin"})
#: Candidates tried per mistake search (each one replays the episode on a fresh phone).
MISTAKE_TRIES = 6


class PlannedStep(BaseModel):
    """One expert action, as the role writes it and as the device executes it."""

    model_config = ConfigDict(frozen=True)

    raw: dict[str, Any] = Field(description="the action as the Worker writes it")
    screen: list[dict[str, Any]] = Field(description="what the device executes, in order")
    kind: str
    description: str
    subgoal: int = Field(0, description="index of the subgoal this action serves")
    closes_subgoal: bool = Field(False, description="the subgoal is done after this action")
    tree: str = Field("", description="the indexed UI tree before the action (sync check)")


class ExpertPlan(BaseModel):
    steps: list[PlannedStep]
    subgoals: list[str]
    answer: str | None = None
    success: bool


def _index_action(action: Action, obs: Observation) -> Action | None:
    """The element-index form of a screen-pixel oracle action, when one reproduces it."""
    shown = set(shown_indices(obs))
    els = obs.elements
    if isinstance(action, Click | LongPress) and action.coordinate is not None:
        x, y = (round(v) for v in action.coordinate)
        # Only where the oracle aimed at an element's centre: a point elsewhere (a position on a
        # seek bar) means something an index cannot say, so it stays a coordinate action.
        exact = [i for i in shown if els[i].bounds.center == (x, y)]
        for i in exact[::-1]:
            try:
                screen_actions(action.model_copy(update={"coordinate": None, "index": i}), obs)
            except ActionParseError:
                continue
            return action.model_copy(update={"coordinate": None, "index": i})
        return None
    if isinstance(action, Swipe) and action.coordinate is not None and action.coordinate2 is not None:
        (x1, y1), (x2, y2) = action.coordinate, action.coordinate2
        if abs(y2 - y1) >= abs(x2 - x1):
            direction = "up" if y2 < y1 else "down"
        else:
            direction = "left" if x2 < x1 else "right"
        areas = [i for i in shown if els[i].has("scrollable") and els[i].bounds.contains(x1, y1)]
        if not areas:
            return None
        smallest = min(areas, key=lambda i: els[i].bounds.area)
        return Swipe(index=smallest, direction=direction)
    return None


def align(
    action: Action, obs: Observation, mode: str, model: ModelConfig
) -> tuple[dict[str, Any], list[Action]]:
    """(the action as the Worker writes it, the screen actions the runtime executes for it)."""
    if shows_tree(mode):
        indexed = _index_action(action, obs)
        if indexed is not None:
            # Written the way the prompt shows it (no duration): executed exactly as the runtime
            # would execute what the model writes.
            raw = {k: v for k, v in indexed.to_json().items() if k != "duration_ms"}
            return raw, screen_actions(parse_action(raw), obs)
    mapper = CoordMapper(space=model.coords, screen=obs.size, budget=model.budget)
    return to_model_space(action.to_json(), mapper), [action]


def describe(action: Action, obs: Observation) -> str:
    """A short description naming the element touched (the Reflector's expectation)."""
    return describe_action(action.to_json(), obs.elements)


def _subgoal_text(kinds: list[str], actions: list[Action], obs: list[Observation]) -> str:
    last, last_obs = actions[-1], obs[-1]
    if isinstance(last, Type):
        label = ""
        if len(actions) > 1 and isinstance(actions[-2], Click) and actions[-2].coordinate is not None:
            el = target_element(obs[-2].elements, *actions[-2].coordinate)
            label = element_label(obs[-2].elements, el) if el is not None else ""
        where = f' into the "{label}" field' if label else ""
        return f'Type "{last.text}"{where}'
    if isinstance(last, Answer):
        return "Answer the question with the `answer` action"
    text = describe(last, last_obs).rstrip(".")
    if "swipe" in kinds[:-1] and isinstance(last, Click | LongPress):
        return f"Scroll to find the target, then {text[0].lower()}{text[1:]}"
    return text


def group_subgoals(
    actions: Sequence[Action], observations: Sequence[Observation]
) -> tuple[list[int], list[str]]:
    """Subgoal index per action and the subgoal texts: swipes join the action they lead to,
    a tap on a field joins the typing that follows it."""
    owner: list[int] = []
    texts: list[str] = []
    start = 0
    for i, action in enumerate(actions):
        owner.append(len(texts))
        nxt = actions[i + 1] if i + 1 < len(actions) else None
        joins_next = action.action == "swipe" or (isinstance(action, Click) and isinstance(nxt, Type))
        if joins_next and nxt is not None:
            continue
        span = list(actions[start : i + 1])
        texts.append(_subgoal_text([a.action for a in span], span, list(observations[start : i + 1])))
        start = i + 1
    return owner, texts


def replica(task: Task, executed: Sequence[Action]) -> SimPhone:
    """A fresh phone set up for ``task`` with ``executed`` screen actions replayed on it."""
    from agent_runtime.simphone import SimPhone

    phone = SimPhone(seed=task.seed)
    task.setup(phone)
    for action in executed:
        phone.execute(action)
    return phone


def expert_plan(task: Task, mode: str, model: ModelConfig) -> ExpertPlan:
    """Play ``task`` with the oracle once and plan the demonstration (see the module doc)."""
    from agent_runtime.evaluation.episode import tree_observation
    from agent_runtime.simphone.tasks.oracle import OraclePolicy

    phone = replica(task, [])
    policy = OraclePolicy(task)
    actions: list[Action] = []
    seen: list[Observation] = []
    raws: list[tuple[dict[str, Any], list[Action], str]] = []
    answer: str | None = None
    try:
        for _ in range(task.max_steps):
            obs = tree_observation(phone)
            action = policy(obs)
            if isinstance(action, Terminate):
                break
            raw, screen = align(action, obs, mode, model)
            actions.append(action)
            seen.append(obs)
            raws.append((raw, screen, obs.compressed_tree(with_index=True)))
            if isinstance(action, Answer):
                answer = action.text
                break
            for a in screen:
                phone.execute(a)
        success = task.is_successful(phone, answer) >= 1.0
    finally:
        phone.close()
    owner, texts = group_subgoals(actions, seen)
    steps = [
        PlannedStep(
            raw=raw,
            screen=[a.to_json() for a in screen],
            kind=action.action,
            description=describe(action, obs),
            subgoal=owner[i],
            closes_subgoal=i + 1 == len(owner) or owner[i + 1] != owner[i],
            tree=tree,
        )
        for i, (action, obs, (raw, screen, tree)) in enumerate(zip(actions, seen, raws, strict=True))
    ]
    return ExpertPlan(steps=steps, subgoals=texts, answer=answer, success=success)


class Mistake(BaseModel):
    """A wrong action the recorded run takes, and the Reflector verdict it deserves."""

    raw: dict[str, Any]
    screen: list[dict[str, Any]]
    description: str
    outcome: Literal["B", "C"]


def _candidates(obs: Observation, intended: list[dict[str, Any]]) -> list[Action]:
    els = obs.elements
    out: list[Action] = []
    for i in shown_indices(obs):
        el = els[i]
        if el.package in _SYSTEM:
            continue
        if el.has("scrollable"):
            out += [Swipe(index=i, direction=d) for d in ("down", "up")]
        elif el.has("clickable") and not el.has("checkable"):
            # Toggles are left alone: Back cannot undo them.
            out.append(Click(index=i))
    intended_points = {tuple(a.get("coordinate") or ()) for a in intended}
    return [
        a
        for a in out
        if tuple(screen_actions(a, obs)[-1].to_json().get("coordinate") or ()) not in intended_points
    ]


def find_mistake(
    task: Task,
    executed: Sequence[Action],
    obs: Observation,
    mode: str,
    model: ModelConfig,
    intended: list[dict[str, Any]],
    rng: random.Random,
) -> Mistake | None:
    """A wrong action at this state that the run can recover from (see the module doc)."""
    from agent_runtime.evaluation.episode import tree_observation

    want = rng.choice(("B", "C"))
    found: dict[str, Mistake] = {}
    candidates = _candidates(obs, intended)
    rng.shuffle(candidates)
    for wrong in candidates[:MISTAKE_TRIES]:
        screen = screen_actions(wrong, obs)
        phone = replica(task, executed)
        try:
            # The whole dump (focus, selection, off-screen rows), not just what the role sees:
            # a "no change" must leave nothing behind that could derail the expert afterwards.
            before = tree_observation(phone).ui_xml
            for a in screen:
                phone.execute(a)
            after = tree_observation(phone).ui_xml
            outcome: Literal["B", "C"] | None = "C" if after == before else None
            if outcome is None:
                phone.execute(SystemButton(button="Back"))
                if tree_observation(phone).ui_xml == before:
                    outcome = "B"
        finally:
            phone.close()
        if outcome is None or outcome in found:
            continue
        raw = (
            {k: v for k, v in wrong.to_json().items() if k != "duration_ms"}
            if shows_tree(mode)
            else align(screen[-1], obs, mode, model)[0]
        )
        found[outcome] = Mistake(
            raw=raw,
            screen=[a.to_json() for a in screen],
            description=describe(screen[-1], obs),
            outcome=outcome,
        )
        if outcome == want:
            break
    if not found:
        return None
    return found.get(want) or next(iter(found.values()))


def check_in_sync(step: PlannedStep, obs: Observation, task: Task) -> None:
    """The recorded run must be on the screen the dry run planned this action for."""
    if step.tree and obs.compressed_tree(with_index=True) != step.tree:
        raise TaskError(
            f"{task.name}: the recorded run left the expert's path before '{step.description}'",
            task=task.name,
            hint="SimPhone should be deterministic for a seed; report this template",
        )
