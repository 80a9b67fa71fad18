"""``agent-runtime evolve``: the self-evolving loop as one resumable run.

Layout of ``OUT``:

* ``evolve.json`` — the run's state: its options, the start, the promoted model and each
  iteration's decision (rewritten atomically after every stage);
* ``iter_0000/eval.json`` — the start's evaluation on the selection instances, the first model to beat;
* ``iter_NNNN/`` — one iteration: ``stages/STAGE.json`` (a stage's summary, written when it
  finishes: what ``--resume`` skips), ``rollouts/`` + ``rollouts.json``, ``corrections/``
  (the oracle's labels of the failed rollouts' states), ``demos/`` and ``hinted/`` (hint-guided
  rejection sampling), ``data/`` (the SFT data: links to runs), ``sft/``, ``irr/``,
  ``rl/`` (distill outputs), ``eval.json`` and ``manifest.json`` (the iteration: stages, candidate,
  clustered test, decision);
* ``best/`` — the promoted adapter, a complete distill output (``--base OUT/best`` or
  ``model = "transformers:OUT/best"`` serves it), with ``evolve.json`` saying where it came from;
* ``final/`` — the final test: the start and the model finally kept, each scored once on the
  final instances of the trained templates and on the template-held-out templates;
* ``report.json`` — per-iteration and per-template selection results, the gate's levels and the
  final test with its template-clustered test, rewritten after each eval.

Promotion is decided on the selection instances by the gate (:mod:`.gate`): the candidate
replaces the current model only when it solves more instances and the one-sided
template-clustered p-value is at most ``promote_alpha`` split over the planned iterations.
Otherwise the previous model stays, and the iteration's data is carried over: the next iteration
trains on it again, together with its own (data is "used" once a model trained on it has been
promoted). Train, selection and final instances are disjoint, and the template-held-out
templates (:data:`~agent_runtime.simphone.tasks.registry.TEMPLATE_HELDOUT`) are never trained on.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.config import RuntimeConfig
from agent_runtime.errors import ConfigError, TrainingError
from agent_runtime.evaluation.paired import ClusteredResult
from agent_runtime.evaluation.report import EvalReport
from agent_runtime.models.refs import MANIFEST
from agent_runtime.trainers.evolve.extras import require_extras
from agent_runtime.trainers.evolve.gate import FinalTest, decide, final_test, iteration_alpha, min_templates
from agent_runtime.trainers.evolve.options import EvolveOptions, Stage
from agent_runtime.trainers.iterations import iteration_dir

Echo = Callable[[str], None]
Advance = Callable[[int], None]
Track = Callable[[str, int | None], Advance]
STATE_FILE = "evolve.json"
#: 2: selection/final instance sets, the clustered gate and its planned iterations (issue 33).
SCHEMA_VERSION = 2
#: Where the start's held-out evaluation lives (iteration 0 has only this stage).
START = 0


class Promotion(BaseModel):
    """One iteration's decision."""

    iteration: int
    candidate: str | None = Field(description="the candidate model ref (None: the iteration trained nothing)")
    paired: ClusteredResult | None = Field(
        None, description="the template-clustered test against the current model"
    )
    alpha: float | None = Field(None, description="the level this iteration was tested at (gate.py)")
    promoted: bool
    reason: str


class Best(BaseModel):
    """The model to beat: its ref, the iteration that produced it (0: the start), its selection eval."""

    iteration: int
    ref: str
    eval_path: str


class EvolveState(BaseModel):
    """``OUT/evolve.json``."""

    schema_version: int = SCHEMA_VERSION
    options: dict[str, Any]
    start: str
    planned_iterations: int = Field(
        description="the iterations the run's promote_alpha is split over (fixed at its start)"
    )
    best: Best | None = None
    decisions: list[Promotion] = Field(default_factory=list)
    carried: list[str] = Field(
        default_factory=list, description="run dirs not yet in a promoted model's data"
    )
    final: FinalTest | None = Field(None, description="the final test, once the iterations are done")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _silent_track(description: str, total: int | None) -> Advance:
    def advance(n: int = 1) -> None:
        """No progress display was asked for."""

    return advance


def in_process_ref(ref: str) -> str:
    """A model ref the runtime loads in-process: ``transformers:``/``gguf:`` refs as they are, a
    distill output directory as ``transformers:DIR``."""
    if ref.startswith(("transformers:", "gguf:")):
        return ref
    return f"transformers:{Path(ref).expanduser().resolve()}"


def training_ref(ref: str) -> str:
    """The same model as ``distill --base`` takes it (no ``transformers:`` prefix needed)."""
    return ref.removeprefix("transformers:")


class Evolution:
    """One ``evolve`` run (module docstring). ``runtime`` is the configuration every episode runs
    with; the evolved model's entry is pointed at the current model for each stage."""

    def __init__(
        self,
        opts: EvolveOptions,
        runtime: RuntimeConfig,
        *,
        echo: Echo | None = None,
        track: Track | None = None,
    ) -> None:
        self.opts = opts
        self.echo = echo or (lambda _text: None)
        self.track = track or _silent_track
        roles = opts.roles()
        if not roles:
            raise ConfigError("--role names no role")
        bound = {role: runtime.role(role) for role in roles}  # type: ignore[arg-type]
        name = opts.model or bound[roles[0]].model or "default"
        if name not in runtime.models:
            raise ConfigError(
                f"no [models.{name}] entry to evolve", hint="pass --model NAME naming a [models.NAME] entry"
            )
        for role, configured in bound.items():
            if (configured.model or "default") != name or not configured.enabled:
                raise ConfigError(
                    f"the {role} does not run on the evolved model {name!r}",
                    hint=f"set roles.{role}.model = {name!r} (and enable it), or drop it from --role",
                )
        self.model_name = name
        model = runtime.models[self.model_name]
        if not model.model.startswith(("transformers:", "gguf:")):
            raise ConfigError(
                f"evolve trains and serves [models.{self.model_name}] in-process, but it is served "
                f"at {model.base_url}",
                hint="use model = 'transformers:/path' or 'gguf:...' for the evolved model (no base_url)",
            )
        self.runtime = runtime
        self.out = opts.out.expanduser().resolve()
        require_extras(opts, opts.base or model.model, runtime.device.spec)  # before hours of work
        self._templates()
        self.state = self._prepare(opts.base or model.model)
        self._warn_if_the_gate_cannot_open()

    # -- state and layout --------------------------------------------------------------------

    def _templates(self) -> None:
        """The SimPhone templates each set is drawn from: training and selection never include a
        template-held-out one; the final test scores those separately."""
        from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT, select, trainable

        self.train_tasks = self.selection_tasks = ""
        self.heldout_templates: list[str] = []
        if self.opts.task_list is not None:
            return
        train, selection = trainable(select(self.opts.tasks)), trainable(select(self.opts.held_out_tasks()))
        for flag, names in (("--tasks", train), ("--eval-tasks", selection)):
            if not names:
                raise ConfigError(
                    f"{flag} selects only template-held-out templates, which evolve never trains on",
                    hint=f"choose others; held out: {', '.join(sorted(TEMPLATE_HELDOUT))}",
                )
        dropped = sorted(set(select(self.opts.tasks)) - set(train))
        if dropped:
            self.echo(f"template-held-out, never trained on (scored in the final test): {', '.join(dropped)}")
        # Exact names, comma-separated: a pattern every stage's task selection reads.
        self.train_tasks, self.selection_tasks = ",".join(train), ",".join(selection)
        if self.opts.heldout_episodes:
            self.heldout_templates = [n for n in select(self.opts.heldout_tasks) if n in TEMPLATE_HELDOUT]
            if not self.heldout_templates:
                raise ConfigError(
                    f"--heldout-tasks {self.opts.heldout_tasks!r} names no template-held-out template",
                    hint=f"choose some of: {', '.join(sorted(TEMPLATE_HELDOUT))} (or --heldout-episodes 0)",
                )

    def _warn_if_the_gate_cannot_open(self) -> None:
        """Say up front when no iteration can promote (issue 33: a gate that never opens is as
        useless as one that always does, and it should not take a whole run to find out)."""
        planned = self.state.planned_iterations
        if self.opts.iterations > planned:
            self.echo(
                f"warning: iterations {planned + 1}..{self.opts.iterations} cannot promote: the "
                f"run's promote_alpha was split over the {planned} iteration(s) planned at its start"
            )
        if self.opts.task_list is not None:
            templates = len(self.listed_part("selection"))
        else:
            templates = len(self.selection_tasks.split(","))
        level = iteration_alpha(self.opts.promote_alpha, planned, 1)
        if templates < min_templates(level):
            self.echo(
                f"warning: the gate can never promote: {templates} selection template(s), but a "
                f"clustered p-value ≤ {level:.3g} needs at least {min_templates(level)} templates "
                "that all improve (more --eval-tasks templates, fewer --iterations or a larger "
                "--promote-alpha)"
            )

    def _prepare(self, start: str) -> EvolveState:
        path = self.out / STATE_FILE
        if path.exists() and self.opts.resume:
            raw = json.loads(path.read_text(encoding="utf-8"))
            version = raw.get("schema_version", 1) if isinstance(raw, dict) else 1
            if version > SCHEMA_VERSION:
                raise ConfigError(
                    f"{path} was written by a newer agent-runtime", hint="upgrade agent-runtime"
                )
            if version < SCHEMA_VERSION:
                raise ConfigError(
                    f"{self.out} is an evolve run from before the selection/final split and the "
                    "clustered gate: its decisions were taken on instances the final test now "
                    "reserves, so it cannot be continued",
                    hint=f"start a new run in another --out (--base {self.out / 'best'} starts from "
                    "its promoted model, if it has one)",
                )
            return EvolveState.model_validate(raw)
        if path.exists() or any(self.out.glob("iter_*")):
            if not self.opts.overwrite:
                raise ConfigError(
                    f"{self.out} already holds an evolve run",
                    hint="pass --resume to continue, or --overwrite",
                )
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        state = EvolveState(
            options=self.opts.model_dump(mode="json"),
            start=start,
            planned_iterations=self.opts.gate_iterations or self.opts.iterations,
        )
        self._save(state)
        return state

    def _save(self, state: EvolveState | None = None) -> None:
        _atomic_write(self.out / STATE_FILE, (state or self.state).model_dump_json(indent=2))

    def _dir(self, iteration: int) -> Path:
        return iteration_dir(self.out, iteration)

    def _done(self, iteration: int, stage: str) -> dict[str, Any] | None:
        marker = self._dir(iteration) / "stages" / f"{stage}.json"
        if not marker.exists():
            return None
        data: dict[str, Any] = json.loads(marker.read_text(encoding="utf-8"))
        return data

    def _finish(self, iteration: int, stage: str, summary: dict[str, Any], seconds: float) -> None:
        marker = self._dir(iteration) / "stages" / f"{stage}.json"
        marker.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(marker, json.dumps({"stage": stage, "seconds": round(seconds, 1), **summary}, indent=2))

    def config_with(self, ref: str, *, runs_dir: Path, temperature: float | None = None) -> RuntimeConfig:
        """The runtime config with the evolved model at ``ref``, runs written under ``runs_dir``."""
        model = self.runtime.models[self.model_name]
        update: dict[str, Any] = {"model": in_process_ref(ref)}
        if temperature is not None:
            update["temperature"] = temperature
        models = {**self.runtime.models, self.model_name: model.model_copy(update=update)}
        runs = self.runtime.runs.model_copy(update={"dir": runs_dir})
        return self.runtime.model_copy(update={"models": models, "runs": runs})

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> EvolveState:
        """Evaluate the start (once), then run the iterations still to run; return the state."""
        if self._done(START, "eval") is None:
            self.echo(f"evaluating the start: {self.state.start}")
            started = time.perf_counter()
            report = self._evaluate(self.state.start, self._dir(START))
            self.state.best = Best(
                iteration=START, ref=self.state.start, eval_path=str(self._dir(START) / "eval.json")
            )
            self._save()
            self._finish(
                START, "eval", {"successes": report.successes, "n": report.n}, time.perf_counter() - started
            )
            self.echo(_eval_line("start", report))
        for it in range(1, self.opts.iterations + 1):
            for stage in self.opts.stages(it):
                if self._done(it, stage) is not None:
                    continue
                self.echo(f"iteration {it}: {stage}")
                started = time.perf_counter()
                summary = STAGES[stage](self, it)
                self._finish(it, stage, summary, time.perf_counter() - started)
            self._write_manifest(it)
        self._final_test()
        self._write_report()
        return self.state

    def _final_test(self) -> None:
        """Score the start and the model kept, once each, on the final instances (and the
        template-held-out templates); models already scored are read back, not played again."""
        kept = self.best
        s_inst, s_tmpl = self._final_reports(START, self.state.start)
        k_inst, k_tmpl = self._final_reports(kept.iteration, kept.ref)
        if s_inst is None or k_inst is None:
            self.state.final = None
            self._save()
            return
        note = (
            "template-held-out: templates this run never trained on; a start trained before "
            "they were held out of `simphone demos` (the shipped demo adapter saw all 65) has seen them"
            if s_tmpl is not None
            else ""
        )
        self.state.final = final_test(
            (START, self.state.start, s_inst, s_tmpl), (kept.iteration, kept.ref, k_inst, k_tmpl), note=note
        )
        self._save()
        final = self.state.final
        self.echo(
            f"final test: start {final.start.instance_heldout.successes}/{final.start.instance_heldout.n}, "
            f"kept (iteration {kept.iteration}) {final.kept.instance_heldout.successes}/"
            f"{final.kept.instance_heldout.n} instance-held-out"
        )

    def _final_reports(self, iteration: int, ref: str) -> tuple[EvalReport | None, EvalReport | None]:
        """One model's final-test reports (instance-held-out, template-held-out), cached under
        ``final/`` by the iteration that produced the model; (None, None) when the run has no
        final instances (a task list with a single test task)."""
        where = self.out / "final" / f"iter_{iteration:04d}"
        if self.opts.task_list is not None and not self.listed_part("final"):
            return None, None
        instances = self._evaluate(ref, where, split="final", name="instance-heldout.json")
        templates = None
        if self.heldout_templates:
            heldout = ",".join(self.heldout_templates)
            templates = self._evaluate(ref, where, split="final", name="template-heldout.json", tasks=heldout)
        return instances, templates

    # -- helpers shared by stages ---------------------------------------------------------------

    @property
    def best(self) -> Best:
        assert self.state.best is not None  # set by the start's evaluation
        return self.state.best

    def _evaluate(
        self,
        ref: str,
        where: Path,
        *,
        split: str = "selection",
        name: str | None = None,
        tasks: str | None = None,
    ) -> EvalReport:
        """Episodes of ``ref`` on ``split`` (train: rollouts; selection: what the gate decides on;
        final: the final test, read back when ``where/name`` holds the same instances); the report
        is saved beside. ``tasks`` overrides the split's templates (the template-held-out ones)."""
        from agent_runtime.evaluation import AgentPolicy, evaluate

        rollouts = split == "train"
        name = name or ("rollouts.json" if rollouts else "eval.json")
        episodes = {
            "train": self.opts.train_episodes,
            "selection": self.opts.eval_episodes,
            "final": self.opts.heldout_episodes if tasks is not None else self.opts.final_per_template(),
        }[split]
        # A template-held-out template was never trained on: any instance of it is held out, and
        # some have too few parameter sets to fill the final half alone.
        heldout = split == "final" and tasks is not None
        tasks = tasks or (self.train_tasks if rollouts else self.selection_tasks)
        if split == "final" and (cached := self._scored(where / name, tasks, episodes)) is not None:
            return cached
        where.mkdir(parents=True, exist_ok=True)
        runs_dir = where / (
            "rollouts" if rollouts else "eval-runs" if split == "selection" else f"{name[:-5]}-runs"
        )
        if runs_dir.exists():  # a stage cut off half-way is replayed from its start
            shutil.rmtree(runs_dir)
        temperature = self.opts.rollout_temperature if rollouts else None
        progress: dict[str, Advance] = {}
        label = {"train": "rollouts", "selection": "selection eval", "final": "final test"}[split]

        def on_plan(n: int) -> None:
            progress["advance"] = self.track(label, n)

        if self.opts.task_list is not None:
            listed = [t for t in self.listed() if t.split == "train"] if rollouts else self.listed_part(split)
            on_plan(len(listed))
            report = self._play_list(
                ref, runs_dir, "train" if rollouts else "test", temperature,
                on_result=lambda _r: progress["advance"](1), tasks=listed,
            )  # fmt: skip
            _atomic_write(where / name, report.model_dump_json(indent=2))
            return report
        policy = AgentPolicy(self.config_with(ref, runs_dir=runs_dir, temperature=temperature))
        # New train instances every iteration; the same selection (and final) instances every time.
        seed = self.opts.seed + (1000 * int(where.name.removeprefix("iter_")) if rollouts else 0)
        report = evaluate(
            policy,
            tasks=tasks,
            split="all" if heldout else split,
            episodes=episodes,
            seed=seed,
            workers=self.opts.workers,
            executor="thread",
            ray=self.opts.ray or policy.config.cluster.ray_address,  # --ray, else [cluster]
            on_plan=on_plan,
            on_result=lambda _r: progress["advance"](1),
            distinct=not rollouts,  # held-out instances are different tasks (clustered test, table)
        )
        _atomic_write(where / name, report.model_dump_json(indent=2))
        return report

    def _scored(self, path: Path, tasks: str, episodes: int) -> EvalReport | None:
        """The final-test report at ``path`` if it scored these instances (a model is scored
        once; a resumed run with other final-test options scores it again)."""
        if not path.exists():
            return None
        report = EvalReport.model_validate_json(path.read_text(encoding="utf-8"))
        if self.opts.task_list is not None:
            wanted = {str(t.id) for t in self.listed_part("final")}
            return report if set(report.per_task) == wanted else None
        same = set(report.per_task) == set(tasks.split(",")) and report.episodes == episodes
        return report if same and report.seed == self.opts.seed else None

    def listed_part(self, split: str) -> list[Any]:
        """A task list's tasks of ``split``: its train tasks, or one half of its test tasks.

        Test tasks are ordered by the sha256 of their id and dealt alternately to ``selection``
        and ``final``: disjoint by construction, independent of the file's order, and the
        selection half is never empty while there is a test task."""
        import hashlib

        if split == "train":
            return [t for t in self.listed() if t.split == "train"]
        tests = sorted(
            (t for t in self.listed() if t.split == "test"),
            key=lambda t: hashlib.sha256(str(t.id).encode()).hexdigest(),
        )
        return tests[0::2] if split == "selection" else tests[1::2]

    def listed(self) -> list[Any]:
        from agent_runtime.trainers.evolve.tasklist import load_task_list

        assert self.opts.task_list is not None
        return load_task_list(self.opts.task_list)

    def critic(self, *, steps: bool) -> Any:
        from agent_runtime.trainers.critics.judge import build_judge

        return build_judge(
            self.runtime, model=self.opts.critic_model, text_model=None, steps=steps, trajectory=not steps,
            max_images=8,
        )  # fmt: skip

    def _play_list(
        self,
        ref: str,
        runs_dir: Path,
        split: str,
        temperature: float | None,
        *,
        on_result: Callable[[Any], None] | None = None,
        hinted: list[Any] | None = None,
        tasks: list[Any] | None = None,
    ) -> EvalReport:
        """The task list's ``split`` on ``--device`` (module docstring of :mod:`.tasklist`), of
        ``tasks`` (default: the whole list) or of the ``hinted`` ones, played with their hints."""
        from agent_runtime.trainers.evolve.tasklist import play

        device = self.opts.device or self.runtime.device.spec
        config = self.config_with(ref, runs_dir=runs_dir, temperature=temperature)
        played: list[Any] = hinted if hinted is not None else tasks if tasks is not None else self.listed()
        judge = self.critic(steps=False)
        return play(
            played, config, device, judge, split=split, hinted=hinted is not None, on_result=on_result
        )

    def _candidate(self, it: int) -> str | None:
        """The newest model this iteration trained (rl over irr over sft), None when none."""
        for stage in ("rl", "irr", "sft"):
            done = self._done(it, stage)
            if done is not None and done.get("output"):
                return str(done["output"])
        return None

    def _write_manifest(self, it: int) -> None:
        # The stages that ran (a resumed run may have changed the options of later iterations).
        ran = {p.stem for p in (self._dir(it) / "stages").glob("*.json")}
        stages = {s: self._done(it, s) for s in STAGES if s in ran}
        decision = next((d for d in self.state.decisions if d.iteration == it), None)
        manifest = {
            "iteration": it,
            "recipe": self.opts.recipe,
            "started_from": (stages.get("sft") or {}).get("base"),
            "candidate": self._candidate(it),
            "stages": stages,
            "decision": decision.model_dump(mode="json") if decision else None,
            "best_after": self.best.model_dump(mode="json"),
        }
        _atomic_write(self._dir(it) / "manifest.json", json.dumps(manifest, indent=2))

    def _write_report(self) -> None:
        """``OUT/report.json``: every evaluated model's selection results per template, the
        gate's levels, and the final test (instance- and template-held-out, with its clustered
        test) once the iterations are done."""
        rows = []
        for it in range(START, self.opts.iterations + 1):
            path = self._dir(it) / "eval.json"
            if not path.exists():
                continue
            report = EvalReport.model_validate_json(path.read_text(encoding="utf-8"))
            decision = next((d for d in self.state.decisions if d.iteration == it), None)
            rows.append(
                {
                    "iteration": it,
                    "model": self.state.start if it == START else self._candidate(it),
                    "successes": report.successes,
                    "n": report.n,
                    "success_rate": report.success_rate,
                    "ci95": report.ci95,
                    "per_task": {name: f"{t.successes}/{t.n}" for name, t in report.per_task.items()},
                    "paired": decision.paired.model_dump() if decision and decision.paired else None,
                    "alpha": decision.alpha if decision else None,
                    "promoted": decision.promoted if decision else None,
                }
            )
        gate = {
            "test": "template-clustered sign-flip, one-sided (evaluation/paired.py)",
            "promote_alpha": self.opts.promote_alpha,
            "planned_iterations": self.state.planned_iterations,
            "selection_templates": self.selection_tasks.split(",") if self.selection_tasks else None,
            "template_heldout": self.heldout_templates,
        }
        final = self.state.final.model_dump(mode="json") if self.state.final else None
        whole = {"best": self.best.model_dump(mode="json"), "gate": gate, "rows": rows, "final": final}
        _atomic_write(self.out / "report.json", json.dumps(whole, indent=2))


def _eval_line(label: str, report: EvalReport) -> str:
    low, high = report.ci95
    return (
        f"{label}: {report.successes}/{report.n} held-out = {report.success_rate:.0%} "
        f"(95 % CI {low:.0%}-{high:.0%})"
    )


# -- stages -------------------------------------------------------------------------------------


def stage_rollouts(ev: Evolution, it: int) -> dict[str, Any]:
    report = ev._evaluate(ev.best.ref, ev._dir(it), split="train")
    ev.echo(_eval_line(f"rollouts of iteration {it} (train)", report).replace("held-out", "train"))
    return {"successes": report.successes, "n": report.n, "model": ev.best.ref}


def stage_critics(ev: Evolution, it: int) -> dict[str, Any]:
    """The step and trajectory critics label every rollout (``judge``'s models and code)."""
    from agent_runtime.traces import iter_runs, load_run
    from agent_runtime.trainers.critics.judge import build_judge, store

    judge = build_judge(
        ev.runtime,
        model=ev.opts.critic_model,
        text_model=None,
        steps=True,
        # task-list episodes were judged by the trajectory critic already, as they were played
        trajectory=ev.opts.task_list is None,
        max_images=8,
    )
    dirs = list(iter_runs(ev._dir(it) / "rollouts"))
    advance = ev.track("critics", len(dirs))
    labelled = 0
    for d in dirs:
        run = load_run(d)
        report = judge.judge(run)
        store(run, report)
        labelled += len(report.step_labels)
        advance(1)
    return {"runs": len(dirs), "step_labels": labelled}


def failed_instances(report: EvalReport) -> list[tuple[str, int]]:
    """Train instances no rollout solved (each once)."""
    solved = {(r.task, r.seed) for r in report.results if r.success}
    return sorted({(r.task, r.seed) for r in report.results if (r.task, r.seed) not in solved})


def stage_hints(ev: Evolution, it: int) -> dict[str, Any]:
    """Demonstrations of the failed instances (SimPhone's oracle, or a task list's own hints:
    :mod:`.tasklist`), then hint-guided rejection sampling of the current model against them."""
    from agent_runtime.trainers.data.hints import hint_guided
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

    report = EvalReport.model_validate_json((ev._dir(it) / "rollouts.json").read_text(encoding="utf-8"))
    failed = failed_instances(report)
    if not failed:
        return {"failed_instances": 0, "runs": []}
    model = ev.runtime.models[ev.model_name]
    demos_dir, hinted_dir = ev._dir(it) / "demos", ev._dir(it) / "hinted"
    for d in (demos_dir, hinted_dir, ev._dir(it) / "hinted-runs"):
        if d.exists():
            shutil.rmtree(d)
    if ev.opts.task_list is not None:
        demo_runs, skipped = _listed_demos(ev, it, {name for name, _ in failed}, demos_dir)
    else:
        demos = write_demos(
            DemoOptions(
                instances=failed,
                observation=model.observation,
                prompts=model.prompts,
                roles=tuple(ev.opts.roles()),
                model=model,
            ),
            demos_dir,
        )
        demo_runs, skipped = [Path(r) for r in demos.runs], demos.skipped
    if not demo_runs:
        return {"failed_instances": len(failed), "demos": 0, "skipped": skipped}
    from agent_runtime.trainers.data.hints import HINTED_ROLES, EngineHintGenerator

    generator = EngineHintGenerator.from_model_ref(
        training_ref(ev.best.ref), seed=ev.opts.seed + it, max_new_tokens=model.max_tokens or 256
    )
    advance = ev.track("hint-guided sampling (calls)", None)
    stats = hint_guided(
        demo_runs,
        hinted_dir,
        generator,
        # Reflector and Notetaker replies have no reasoning before their answer to verify.
        roles=tuple(r for r in ev.opts.roles() if r in HINTED_ROLES),
        k=ev.opts.hint_samples,
        fallback=ev.opts.hint_fallback,
        progress=advance,
    )
    return {
        "failed_instances": len(failed),
        "demos": len(demo_runs),
        "skipped": skipped,
        "hints": stats.model_dump(mode="json"),
    }


def stage_corrections(ev: Evolution, it: int) -> dict[str, Any]:
    """On-policy corrections: SimPhone's oracle labels the Manager and Worker calls at every state
    the iteration's failed rollouts visited (:mod:`.corrections`)."""
    from agent_runtime.traces import iter_runs
    from agent_runtime.trainers.evolve.corrections import correct_runs

    out = ev._dir(it) / "corrections"
    if out.exists():  # a stage cut off half-way is redone from its start
        shutil.rmtree(out)
    runs = list(iter_runs(ev._dir(it) / "rollouts"))
    stats = correct_runs(runs, out, progress=ev.track("oracle corrections (runs)", len(runs)))
    return stats.model_dump(mode="json")


def _listed_demos(ev: Evolution, it: int, failed: set[str], out: Path) -> tuple[list[Path], dict[str, str]]:
    """Task-list demonstrations: the failed train tasks that have hints, played again with them;
    the runs the critic judged correct, with the hints taken back out of their prompts."""
    from agent_runtime.traces import iter_runs
    from agent_runtime.trainers.evolve.tasklist import unhint_runs

    listed = {t.id: t for t in ev.listed()}
    with_hints = [t for t in listed.values() if t.id in failed and t.hints]
    skipped = {name: "no hints in the task list" for name in sorted(failed) if not listed[name].hints}
    if not with_hints:
        return [], skipped
    runs_dir = ev._dir(it) / "hinted-runs"
    report = ev._play_list(ev.best.ref, runs_dir, "train", None, hinted=with_hints)
    solved = {r.task for r in report.results if r.success}
    skipped |= {t.id: "failed even with its hints" for t in with_hints if t.id not in solved}
    good = [d for d in iter_runs(runs_dir) if _run_task(d) in solved]
    return unhint_runs(good, listed, out), skipped


def _run_task(run_dir: Path) -> str:
    from agent_runtime.traces import load_run

    return str((load_run(run_dir).run.eval or {}).get("task"))


def _link_runs(dirs: list[Path], data: Path) -> None:
    data.mkdir(parents=True, exist_ok=True)
    for i, d in enumerate(dirs):
        (data / f"{i:05d}-{d.name}").symlink_to(d, target_is_directory=True)


def stage_sft(ev: Evolution, it: int) -> dict[str, Any]:
    """SFT from the current model on this iteration's data and the data carried over, with
    earlier data replayed (self-evolve: :func:`_replay_pool`), warm-up, and the checkpoint kept
    that is best on held-aside train rows — the start's own weights included, in which case the
    iteration has no SFT candidate (continuing would only move the adapter off what it fits)."""
    from agent_runtime.traces import iter_runs
    from agent_runtime.trainers.data.filters.pipeline import FilterSettings
    from agent_runtime.trainers.distill import DataOptions, distill
    from agent_runtime.trainers.sft_config import SFTConfig

    here = ev._dir(it)
    new: list[Path] = []
    if ev.opts.recipe == "mobilerl":
        new += list(iter_runs(here / "demos"))
    else:
        new += list(iter_runs(here / "rollouts"))
        for made in ("corrections", "hinted"):
            if (here / made).is_dir():
                new += list(iter_runs(here / made))
    carried = [Path(p) for p in ev.state.carried if Path(p).is_dir()]
    data, out, replay = here / "data", here / "sft", here / "replay"
    for d in (data, out, replay):
        if d.exists():
            shutil.rmtree(d)
    _link_runs(carried + new, data)
    replayed: list[Path] = []
    if ev.opts.recipe == "self-evolve" and ev.opts.replay_ratio > 0:
        # mobilerl's SFT teaches a new format (no reasoning): its start's data would contradict it
        replayed = _replay_pool(ev, it, exclude=carried + new)
        _link_runs(replayed, replay)
    base = training_ref(ev.best.ref)
    import torch

    micro, accumulate = ev.opts.sft_split(gpu=torch.cuda.is_available())
    config = SFTConfig(
        base=base,
        output_dir=out,
        role=ev.opts.role,
        learning_rate=ev.opts.sft_lr,
        epochs=ev.opts.sft_epochs,
        max_steps=ev.opts.sft_max_steps,
        batch_size=micro,
        gradient_accumulation_steps=accumulate,
        warmup_ratio=ev.opts.sft_warmup,
        validation_fraction=ev.opts.sft_validation,
        seed=ev.opts.seed + it,
        progress=False,
    )
    options = DataOptions(
        runs_dir=data,
        max_samples=ev.opts.max_samples,
        filters=FilterSettings(seed=ev.opts.seed),
        replay_dir=replay if replayed else None,
        replay_ratio=ev.opts.replay_ratio,
    )
    try:
        manifest = distill("sft", config, options, echo=ev.echo, track=ev.track)
    except TrainingError as exc:
        if "filtered out" not in exc.message and not exc.message.startswith("no "):  # no data, not a fault
            raise
        ev.echo(f"iteration {it}: nothing to train on ({exc.message})")
        ev.state.carried = [str(p) for p in carried + new]
        ev._save()
        return {"output": None, "base": base, "runs": len(carried) + len(new), "why": exc.message}
    ev.state.carried = [str(p) for p in carried + new]  # used once a model trained on them is promoted
    ev._save()
    extra = manifest.training.extra
    summary = {
        "output": str(out),
        "base": base,
        "runs": len(carried) + len(new),
        "carried_runs": len(carried),
        "replay_runs": len(replayed),
        "replay": extra.get("replay"),
        "train_rows": manifest.data.train_rows,
        "final_loss": manifest.training.losses[-1].loss if manifest.training.losses else None,
        "validation": extra.get("validation"),
    }
    if (extra.get("validation") or {}).get("best_step") == 0:
        ev.echo(f"iteration {it}: no SFT step beat the start on the validation rows; no SFT candidate")
        return {**summary, "output": None, "why": "no SFT step beat the start on the validation rows"}
    return summary


def _replay_pool(ev: Evolution, it: int, *, exclude: list[Path]) -> list[Path]:
    """Runs of earlier data to replay: what the start was trained on (``--replay-runs``, else its
    manifest's source runs that exist here, else one oracle demonstration of every train template
    but the template-held-out ones, written once to ``OUT/replay-demos``) and the data of every
    earlier iteration."""
    from agent_runtime.models.refs import resolve_model_ref
    from agent_runtime.traces import iter_runs
    from agent_runtime.trainers.artifacts import read_manifest
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

    start: list[Path] = []
    if ev.opts.replay_runs is not None:
        start = list(iter_runs(ev.opts.replay_runs.expanduser()))
    else:
        adapter = resolve_model_ref(training_ref(ev.state.start)).adapter
        if adapter is not None and (Path(adapter) / MANIFEST).is_file():
            sources = read_manifest(adapter).data.source_runs
            start = [Path(p) for p in sources if Path(p).is_dir()]
    if not start and ev.opts.task_list is None:
        demos = ev.out / "replay-demos"
        if not (demos / "demos.json").is_file():
            if demos.exists():
                shutil.rmtree(demos)
            model = ev.runtime.models[ev.model_name]
            # every train template, as the start's own SFT data covers them all (not just --tasks)
            report = write_demos(
                DemoOptions(
                    exclude_heldout=True,
                    episodes=1,
                    seed=ev.opts.seed + 7919,  # instances other than the rollouts' first ones
                    observation=model.observation,
                    prompts=model.prompts,
                    roles=tuple(ev.opts.roles()),
                    model=model,
                ),
                demos,
            )
            (demos / "demos.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
        start = list(iter_runs(demos))
    earlier = [d for k in range(1, it) for d in iter_runs(ev._dir(k) / "data")]
    skip = {p.resolve() for p in exclude}
    seen: set[Path] = set()
    pool = []
    for d in (*start, *earlier):
        if d.resolve() not in skip and d.resolve() not in seen:
            seen.add(d.resolve())
            pool.append(d)
    return pool


def stage_demos(ev: Evolution, it: int) -> dict[str, Any]:
    """MobileRL's start: oracle demonstrations of the train tasks with the reasoning removed."""
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
    from agent_runtime.trainers.evolve.reasoning import strip_reasoning

    model = ev.runtime.models[ev.model_name]
    raw, demos = ev._dir(it) / "demos-raw", ev._dir(it) / "demos"
    for d in (raw, demos):
        if d.exists():
            shutil.rmtree(d)
    report = write_demos(
        DemoOptions(
            tasks=ev.train_tasks or None,  # never a template-held-out template
            episodes=ev.opts.train_episodes,
            seed=ev.opts.seed,
            observation=model.observation,
            prompts=model.prompts,
            roles=tuple(ev.opts.roles()),
            model=model,
        ),
        raw,
    )
    stripped = strip_reasoning([Path(r) for r in report.runs], demos, roles=tuple(ev.opts.roles()))
    return {"runs": len(report.runs), "calls_stripped": stripped, "skipped": report.skipped}


def stage_irr(ev: Evolution, it: int) -> dict[str, Any]:
    """Iterative Reasoning Refinement from the reasoning-free SFT model (``distill --method irr``)."""
    from agent_runtime.trainers.distill import DataOptions, distill
    from agent_runtime.trainers.irr_config import IRRConfig

    sft = ev._done(it, "sft") or {}
    if not sft.get("output"):
        return {"output": None, "why": "no SFT model to refine"}
    out = ev._dir(it) / "irr"
    config = IRRConfig(
        base=str(sft["output"]), output_dir=out, role="worker", seed=ev.opts.seed + it, progress=False
    )
    data = DataOptions(tasks=ev.train_tasks or None, episodes=ev.opts.train_episodes, overwrite=True)
    distill("irr", config, data, echo=ev.echo, track=ev.track)
    return {"output": str(out), "base": str(sft["output"])}


def stage_rl(ev: Evolution, it: int) -> dict[str, Any]:
    """Online DGRPO/TRPO from the iteration's newest model (or the current one)."""
    from agent_runtime.trainers.distill import DataOptions, distill
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.loop import RLOptions
    from agent_runtime.trainers.online.trpo_config import TRPOConfig

    start = ev._candidate(it) or training_ref(ev.best.ref)
    out = ev._dir(it) / "rl"
    config = (DGRPOConfig if ev.opts.rl == "dgrpo" else TRPOConfig)(
        base=training_ref(start),
        output_dir=out,
        role=ev.opts.rl_role,
        learning_rate=ev.opts.rl_lr,
        num_generations=ev.opts.group_size,
        seed=ev.opts.seed + it,
        progress=False,
    )
    rl = RLOptions(
        tasks=ev.train_tasks or None, episodes=ev.opts.rl_episodes, iterations=ev.opts.rl_iterations
    )
    runtime = ev.config_with(start, runs_dir=out / "runs")
    distill(
        ev.opts.rl, config, DataOptions(rl=rl, overwrite=True), echo=ev.echo, track=ev.track, runtime=runtime
    )
    return {"output": str(out), "base": start}


def stage_eval(ev: Evolution, it: int) -> dict[str, Any]:
    """The candidate on the selection instances (the same ones as every model of the run)."""
    candidate = ev._candidate(it)
    if candidate is None:
        return {"candidate": None}
    report = ev._evaluate(candidate, ev._dir(it))
    ev.echo(_eval_line(f"iteration {it}", report))
    ev._write_report()
    return {"candidate": candidate, "successes": report.successes, "n": report.n}


def stage_promote(ev: Evolution, it: int) -> dict[str, Any]:
    candidate = ev._candidate(it)
    ev.state.decisions = [d for d in ev.state.decisions if d.iteration != it]
    if candidate is None or not (ev._dir(it) / "eval.json").exists():
        decision = Promotion(iteration=it, candidate=None, promoted=False, reason="nothing was trained")
    else:
        best = EvalReport.model_validate_json(Path(ev.best.eval_path).read_text(encoding="utf-8"))
        new = EvalReport.model_validate_json((ev._dir(it) / "eval.json").read_text(encoding="utf-8"))
        alpha = iteration_alpha(ev.opts.promote_alpha, ev.state.planned_iterations, it)
        promoted, paired, reason = decide(best, new, alpha)
        decision = Promotion(
            iteration=it, candidate=candidate, paired=paired, alpha=alpha, promoted=promoted, reason=reason
        )
        if promoted:
            _publish(ev.out / "best", Path(candidate), it)
            ev.state.best = Best(
                iteration=it, ref=str(ev.out / "best"), eval_path=str(ev._dir(it) / "eval.json")
            )
            ev.state.carried = []
    ev.state.decisions.append(decision)
    ev._save()
    verdict = "promoted" if decision.promoted else "kept the previous model"
    ev.echo(f"iteration {it}: {verdict} ({decision.reason})")
    return decision.model_dump(mode="json")


def _publish(dst: Path, src: Path, iteration: int) -> None:
    """Copy a distill output to ``dst`` (replacing it) so later stages read a stable path."""
    tmp = dst.with_name(f".{dst.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        shutil.copy2(src / name, tmp / name)
    # The manifest names the adapter by its directory: point it at the copy.
    manifest = json.loads((src / MANIFEST).read_text(encoding="utf-8"))
    (tmp / MANIFEST).write_text(json.dumps({**manifest, "output": str(dst)}, indent=2), encoding="utf-8")
    (tmp / STATE_FILE).write_text(json.dumps({"iteration": iteration, "source": str(src)}), encoding="utf-8")
    if dst.exists():
        shutil.rmtree(dst)
    os.replace(tmp, dst)


STAGES: dict[Stage, Callable[[Evolution, int], dict[str, Any]]] = {
    "rollouts": stage_rollouts,
    "critics": stage_critics,
    "corrections": stage_corrections,
    "hints": stage_hints,
    "demos": stage_demos,
    "sft": stage_sft,
    "irr": stage_irr,
    "rl": stage_rl,
    "eval": stage_eval,
    "promote": stage_promote,
}
