"""SimPhone demonstrations for every role, written as ordinary runtime traces.

The oracle plays train-split tasks (:mod:`agent_runtime.trainers.demos.plans`); at every step
each role gets the inputs it would get in a real run — built by the graph's own builders
(:mod:`agent_runtime.graphs.inputs`), rendered with the runtime's templates, in the configured
observation mode — and the *ideal* reply as its completion:

* Manager: the subgoal plan first, then after every step the updated Historical Operations and
  remaining plan (``Finished`` at the end);
* Worker: thought, the expert's action (element-index form in ``ui_tree``/``both`` mode), and
  a description naming the element;
* Reflector: ``A`` for actions that did what they should, and — with ``perturb`` P — realistic
  failures: with probability P the run executes a wrong action instead (``C``: nothing changed;
  ``B``: a wrong page, after which the ideal Worker goes Back) and then the expert recovers.
  The wrong action itself gets no Worker call — it must never become a Worker target;
* Notetaker: the notes so far plus what later steps need (entered text, the answer on screen).

Each episode is a run directory written by :class:`~agent_runtime.traces.TraceWriter` (run.json
with ``eval.task_success``, steps.jsonl, calls.jsonl, screens/), so ``agent-runtime distill
--method sft --runs-dir DIR`` consumes it like any other run. Every completion is parsed with
the role's own parser before it is written: a demonstration never teaches an unparseable reply.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agent_runtime.actions import Action, SystemButton, parse_action
from agent_runtime.config import GraphConfig, ModelConfig, ObservationMode, PromptSet, RuntimeConfig
from agent_runtime.errors import ConfigError, TaskError
from agent_runtime.graphs.inputs import (
    fold_history,
    images_for,
    manager_inputs,
    notetaker_inputs,
    reflector_inputs,
    tree_text,
    worker_inputs,
)
from agent_runtime.graphs.state import AgentState
from agent_runtime.observation import Observation
from agent_runtime.roles import manager, notetaker, reflector, worker
from agent_runtime.roles.caller import ImageInput
from agent_runtime.roles.notes import NoteStore
from agent_runtime.roles.templates import role_template
from agent_runtime.traces import CallRecord, RunRecord, StepRecord, TraceWriter, Verdict, new_run_id
from agent_runtime.trainers.data.worker_prompts import format_worker_reply
from agent_runtime.trainers.demos.plans import (
    ExpertPlan,
    PlannedStep,
    check_in_sync,
    expert_plan,
    find_mistake,
)

if TYPE_CHECKING:
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import Task

ORACLE_MODEL = "simphone-oracle"
ROLES = ("manager", "worker", "reflector", "notetaker")
_BACK = SystemButton(button="Back")


class DemoOptions(BaseModel):
    """What to demonstrate and how the trained roles will be called."""

    split: str = Field("train", description="train | test | all")
    tasks: str | None = Field(None, description="template names: globs or re:REGEX, comma-separated")
    episodes: int = Field(1, ge=1, description="instances per template")
    seed: int = Field(0, ge=0, description="first seed scanned for instances")
    observation: ObservationMode = "ui_tree"
    prompts: PromptSet = Field("full", description="the prompt set the trained model will run with")
    perturb: float = Field(0.0, ge=0.0, le=1.0, description="chance of a wrong action at a step")
    roles: tuple[str, ...] = Field(ROLES, description="roles whose calls are recorded")
    update_share: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="share of Manager plan updates recorded (first plans always are): updates are "
        "many and mechanical, first plans few and hard, and training time is per call",
    )
    model: ModelConfig = Field(
        default_factory=ModelConfig, description="coordinate space and image budget (screenshot modes)"
    )

    def role_model(self) -> ModelConfig:
        return self.model.model_copy(update={"observation": self.observation, "prompts": self.prompts})


class DemoReport(BaseModel):
    """What ``write_demos`` wrote."""

    runs: list[str] = Field(default_factory=list, description="run directories written")
    episodes: int = 0
    steps: int = 0
    perturbed: int = Field(0, description="wrong actions recorded (Reflector B/C targets)")
    calls: dict[str, int] = Field(default_factory=dict, description="role -> calls written")
    skipped: dict[str, str] = Field(default_factory=dict, description="task/seed -> why no run was kept")
    seconds: float = 0.0


def write_demos(
    options: DemoOptions, out_dir: Path | str, *, on_episode: Callable[[str], None] | None = None
) -> DemoReport:
    """Demonstrations for every selected task instance under ``out_dir`` (one run each)."""
    from agent_runtime.simphone.tasks import select, task_instances

    if options.split not in ("train", "test", "all"):
        raise ConfigError(f"unknown split {options.split!r}", hint="use train, test or all")
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = DemoReport()
    tasks = task_instances(
        select(options.tasks), split=options.split, episodes=options.episodes, seed=options.seed
    )  # type: ignore[arg-type]
    for task in tasks:
        key = f"{task.name}/{task.seed}"
        episode = _Episode(task, options, out)
        kept = episode.record()
        report.episodes += 1
        if kept is None:
            report.skipped[key] = episode.why
        else:
            report.runs.append(str(kept))
            report.steps += episode.step
            report.perturbed += episode.perturbed
            for role, n in episode.calls.items():
                report.calls[role] = report.calls.get(role, 0) + n
        if on_episode is not None:
            on_episode(key)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


class _Episode:
    """One task instance recorded as one run (see the module doc)."""

    def __init__(self, task: Task, options: DemoOptions, out: Path) -> None:
        self.task = task
        self.options = options
        self.mode = options.observation
        self.model = options.role_model()
        self.rng = random.Random(f"demo/{task.name}/{task.seed}/{options.perturb}")
        self.keep_rng = random.Random(f"keep/{task.name}/{task.seed}/{options.update_share}")
        self.run_id = new_run_id() + f"-{task.name.lower()[:24]}-{task.seed}"
        self.dir = out / self.run_id
        self.why = ""
        self.step = 0
        self.perturbed = 0
        self.calls: dict[str, int] = {}
        self.executed: list[Action] = []
        self.state: AgentState = AgentState(
            task=task.goal,
            platform="mobile",
            planned=False,
            plan=[],
            completed=[],
            notes=[],
            history=[],
            failures=0,
        )
        self.writer: TraceWriter | None = None
        self.phone: SimPhone | None = None
        self.screen_index = 0

    # -- the episode ------------------------------------------------------------------------------
    def record(self) -> Path | None:
        """Write the run; None (and ``why``) when the expert cannot solve this instance."""
        from agent_runtime.simphone.tasks import split_of
        from agent_runtime.simphone.tasks.oracle import OracleError
        from agent_runtime.trainers.demos.plans import replica

        try:
            plan = expert_plan(self.task, self.mode, self.model)
        except OracleError as exc:
            self.why = f"the expert failed: {exc.message}"
            return None
        if not plan.success:
            self.why = "the expert's episode was not judged successful"
            return None
        self.phone = replica(self.task, [])
        self.writer = TraceWriter(self.dir)
        record = RunRecord(
            run_id=self.run_id,
            task=self.task.goal,
            device=self.phone.info().model_dump(mode="json"),
            models={role: {**self.model.public(), "model": ORACLE_MODEL, "prompt": None} for role in ROLES},
            config=RuntimeConfig(models={"default": self.model}, graph=GraphConfig()).public(),
        )
        self.writer.write_run(record)
        try:
            answer = self._play(plan)
            score = float(self.task.is_successful(self.phone, answer))
        except TaskError as exc:  # the recorded run left the expert's path: keep nothing of it
            self.writer.close()
            shutil.rmtree(self.dir, ignore_errors=True)
            self.why = exc.message
            return None
        finally:
            self.phone.close()
        done = record.model_copy(
            update={
                "status": "completed",
                "success": score >= 1.0,
                "answer": answer,
                "steps": self.step,
                "finished_at": time.time(),
                "eval": {
                    "task": self.task.name,
                    "seed": self.task.seed,
                    "split": split_of(self.task),
                    "task_success": score >= 1.0,
                    "score": score,
                    "source": "oracle",
                    "observation": self.mode,
                    "perturb": self.options.perturb,
                },
            }
        )
        self.writer.write_run(done)
        self.writer.close()
        return self.dir

    def _play(self, plan: ExpertPlan) -> str | None:
        assert self.phone is not None
        obs, ref = self._observe()
        self.state["plan"] = list(plan.subgoals)
        self._manager(obs, ref, None, thought=_plan_thought(self.task.goal, plan), done=False)
        self.state["planned"] = True
        for planned in plan.steps:
            check_in_sync(planned, obs, self.task)
            if planned.kind != "answer" and self.rng.random() < self.options.perturb:
                mistake = find_mistake(
                    self.task, self.executed, obs, self.mode, self.model, planned.screen, self.rng
                )
                if mistake is not None:
                    self.perturbed += 1
                    feedback = _feedback(mistake.outcome, mistake.description)
                    obs, ref = self._step(
                        obs,
                        ref,
                        mistake.raw,
                        mistake.screen,
                        mistake.description,
                        (mistake.outcome, feedback),
                        record_worker=False,  # a wrong action must never become a Worker target
                    )
                    if mistake.outcome == "B":
                        obs, ref = self._step(
                            obs,
                            ref,
                            _BACK.to_json(),
                            [_BACK.to_json()],
                            "Go back to the previous screen.",
                            ("A", ""),
                        )
                    check_in_sync(planned, obs, self.task)
            if planned.kind == "answer":
                self._worker(obs, ref, planned.raw, planned.description)
                self._commit(self._pending(obs, ref, planned.raw, planned.description), planned.raw)
                return plan.answer
            obs, ref = self._step(
                obs, ref, planned.raw, planned.screen, planned.description, ("A", ""), planned
            )
        return None

    # -- one step: Worker → execute → Reflector + Notetaker → Manager ---------------------------------
    def _step(
        self,
        obs: Observation,
        ref: str,
        raw: dict[str, Any],
        screen: list[dict[str, Any]],
        description: str,
        verdict: tuple[str, str],
        planned: PlannedStep | None = None,
        *,
        record_worker: bool = True,
    ) -> tuple[Observation, str]:
        assert self.phone is not None
        self._worker(obs, ref, raw, description, record=record_worker)
        pending = self._pending(obs, ref, raw, description)
        result = None
        for action_json in screen:
            action = parse_action(action_json)
            result = self.phone.execute(action)
            self.executed.append(action)
        after, after_ref = self._observe()
        pending.update(
            action_result=result.model_dump(mode="json") if result else None,
            after_screen=after_ref,
            after_tree=tree_text(after),
            action_screen=screen[-1],
        )
        if len(screen) > 1:
            pending["screen_actions"] = screen
        outcome, feedback = verdict
        self._reflector(pending, after_ref, ref, outcome, feedback)
        success = outcome == "A"
        notes = self._notetaker(pending, after, after_ref, raw)
        if success and notes:
            store = NoteStore.from_state(self.state.get("notes"))
            store.merge(notes, pending["step"])
            self.state["notes"] = store.to_state()
        pending["verdict"] = {"outcome": outcome, "success": success, "feedback": feedback}
        self.state.update(fold_history(self.state, pending))  # type: ignore[typeddict-item]
        self._commit(pending, raw)
        closes = success and planned is not None and planned.closes_subgoal
        self._manager(
            after, after_ref, pending, thought=_update_thought(outcome, description, closes), done=closes
        )
        return after, after_ref

    def _pending(self, obs: Observation, ref: str, raw: dict[str, Any], description: str) -> dict[str, Any]:
        plan = self.state.get("plan", [])
        return {
            "step": self.step,
            "subgoal": plan[0] if plan else self.task.goal,
            "plan": list(plan),
            "completed": list(self.state.get("completed", [])),
            "before_screen": ref,
            "before_tree": tree_text(obs),
            "action": raw,
            "description": description,
            "thought": self._worker_thought,
        }

    def _commit(self, pending: dict[str, Any], raw: dict[str, Any]) -> None:
        assert self.writer is not None
        verdict = pending.get("verdict")
        extra = {"screen_actions": pending["screen_actions"]} if pending.get("screen_actions") else {}
        self.writer.append_step(
            StepRecord(
                step=pending["step"],
                subgoal=pending["subgoal"],
                plan=pending["plan"],
                completed=pending["completed"],
                thought=pending["thought"],
                description=pending["description"],
                before_screen=pending["before_screen"],
                after_screen=pending.get("after_screen"),
                action=raw,
                action_screen=pending.get("action_screen") or raw,
                action_result=pending.get("action_result"),
                verdict=Verdict(**verdict) if verdict else None,
                notes=NoteStore.from_state(self.state.get("notes")).render(),
                **extra,
            )
        )
        self.step += 1

    # -- role calls ---------------------------------------------------------------------------------
    def _worker(
        self, obs: Observation, ref: str, raw: dict[str, Any], description: str, *, record: bool = True
    ) -> None:
        inputs = worker_inputs(
            self.state, obs=obs, mode=self.mode, device_word="phone", platform="mobile", model=self.model
        )
        last = (self.state.get("history") or [None])[-1]
        retry = " The previous attempt failed, so I correct course." if last and not last["success"] else ""
        self._worker_thought = (
            f'The current subgoal is "{inputs.subgoal}".{retry}{_target(obs, raw)} Next: {description}'
        )
        if not record:
            return
        completion = format_worker_reply(self._worker_thought, raw, description)
        tree = self.mode in ("ui_tree", "both")

        def parse(text: str) -> Any:
            return worker.parse_worker(text, "mobile", screen=obs if tree else None, indices=tree)

        self._call("worker", worker.TEMPLATE, inputs.model_dump(), completion, parse, [(obs, ref)])

    def _reflector(
        self, pending: dict[str, Any], after_ref: str, before_ref: str, outcome: str, feedback: str
    ) -> None:
        assert self.phone is not None
        inputs = reflector_inputs(
            self.state,
            pending,
            mode=self.mode,
            device_word="phone",
            worker_model=self.model,
            screen_size=self.phone.screen_size,
            device_report="",
        )
        completion = f"### Outcome ###\n{outcome}\n\n### Error Description ###\n{feedback or 'None'}\n"
        shots = [(None, before_ref), (None, after_ref)]
        self._call(
            "reflector", reflector.TEMPLATE, inputs.model_dump(), completion, reflector.parse_reflector, shots
        )

    def _notetaker(
        self, pending: dict[str, Any], after: Observation, after_ref: str, raw: dict[str, Any]
    ) -> str:
        inputs = notetaker_inputs(self.state, pending, mode=self.mode, device_word="phone")
        notes = NoteStore.from_state(self.state.get("notes"))
        notes.merge("\n".join(_new_notes(self.task, after, raw)), pending["step"])
        text = notes.render()
        completion = f"### Important Notes ###\n{text or 'None'}\n"
        self._call(
            "notetaker",
            notetaker.TEMPLATE,
            inputs.model_dump(),
            completion,
            notetaker.parse_notetaker,
            [(after, after_ref)],
        )
        return text

    def _manager(
        self, obs: Observation, ref: str, pending: dict[str, Any] | None, *, thought: str, done: bool
    ) -> None:
        inputs = manager_inputs(
            self.state, pending, obs=obs, mode=self.mode, device_word="phone", graph=GraphConfig()
        )
        plan = list(self.state.get("plan", []))
        completed = list(self.state.get("completed", []))
        if done and plan:
            completed = [plan.pop(0), *completed]
        plan_text = "\n".join(f"{i}. {p}" for i, p in enumerate(plan, 1)) or "Finished"
        if inputs.init:
            completion = f"### Thought ###\n{thought}\n\n### Plan ###\n{plan_text}\n"
        else:
            history = "\n".join(f"- {c}" for c in completed) or "None"
            completion = (
                f"### Thought ###\n{thought}\n\n### Historical Operations ###\n{history}\n\n"
                f"### Plan ###\n{plan_text}\n"
            )
        self._call(
            "manager", manager.TEMPLATE, inputs.model_dump(), completion, manager.parse_manager, [(obs, ref)]
        )
        self.state["plan"], self.state["completed"] = plan, completed

    def _call(
        self,
        role: str,
        template: str,
        variables: dict[str, Any],
        completion: str,
        parse: Callable[[str], Any],
        shots: list[tuple[Observation | None, str]],
    ) -> None:
        """Render exactly as :class:`~agent_runtime.roles.caller.RoleCaller` does, parse, record
        (unless ``roles``/``update_share`` leave this call out)."""
        assert self.writer is not None and self.phone is not None
        step = self.step if role != "manager" else (self.step - 1 if self.state.get("planned") else -1)
        if role not in self.options.roles:
            return
        if role == "manager" and step >= 0 and self.keep_rng.random() >= self.options.update_share:
            return
        prompt = role_template(template, self.model.prompts).render(**variables)
        content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        seen = self.model.budget.resized(self.phone.screen_size)
        for image in images_for(self.mode, *(ImageInput(b"", ref) for _, ref in shots)):
            content.append({"type": "image_ref", "ref": image.ref, "size": [seen.width, seen.height]})
        parsed = parse(completion)
        self.writer.append_call(
            CallRecord(
                run_id=self.run_id,
                step=step,
                role=role,
                model=ORACLE_MODEL,
                messages=[{"role": "user", "content": content}],
                completion=completion,
                parsed=parsed.model_dump(mode="json"),
                extra={"demonstration": True},
            )
        )
        self.calls[role] = self.calls.get(role, 0) + 1

    def _observe(self) -> tuple[Observation, str]:
        assert self.phone is not None and self.writer is not None
        obs = self.phone.observe()
        ref = self.writer.save_screen(self.screen_index, obs.screenshot)
        self.screen_index += 1
        return obs, ref

    _worker_thought: str = ""


def _target(obs: Observation, raw: dict[str, Any]) -> str:
    """`` Target: LABEL [i].`` for an element-index action: the row as the compact tree writes it,
    so the model names the element first and then copies the index that follows it there."""
    index = raw.get("index")
    if not isinstance(index, int) or not 0 <= index < len(obs.elements):
        return ""
    label = obs.elements[index].label
    return f" Target: {label} [{index}]." if label else f" Target: [{index}]."


def _plan_thought(goal: str, plan: ExpertPlan) -> str:
    return f'To complete "{goal}", work through {len(plan.subgoals)} subgoal(s) in order.'


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


_SPACE = re.compile(r"\s+")


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


def demo_summary(report: DemoReport) -> str:
    """One line for the CLI."""
    return json.dumps(report.model_dump(mode="json"), ensure_ascii=False)
