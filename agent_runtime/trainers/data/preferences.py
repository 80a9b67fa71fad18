"""Preference pairs for DPO: ReachAgent's four levels on SimPhone, and corrections found in traces.

**From SimPhone** (ReachAgent §4.1, §4.3). The oracle plays a task once: its actions are the
*golden flow*. At each golden state *t* the page's aligned action space (:func:`aligned_actions`:
a tap at the centre of every actionable element, four swipes along the central axes of every
scrollable one) supplies candidates, and each candidate is levelled by replaying the golden
prefix on a fresh phone, executing it, and letting the oracle try to finish from there:

* **Golden** — the golden action itself, or one that starts an equally short successful flow
  (the rest of the golden flow, or the oracle, finishes the task in no more steps in total);
* **Longer** — the oracle still completes the task from the resulting state, in more steps,
  within the task's step budget;
* **Incomplete** — it cannot complete it within the budget (or the oracle finds no way);
* **Invalid** — not in the aligned action space: a tap on empty space or a non-actionable point
  (:func:`invalid_taps`), or an action the phone refuses (typing with no field focused, an unknown app).

**The policy's own mistakes** (§4.3: "we use the SFT agent to regenerate the training split"). With
a ``regenerate`` sampler (:mod:`agent_runtime.trainers.data.regenerate`), the SFT agent answers each
golden state's Worker prompt; every distinct reply is levelled (:func:`level_reply`: a reply the
Worker parser rejects is Invalid) and each one worse than Golden is a rejected side, verbatim
(``rejected_source="policy"``). Only at states where none of its replies is worse does the page's
action space supply them: pairs golden ≻ one candidate of each lower level present
(``rejected_source="action_space"``), which is also every state's pairs without a sampler.

**From traces.** In one run, a Worker step the Reflector judged a FAILURE and a later step on the
same screen (same screenshot hash) judged a SUCCESS give the pair (later ≻ failed) for the
failed step's prompt.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.actions import Answer, Terminate, parse_action, to_screen
from agent_runtime.coords import Size
from agent_runtime.errors import ParseError
from agent_runtime.observation import Observation, UIElement
from agent_runtime.roles.worker import parse_worker
from agent_runtime.trainers.data.samples import Sample
from agent_runtime.trainers.data.worker_prompts import PromptSettings, format_worker_reply, to_model_space
from agent_runtime.trainers.demos.experts import (
    TOUCH_ACTIONS,
    ExpertStep,
    describe_action,
    play_expert_episode,
)

if TYPE_CHECKING:
    from agent_runtime.simphone.tasks import Task


class Level(IntEnum):
    """ReachAgent's reward levels: R(Golden) > R(Longer) > R(Incomplete) > R(Invalid)."""

    INVALID = 0
    INCOMPLETE = 1
    LONGER = 2
    GOLDEN = 3


class PreferencePair(BaseModel):
    """One DPO row before images are loaded: a prompt (recorded form) and two replies."""

    messages: list[dict[str, Any]]
    chosen: str
    rejected: str
    root: str = Field(description="directory the prompt's image refs resolve against")
    source: Literal["simphone", "trace"]
    chosen_level: str
    rejected_level: str
    rejected_source: Literal["policy", "action_space", "trace"] = Field(
        description="where the rejected reply came from: the SFT agent's regeneration, the page's "
        "action space, or a recorded FAILURE step"
    )
    state: str = Field(description="task/seed/step or run/step the pair was taken at")

    @property
    def image_root(self) -> str:
        return self.root


# -- the aligned action space -------------------------------------------------------------------


def _visible(el: UIElement, screen: Size) -> bool:
    b = el.bounds
    return b.area > 0 and b.x1 >= 0 and b.y1 >= 0 and b.x2 <= screen.width and b.y2 <= screen.height


def aligned_actions(elements: list[UIElement], screen: Size) -> list[dict[str, Any]]:
    """The page's candidate actions (ReachAgent §4.1), screen pixels, without duplicates.

    Taps go to the centre of each visible actionable element; each visible scrollable element
    adds four swipes along its central axes (up, down, left, right).
    """
    out: dict[str, dict[str, Any]] = {}
    for el in elements:
        if not el.actionable or not _visible(el, screen):
            continue
        cx, cy = el.bounds.center
        if el.flags & {"clickable", "checkable", "long-clickable"} or el.class_name.endswith("EditText"):
            action = {"action": "click", "coordinate": [cx, cy]}
            out[json.dumps(action)] = action
        if el.has("scrollable"):
            b = el.bounds
            top, bottom = b.y1 + (b.y2 - b.y1) // 4, b.y1 + 3 * (b.y2 - b.y1) // 4
            left, right = b.x1 + (b.x2 - b.x1) // 4, b.x1 + 3 * (b.x2 - b.x1) // 4
            for a, z in (
                ((cx, bottom), (cx, top)),
                ((cx, top), (cx, bottom)),
                ((right, cy), (left, cy)),
                ((left, cy), (right, cy)),
            ):
                action = {"action": "swipe", "coordinate": list(a), "coordinate2": list(z)}
                out[json.dumps(action)] = action
    return list(out.values())


def invalid_taps(elements: list[UIElement], screen: Size, rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Up to ``n`` taps on points no actionable element covers (outside the action space)."""
    boxes = [e.bounds for e in elements if e.actionable and e.bounds.area > 0]
    step_x, step_y = max(1, screen.width // 12), max(1, screen.height // 24)
    free = [
        (x, y)
        for x in range(step_x // 2, screen.width, step_x)
        for y in range(step_y // 2, screen.height, step_y)
        if not any(b.contains(x, y) for b in boxes)
    ]
    return [{"action": "click", "coordinate": list(p)} for p in rng.sample(free, min(n, len(free)))]


def covered(action: dict[str, Any], elements: list[UIElement], screen: Size) -> bool:
    """Whether a touch lands on a visible actionable element (any other action: True).

    The counterpart of :func:`invalid_taps` for actions the policy wrote: a tap on empty space
    is outside the page's action space whatever the phone then does.

    >>> covered({"action": "click", "coordinate": [5, 5]}, [], Size(width=10, height=10))
    False
    >>> covered({"action": "system_button", "button": "Back"}, [], Size(width=10, height=10))
    True
    """
    if action.get("action") not in TOUCH_ACTIONS:
        return True
    x, y = action["coordinate"]
    return any(e.actionable and _visible(e, screen) and e.bounds.contains(x, y) for e in elements)


# -- levelling by replay ------------------------------------------------------------------------


def _steps(actions: list[dict[str, Any]]) -> int:
    """Steps a flow takes: every action but the final terminate (as the episode loop counts)."""
    return sum(1 for a in actions if a.get("action") != "terminate")


class _Episode:
    """A fresh phone with the task set up, driven by replayed actions and, optionally, the oracle."""

    def __init__(self, task_name: str, seed: int) -> None:
        from agent_runtime.simphone import SimPhone
        from agent_runtime.simphone.tasks import make_task

        self.task = make_task(task_name, seed)
        self.phone = SimPhone(seed=seed)
        self.answer: str | None = None
        self.task.setup(self.phone)

    def __enter__(self) -> _Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.phone.close()

    def execute(self, data: dict[str, Any]) -> bool:
        """Play one action; False when the phone refuses it (ReachAgent's "cannot be executed")."""
        action = parse_action(data)
        if isinstance(action, Answer):
            self.answer = action.text
            return True
        return isinstance(action, Terminate) or self.phone.execute(action).ok

    def play(self, actions: list[dict[str, Any]]) -> None:
        for data in actions:
            self.execute(data)

    def success(self) -> bool:
        return self.task.is_successful(self.phone, self.answer) >= 1.0

    def finish_with_oracle(self, budget: int) -> int | None:
        """Steps the oracle needs from here to accomplish the task, or None within ``budget``."""
        from agent_runtime.simphone.tasks import OraclePolicy

        policy = OraclePolicy(self.task)
        for extra in range(1, budget + 1):
            action = policy(self.phone.observe())
            if isinstance(action, Terminate):
                return None
            self.play([action.to_json()])
            if self.success():
                return extra
        return None


def level_of(
    task_name: str, seed: int, golden: list[dict[str, Any]], t: int, candidate: dict[str, Any], max_steps: int
) -> Level:
    """The level of ``candidate`` at golden state ``t`` (module docstring).

    A candidate the phone refuses is Invalid; a ``terminate`` ends the flow, so it is Golden only
    if the task is already accomplished. Equally short flows are found by replaying the rest of
    the golden flow after the candidate; otherwise the oracle, started afresh from the candidate's
    resulting state, decides between Longer and Incomplete within what is left of the
    ``max_steps`` budget.
    """
    if candidate == golden[t]:
        return Level.GOLDEN
    spent = _steps([*golden[:t], candidate])
    shortest = _steps(golden)
    try:
        with _Episode(task_name, seed) as episode:
            episode.play(golden[:t])
            if not episode.execute(candidate):
                return Level.INVALID
            if episode.success():
                return Level.GOLDEN if spent <= shortest else Level.LONGER
            if candidate.get("action") == "terminate":
                return Level.INCOMPLETE
            episode.play(golden[t + 1 :])
            if episode.success():
                return Level.GOLDEN
        with _Episode(task_name, seed) as episode:
            episode.play([*golden[:t], candidate])
            extra = episode.finish_with_oracle(max_steps - spent)
    except Exception:  # the oracle failing (an element it needs is gone) is "cannot complete"
        return Level.INCOMPLETE
    if extra is None:
        return Level.INCOMPLETE
    return Level.GOLDEN if spent + extra <= shortest else Level.LONGER


def level_reply(
    reply: str,
    task_name: str,
    seed: int,
    golden: list[dict[str, Any]],
    t: int,
    observation: Observation,
    settings: PromptSettings,
    max_steps: int,
) -> Level:
    """The level of a Worker reply at golden state ``t``: Invalid when the runtime's Worker parser
    rejects it (a screenshot-only Worker names no element indices) or it taps outside the page's
    action space, else :func:`level_of` of its action mapped to screen pixels."""
    try:
        parsed = parse_worker(reply, indices=False)
    except (ParseError, ValueError, TypeError):  # as the runtime's role caller: model output never raises
        return Level.INVALID
    action = to_screen(parsed.action, settings.mapper(observation.size)).to_json()
    if action != golden[t] and not covered(action, observation.elements, observation.size):
        return Level.INVALID
    return level_of(task_name, seed, golden, t, action, max_steps)


class PairStats(BaseModel):
    """What building pairs produced (for the manifest)."""

    states: int = 0
    candidates: dict[str, int] = Field(default_factory=dict, description="action-space candidates per level")
    policy_replies: dict[str, int] = Field(
        default_factory=dict, description="the SFT agent's distinct replies per level"
    )
    pairs: dict[str, int] = Field(default_factory=dict, description="pairs per 'chosen>rejected' levels")
    rejected_source: dict[str, int] = Field(default_factory=dict, description="pairs per rejected_source")
    skipped: dict[str, str] = Field(default_factory=dict, description="episode -> why it gave no pairs")


def _reply(action: dict[str, Any], elements: list[UIElement], screen: Size, settings: PromptSettings) -> str:
    """A Worker reply for an action (action-only data: the thought restates the action)."""
    description = describe_action(action, elements)
    model_action = to_model_space(action, settings.mapper(screen))
    return format_worker_reply(f"I will do this next: {description}", model_action, description)


def _action_space_rejects(
    task: Task,
    golden: list[dict[str, Any]],
    t: int,
    observation: Observation,
    rng: random.Random,
    max_candidates: int,
    invalid_per_state: int,
    counts: Counter[str],
) -> dict[Level, dict[str, Any]]:
    """One levelled candidate per level from the page's action space at golden state ``t``."""
    pool = [a for a in aligned_actions(observation.elements, observation.size) if a != golden[t]]
    levelled: dict[Level, dict[str, Any]] = {}
    for candidate in rng.sample(pool, min(max_candidates, len(pool))):
        level = level_of(task.name, task.seed, golden, t, candidate, task.max_steps)
        counts[level.name] += 1
        levelled.setdefault(level, candidate)
    for candidate in invalid_taps(observation.elements, observation.size, rng, invalid_per_state):
        counts[Level.INVALID.name] += 1
        levelled.setdefault(Level.INVALID, candidate)
    return levelled


def simphone_pairs(
    out_dir: Path | str,
    settings: PromptSettings,
    *,
    tasks: str | list[str] | None = None,
    split: str = "train",
    episodes: int = 1,
    seed: int = 0,
    max_candidates: int = 6,
    invalid_per_state: int = 1,
    regenerate: Callable[[ExpertStep], list[str]] | None = None,
    on_state: Callable[[str], None] | None = None,
) -> tuple[list[PreferencePair], PairStats]:
    """Pair each golden action with the SFT agent's worse replies at its state (``regenerate``:
    Worker replies for a state's prompt, :mod:`~agent_runtime.trainers.data.regenerate`) or, where
    it gives none, with worse actions of the page's action space (module docstring)."""
    from agent_runtime.simphone.tasks import select, task_instances

    out = Path(out_dir).resolve()
    stats = PairStats()
    level_counts: Counter[str] = Counter()
    reply_counts: Counter[str] = Counter()
    pair_counts: Counter[str] = Counter()
    source_counts: Counter[str] = Counter()
    pairs: list[PreferencePair] = []
    for task in task_instances(select(tasks), split=split, episodes=episodes, seed=seed):  # type: ignore[arg-type]
        key = f"{task.name}/{task.seed}"
        try:
            episode = play_expert_episode(task, out)
        except Exception as exc:  # a broken template must not lose the other tasks' pairs
            stats.skipped[key] = f"{type(exc).__name__}: {exc}"
            continue
        if not episode.success:
            stats.skipped[key] = "the oracle's episode did not succeed"
            continue
        golden = [s.action for s in episode.steps]
        rng = random.Random(f"{seed}/{key}")
        for t, (step, obs) in enumerate(zip(episode.steps, episode.observations, strict=True)):
            if on_state is not None:
                on_state(f"{key}/{t}")
            stats.states += 1
            rejected: list[tuple[str, Level, Literal["policy", "action_space"]]] = []
            for reply in dict.fromkeys(regenerate(step) if regenerate is not None else []):
                level = level_reply(reply, task.name, task.seed, golden, t, obs, settings, task.max_steps)
                reply_counts[level.name] += 1
                if level < Level.GOLDEN:
                    rejected.append((reply, level, "policy"))
            if not rejected:
                levelled = _action_space_rejects(
                    task, golden, t, obs, rng, max_candidates, invalid_per_state, level_counts
                )
                rejected = [
                    (_reply(candidate, obs.elements, obs.size, settings), level, "action_space")
                    for level, candidate in sorted(levelled.items(), reverse=True)
                    if level is not Level.GOLDEN
                ]
            messages = step.messages(settings)
            chosen = _reply(golden[t], obs.elements, obs.size, settings)
            for text, level, source in rejected:
                pairs.append(
                    PreferencePair(
                        messages=messages,
                        chosen=chosen,
                        rejected=text,
                        root=str(out),
                        source="simphone",
                        chosen_level=Level.GOLDEN.name,
                        rejected_level=level.name,
                        rejected_source=source,
                        state=f"{key}/{t}",
                    )
                )
                pair_counts[f"GOLDEN>{level.name}"] += 1
                source_counts[source] += 1
    stats.candidates = dict(level_counts)
    stats.policy_replies = dict(reply_counts)
    stats.pairs = dict(pair_counts)
    stats.rejected_source = dict(source_counts)
    return pairs, stats


def trace_pairs(samples: list[Sample]) -> list[PreferencePair]:
    """(later SUCCESS ≻ FAILURE) pairs of Worker calls on the same screen within one run."""
    by_run: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        if s.role == "worker" and s.valid and s.verdict is not None and s.screen_hash:
            by_run[s.run_id].append(s)
    pairs: list[PreferencePair] = []
    for calls in by_run.values():
        calls.sort(key=lambda s: (s.step, s.attempt))
        for i, failed in enumerate(calls):
            if failed.verdict is None or failed.verdict.success:
                continue
            fix = next(
                (
                    s
                    for s in calls[i + 1 :]
                    if s.step > failed.step
                    and s.screen_hash == failed.screen_hash
                    and s.verdict is not None
                    and s.verdict.success
                ),
                None,
            )
            if fix is None or fix.completion == failed.completion:
                continue
            pairs.append(
                PreferencePair(
                    messages=failed.messages,
                    chosen=fix.completion,
                    rejected=failed.completion,
                    root=failed.run_dir,
                    source="trace",
                    chosen_level="SUCCESS",
                    rejected_level="FAILURE",
                    rejected_source="trace",
                    state=f"{failed.run_id}/{failed.step}",
                )
            )
    return pairs
