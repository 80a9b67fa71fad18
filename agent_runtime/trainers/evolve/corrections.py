"""On-policy corrections (DAgger) on SimPhone: the oracle labels the states the model visits.

Oracle demonstrations only show states on the expert's path, so a model that drifts off it meets
states nobody taught it. Here the current model plays train instances (evolve's rollouts) and,
for each run it failed, every state it visited gets the oracle's answer:

1. **Replay.** The run's recorded actions are executed again on a fresh SimPhone replica of the
   instance (SimPhone is deterministic for a seed), an element-index action re-resolved on the
   replica's screen as the runtime resolves it. Each visited screen is checked against the
   screenshot the run recorded; from the first that differs on, nothing more of the run is
   labelled.
2. **Plan from the visited state.** The oracle does not replay its own trajectory: from the
   visited state it searches for the shortest way to finish that a replica *confirms* — the
   expert's own continuation where the state is on its path, else the task's expert script
   started afresh from the current screen, directly or after Back, Back twice, or Home. Every
   candidate is played to its end on a replica of the visited state and kept only when the task
   checker judges it successful; a state with no confirmed plan gets no label.
3. **Label.** The first action of that plan is the Worker's target, and the plan's subgoals are
   the Manager's, each written in the role's output format exactly as the demonstrations write
   them (:mod:`agent_runtime.trainers.demos.oracle_model`): element-index actions for roles that
   read the UI tree, model coordinates otherwise. A state where the task is already done tells
   the Manager ``Finished`` (a Worker asked there gets no label: the demonstrations never ask).

The result is a copy of each labelled run under ``out`` (screenshots hard-linked): the Manager
and Worker calls' completions are the oracle's (``extra["correction"]`` says which plan and
whether the state was on the expert's path), every other call — and any state left unlabelled —
is ``not_a_target``, and run.json's ``eval`` says ``source: oracle corrections``: each target is
the first step of a plan the checker confirmed, so the success filter keeps them while the
model's own outcome stays recorded as ``rollout_success``. Step-critic labels are not copied:
they judged the model's actions, not these.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agent_runtime.actions import Action, Answer, Click, OpenApp, SystemButton, Terminate, parse_action
from agent_runtime.alignment import screen_actions
from agent_runtime.config import ModelConfig, shows_tree
from agent_runtime.errors import ActionParseError, ParseError, TaskError
from agent_runtime.evaluation.episode import tree_observation
from agent_runtime.observation import Observation
from agent_runtime.roles.manager import parse_manager
from agent_runtime.roles.worker import parse_worker
from agent_runtime.simphone.tasks.oracle import SYSTEM_PACKAGES, OraclePolicy, OracleUI
from agent_runtime.traces import CallRecord, LoadedRun, StepRecord, dumps, load_run
from agent_runtime.trainers.data.samples import NOT_A_TARGET
from agent_runtime.trainers.data.worker_prompts import format_worker_reply
from agent_runtime.trainers.demos.oracle_model import ORACLE_MODEL, _numbered, _target
from agent_runtime.trainers.demos.plans import (
    ExpertPlan,
    align,
    describe,
    expert_plan,
    group_subgoals,
    replica,
)

if TYPE_CHECKING:
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import Task

__all__ = ["CORRECTION_KEY", "CorrectionStats", "OraclePlan", "correct_runs", "plan_from"]

#: ``CallRecord.extra`` key of a labelled call (and run.json's provenance key).
CORRECTION_KEY = "correction"
#: Roles the oracle labels, as the demonstrations teach them.
LABELLED_ROLES = ("manager", "worker")
#: How many moves the oracle may take to get back onto the expert's path, and how many states it
#: may try on the way (each one a replica replayed to the visited state).
REJOIN_DEPTH, MAX_EXPANSIONS = 2, 300
#: What the oracle may do first before its script starts afresh (name, actions).
_DETOURS: tuple[tuple[str, tuple[Action, ...]], ...] = (
    ("fresh", ()),
    ("back", (SystemButton(button="Back"),)),
    ("back-back", (SystemButton(button="Back"), SystemButton(button="Back"))),
    ("home", (SystemButton(button="Home"),)),
)


class CorrectionStats(BaseModel):
    """What :func:`correct_runs` did."""

    runs: int = Field(0, description="runs read")
    labelled_runs: int = Field(0, description="runs written with at least one label")
    states: int = Field(0, description="visited states replayed and confirmed")
    labels: dict[str, int] = Field(default_factory=dict, description="labelled calls by role")
    off_path: int = Field(0, description="labelled calls at states off the expert's path")
    unlabelled: dict[str, int] = Field(
        default_factory=dict, description="Manager/Worker calls left out, by why"
    )
    skipped: dict[str, str] = Field(default_factory=dict, description="failed run -> why it was not labelled")


@dataclass
class OraclePlan:
    """A confirmed way to finish from a visited state (module docstring, step 2)."""

    kind: str  # expert | rejoin | fresh | back | back-back | home | done
    raw: dict[str, Any] | None = None  # the first action as the Worker writes it
    description: str = ""
    subgoals: list[str] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)  # the expert's subgoals behind the state
    length: int = 0

    @property
    def on_path(self) -> bool:
        return self.kind in ("expert", "done")


def _play_script(
    task: Task, phone: SimPhone, budget: int
) -> tuple[list[Action], list[Observation], str | None]:
    """The task's expert script from the phone's current screen: (actions, observations before
    each, answer). Raises :class:`TaskError` when the script cannot go on from this state."""
    policy = OraclePolicy(task)
    actions: list[Action] = []
    seen: list[Observation] = []
    for _ in range(budget):
        obs = tree_observation(phone)
        action = policy(obs)
        if isinstance(action, Terminate):
            break
        actions.append(action)
        seen.append(obs)
        if isinstance(action, Answer):
            return actions, seen, action.text
        phone.execute(action)
    return actions, seen, None


def _succeeds(task: Task, phone: SimPhone, answer: str | None) -> bool:
    return task.is_successful(phone, answer) >= 1.0


@dataclass
class _Candidate:
    """A way to finish from the visited state: ``moves`` (screen actions, with the observation
    before each) and then, when ``join`` is set, the expert's own steps from step ``join`` on."""

    kind: str
    moves: list[Action]
    seen: list[Observation]
    join: int | None
    length: int

    def plan(self, here: Observation, expert: ExpertPlan, mode: str, model: ModelConfig) -> OraclePlan:
        _, subgoals = group_subgoals(self.moves, self.seen)
        completed: list[str] = []
        if self.join is not None:
            step = expert.steps[self.join]
            subgoals += expert.subgoals[step.subgoal :]
            completed = expert.subgoals[: step.subgoal][::-1]
            if not self.moves:
                return OraclePlan(self.kind, step.raw, step.description, subgoals, completed, self.length)
        raw, _screen = align(self.moves[0], here, mode, model)
        return OraclePlan(self.kind, raw, describe(self.moves[0], here), subgoals, completed, self.length)


def plan_from(
    task: Task, executed: Sequence[Action], expert: ExpertPlan, mode: str, model: ModelConfig
) -> OraclePlan | None:
    """The oracle's shortest confirmed plan from the state ``executed`` leads to (module
    docstring, step 2), or None when no candidate finishes the task from there."""
    phone = replica(task, executed)
    try:
        here = tree_observation(phone)
        if not task.answer_task and _succeeds(task, phone, None):
            return OraclePlan(kind="done")
    finally:
        phone.close()
    found = _rejoins(task, executed, here, expert) + _scripts(task, executed)
    if not found:
        return None
    return min(found, key=lambda c: c.length).plan(here, expert, mode, model)  # the first at a tie


def _rejoins(
    task: Task, executed: Sequence[Action], here: Observation, expert: ExpertPlan
) -> list[_Candidate]:
    """Breadth-first over the moves a person could make (at most :data:`REJOIN_DEPTH`), the
    shortest ways back onto the expert's path that then finish the task."""
    joins: dict[str, list[int]] = {}
    for j, step in enumerate(expert.steps):
        joins.setdefault(step.tree, []).append(j)
    frontier: list[tuple[list[Action], list[Observation], Observation]] = [([], [], here)]
    visited = {here.ui_xml}
    expansions = 0
    for depth in range(REJOIN_DEPTH + 1):
        found = [
            _Candidate(
                "expert" if not moves else "rejoin", moves, seen, j, len(moves) + len(expert.steps) - j
            )
            for moves, seen, obs in frontier
            for j in joins.get(obs.compressed_tree(with_index=True), [])
            if _finishes(task, [*executed, *moves], expert, j)
        ]
        if found or depth == REJOIN_DEPTH:
            return found
        deeper = []
        for moves, seen, obs in frontier:
            for move in _moves(task, obs):
                if expansions >= MAX_EXPANSIONS:
                    break
                expansions += 1
                phone = replica(task, [*executed, *moves, move])
                try:
                    after = tree_observation(phone)
                finally:
                    phone.close()
                if after.ui_xml not in visited:
                    visited.add(after.ui_xml)
                    deeper.append(([*moves, move], [*seen, obs], after))
        frontier = deeper
    return []


def _moves(task: Task, obs: Observation) -> list[Action]:
    """What a person could do on ``obs``: Back, Home, open the task's apps, tap any element that
    takes a tap, scroll either way."""
    ui = OracleUI(obs, task.name)
    moves: list[Action] = [SystemButton(button="Back"), SystemButton(button="Home")]
    moves += [OpenApp(text=app) for app in task.app_names]
    points = {
        el.bounds.center
        for el in obs.elements
        if el.has("clickable") and ui.visible(el) and el.package not in SYSTEM_PACKAGES
    }
    moves += [Click(coordinate=point) for point in sorted(points)]
    if any(el.has("scrollable") and ui.visible(el) for el in obs.elements):
        moves += [ui.swipe(1), ui.swipe(-1)]
    return moves


def _finishes(task: Task, prefix: Sequence[Action], expert: ExpertPlan, join: int) -> bool:
    """Whether the expert's steps from ``join`` on finish the task from the state ``prefix`` leads to."""
    phone = replica(task, prefix)
    try:
        for action in step_actions(expert, join):
            phone.execute(action)
        answer = expert.answer if any(s.kind == "answer" for s in expert.steps[join:]) else None
        return _succeeds(task, phone, answer)
    finally:
        phone.close()


def _scripts(task: Task, executed: Sequence[Action]) -> list[_Candidate]:
    """The task's expert script started afresh from the visited screen, directly or after a
    detour (:data:`_DETOURS`), where it finishes the task."""
    found = []
    for kind, detour in _DETOURS:
        phone = replica(task, executed)
        try:
            before = [tree_observation(phone)]
            for action in detour:
                phone.execute(action)
                before.append(tree_observation(phone))
            actions, seen, answer = _play_script(task, phone, task.max_steps)
            if (actions or detour) and _succeeds(task, phone, answer):
                moves = [*detour, *actions]
                found.append(_Candidate(kind, moves, [*before[: len(detour)], *seen], None, len(moves)))
        except TaskError:  # the script cannot go on from this screen
            continue
        finally:
            phone.close()
    return found


def step_actions(expert: ExpertPlan, start: int) -> list[Action]:
    """The screen actions of the expert's steps from ``start`` on, as the runtime executes them."""
    return [parse_action(a) for s in expert.steps[start:] if s.kind != "answer" for a in s.screen]


def worker_label(plan: OraclePlan, obs: Observation, goal: str) -> str:
    """The oracle's Worker reply at a visited state, as the demonstrations write it."""
    assert plan.raw is not None  # a "done" plan has no Worker label
    subgoal = plan.subgoals[0] if plan.subgoals else goal
    thought = f'The current subgoal is "{subgoal}".{_target(obs, plan.raw)} Next: {plan.description}'
    return format_worker_reply(thought, plan.raw, plan.description)


def manager_label(plan: OraclePlan, goal: str, *, first: bool) -> str:
    """The oracle's Manager reply at a visited state: the first plan, or an update."""
    if first:
        thought = f'To complete "{goal}", work through {len(plan.subgoals)} subgoal(s) in order.'
        return f"### Thought ###\n{thought}\n\n### Plan ###\n{_numbered(plan.subgoals)}\n"
    if plan.kind == "done":
        thought = "The task is complete: every subgoal is done."
    elif plan.on_path:
        thought = "The current screen is on the way to the goal; go on with the next subgoal."
    else:
        thought = "The current screen is off the way to the goal; plan again from here."
    history = "\n".join(f"- {c}" for c in plan.completed) or "None"
    return (
        f"### Thought ###\n{thought}\n\n### Historical Operations ###\n{history}\n\n"
        f"### Plan ###\n{_numbered(plan.subgoals)}\n"
    )


@dataclass
class _Replay:
    """One run replayed on a replica: the executed actions behind each confirmed screen."""

    states: dict[str, list[Action]] = field(default_factory=dict)  # screen ref -> executed actions
    observations: dict[str, Observation] = field(default_factory=dict)
    stopped: str | None = None


def _replay(run: LoadedRun, task: Task) -> _Replay:
    """Module docstring, step 1."""
    out = _Replay()
    phone = replica(task, [])
    executed: list[Action] = []
    try:
        for step in sorted(run.steps, key=lambda s: s.step):
            before = step.before_screen
            if before is None or not _confirm(run, before, phone, executed, out):
                return out
            if step.action_result is None:  # refused or never run: the screen stays as it was
                continue
            try:
                actions = _executed(step, out.observations[before])
            except (ActionParseError, ValueError):
                out.stopped = "a recorded action cannot be replayed"
                return out
            for action in actions:
                result = phone.execute(action)
                executed.append(action)
                if not result.ok:
                    break
            if step.after_screen is None or not _confirm(run, step.after_screen, phone, executed, out):
                return out
    finally:
        phone.close()
    return out


def _confirm(run: LoadedRun, ref: str, phone: SimPhone, executed: list[Action], out: _Replay) -> bool:
    if ref in out.states:
        return True
    obs = phone.observe()
    if hashlib.sha1(obs.screenshot).digest() != hashlib.sha1(run.screen(ref)).digest():
        out.stopped = "the replica's screen differs from the recorded one"
        return False
    out.states[ref] = list(executed)
    out.observations[ref] = obs
    return True


def _executed(step: StepRecord, obs: Observation) -> list[Action]:
    """What the runtime executed for the step's action (an index resolved on ``obs``)."""
    if step.action is None or step.action.get("action") in ("answer", "terminate"):
        return []
    action = parse_action(step.action)
    if action.by_index:
        return screen_actions(action, obs)
    return [parse_action(step.action_screen)] if step.action_screen else []


def _screen_of(call: CallRecord, steps: dict[int, StepRecord]) -> str | None:
    """The screen a call was made at: the Worker's before its step, a Manager update's after it."""
    if call.role == "manager" and call.step < 0:
        first = steps.get(0)
        return first.before_screen if first else None
    step = steps.get(call.step)
    if step is None:
        return None
    if call.role == "worker" or step.action_result is None:  # an action never run changed nothing
        return step.before_screen
    return step.after_screen


class _Labeller:
    """Plans per visited state of one run (each state planned once)."""

    def __init__(self, run: LoadedRun, task: Task, replay: _Replay) -> None:
        self.run, self.task, self.replay = run, task, replay
        recorded = run.run.models.get("worker", {})
        self.model = ModelConfig.model_validate(
            {k: v for k, v in recorded.items() if k in ModelConfig.model_fields}
        )
        self.expert = expert_plan(task, self.model.observation, self.model)
        self._plans: dict[str, OraclePlan | None] = {}

    def plan(self, ref: str) -> OraclePlan | None:
        if ref not in self._plans:
            executed = self.replay.states[ref]
            self._plans[ref] = plan_from(self.task, executed, self.expert, self.model.observation, self.model)
        return self._plans[ref]

    def label(self, call: CallRecord, ref: str | None) -> tuple[str, OraclePlan] | str:
        """``(completion, plan)`` for a Manager/Worker call, or why it has none."""
        if ref is None:
            return "no recorded screen for the call"
        if ref not in self.replay.states:
            return self.replay.stopped or "the state was not replayed"
        plan = self.plan(ref)
        if plan is None:
            return "no plan from the state finishes the task"
        goal = self.task.goal
        if call.role == "manager":
            return manager_label(plan, goal, first=call.step < 0), plan
        if plan.raw is None:
            return "the task is done here (the Manager's Finished ends the run)"
        return worker_label(plan, self.replay.observations[ref], goal), plan


def correct_runs(
    runs: Sequence[Path | str], out: Path | str, *, progress: Callable[[int], None] | None = None
) -> CorrectionStats:
    """Oracle-labelled copies of the failed SimPhone ``runs`` under ``out`` (module docstring).

    Runs without a SimPhone instance in ``eval`` (task, seed) or that succeeded are read and
    skipped. ``progress`` is advanced by 1 after each run.
    """
    from agent_runtime.simphone.tasks import make_task

    root = Path(out).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    stats = CorrectionStats()
    for run_dir in runs:
        run = load_run(run_dir)
        stats.runs += 1
        evaluation = run.run.eval or {}
        if evaluation.get("task_success") is not False or "task" not in evaluation:
            if progress is not None:
                progress(1)
            continue
        try:
            task = make_task(str(evaluation["task"]), int(evaluation.get("seed", 0)))
            labeller = _Labeller(run, task, _replay(run, task))
        except TaskError as exc:  # an unknown template, or an expert that fails on it
            stats.skipped[run.dir.name] = exc.message
            if progress is not None:
                progress(1)
            continue
        steps = {s.step: s for s in run.steps}
        calls, labelled = [], 0
        for call in run.calls:
            calls.append(_relabel(call, labeller, steps, stats))
            labelled += CORRECTION_KEY in calls[-1].extra
        stats.states += len(labeller.replay.states)
        if labelled:
            stats.labelled_runs += 1
            _write_run(run, root / run.dir.name, calls, evaluation)
        if progress is not None:
            progress(1)
    return stats


def _relabel(
    call: CallRecord, labeller: _Labeller, steps: dict[int, StepRecord], stats: CorrectionStats
) -> CallRecord:
    if call.role not in LABELLED_ROLES:
        why = f"the model's own {call.role} reply (corrections label the Manager and Worker)"
        return call.model_copy(update={"extra": call.extra | {NOT_A_TARGET: why}})
    found = labeller.label(call, _screen_of(call, steps))
    if isinstance(found, str):
        stats.unlabelled[found] = stats.unlabelled.get(found, 0) + 1
        return call.model_copy(
            update={"extra": call.extra | {NOT_A_TARGET: f"no oracle correction: {found}"}}
        )
    completion, plan = found
    try:
        parsed = (
            parse_worker(completion, indices=shows_tree(labeller.model.observation))
            if call.role == "worker"
            else parse_manager(completion)
        )
    except ParseError as exc:  # the oracle's reply must parse as the demonstrations' do
        raise TaskError(
            f"{labeller.task.name}: the oracle's {call.role} correction does not parse: {exc}"
        ) from None
    stats.labels[call.role] = stats.labels.get(call.role, 0) + 1
    stats.off_path += not plan.on_path
    extra = {k: v for k, v in call.extra.items() if k != NOT_A_TARGET}
    mark = {"plan": plan.kind, "on_path": plan.on_path, "model_reply": call.completion}
    return call.model_copy(
        update={
            "completion": completion,
            "parsed": parsed.model_dump(mode="json"),
            "parse_error": None,
            "model": ORACLE_MODEL,
            "extra": extra | {CORRECTION_KEY: mark},
        }
    )


def _write_run(run: LoadedRun, dest: Path, calls: list[CallRecord], evaluation: dict[str, Any]) -> None:
    """The run under ``dest``: screenshots linked, calls rewritten, steps without critic labels,
    run.json last (a half-written copy is never read as a run)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        run.dir,
        dest,
        ignore=shutil.ignore_patterns(
            "run.json", "calls.jsonl", "steps.jsonl", "critic*.jsonl", "checkpoint.sqlite*", "*.tmp", "*.torn"
        ),
        copy_function=_link,
    )
    (dest / "calls.jsonl").write_text(
        "".join(dumps(c.model_dump(mode="json")) + "\n" for c in calls), "utf-8"
    )
    steps = [s.model_copy(update={"critic": None}) for s in run.steps]
    (dest / "steps.jsonl").write_text(
        "".join(dumps(s.model_dump(mode="json")) + "\n" for s in steps), "utf-8"
    )
    marked = {
        **evaluation,
        "task_success": True,
        "score": 1.0,
        "source": "oracle corrections",
        "rollout_success": evaluation.get("task_success"),
    }
    record = run.run.model_copy(update={"eval": marked, "critic": None}).model_dump(mode="json")
    record[CORRECTION_KEY] = {"source": str(run.dir)}
    (dest / "run.json").write_text(dumps(record, indent=2), encoding="utf-8")


def _link(src: str, dst: str) -> str:
    """Hard-link screenshots (never rewritten); copy anything else."""
    if Path(src).parent.name == "screens":
        try:
            os.link(src, dst)
            return dst
        except OSError:
            pass
    return str(shutil.copy2(src, dst))
