"""``agent-runtime evolve``: the self-evolving loop as one resumable run.

Layout of ``OUT``:

* ``evolve.json`` — the run's state: its options, the start, the promoted model and each
  iteration's decision (rewritten atomically after every stage);
* ``iter_0000/eval.json`` — the start's held-out evaluation, the first model to beat;
* ``iter_NNNN/`` — one iteration: ``stages/STAGE.json`` (a stage's summary, written when it
  finishes: what ``--resume`` skips), ``rollouts/`` + ``rollouts.json``, ``demos/`` and ``hinted/``
  (hint-guided rejection sampling), ``data/`` (the SFT data: links to runs), ``sft/``, ``irr/``,
  ``rl/`` (distill outputs), ``eval.json`` and ``manifest.json`` (the iteration: stages, candidate,
  paired test, decision);
* ``best/`` — the promoted adapter, a complete distill output (``--base OUT/best`` or
  ``model = "transformers:OUT/best"`` serves it), with ``evolve.json`` saying where it came from;
* ``report.json`` — per-iteration and per-template held-out results, rewritten after each eval.

Promotion is a paired test on the same held-out instances (:mod:`agent_runtime.evaluation.paired`):
the candidate replaces the current model only when it solves more instances than it loses and the
one-sided exact McNemar p-value is at most ``promote_alpha``. Otherwise the previous model stays,
and the iteration's data is carried over: the next iteration trains on it again, together with
its own (data is "used" once a model trained on it has been promoted).
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
from agent_runtime.evaluation.paired import PairedResult, outcomes, paired_test
from agent_runtime.evaluation.report import EvalReport
from agent_runtime.models.refs import MANIFEST
from agent_runtime.trainers.evolve.options import EvolveOptions, Stage
from agent_runtime.trainers.iterations import iteration_dir

Echo = Callable[[str], None]
Advance = Callable[[int], None]
Track = Callable[[str, int | None], Advance]
STATE_FILE = "evolve.json"
SCHEMA_VERSION = 1
#: Where the start's held-out evaluation lives (iteration 0 has only this stage).
START = 0


class Promotion(BaseModel):
    """One iteration's decision."""

    iteration: int
    candidate: str | None = Field(description="the candidate model ref (None: the iteration trained nothing)")
    paired: PairedResult | None = None
    promoted: bool
    reason: str


class Best(BaseModel):
    """The model to beat: its ref, the iteration that produced it (0: the start), its held-out eval."""

    iteration: int
    ref: str
    eval_path: str


class EvolveState(BaseModel):
    """``OUT/evolve.json``."""

    schema_version: int = SCHEMA_VERSION
    options: dict[str, Any]
    start: str
    best: Best | None = None
    decisions: list[Promotion] = Field(default_factory=list)
    carried: list[str] = Field(
        default_factory=list, description="run dirs not yet in a promoted model's data"
    )


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
        self.state = self._prepare(opts.base or model.model)

    # -- state and layout --------------------------------------------------------------------

    def _prepare(self, start: str) -> EvolveState:
        path = self.out / STATE_FILE
        if path.exists() and self.opts.resume:
            state = EvolveState.model_validate_json(path.read_text(encoding="utf-8"))
            if state.schema_version > SCHEMA_VERSION:
                raise ConfigError(
                    f"{path} was written by a newer agent-runtime", hint="upgrade agent-runtime"
                )
            return state
        if path.exists() or any(self.out.glob("iter_*")):
            if not self.opts.overwrite:
                raise ConfigError(
                    f"{self.out} already holds an evolve run",
                    hint="pass --resume to continue, or --overwrite",
                )
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        state = EvolveState(options=self.opts.model_dump(mode="json"), start=start)
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
        self._write_report()
        return self.state

    # -- helpers shared by stages ---------------------------------------------------------------

    @property
    def best(self) -> Best:
        assert self.state.best is not None  # set by the start's evaluation
        return self.state.best

    def _evaluate(self, ref: str, where: Path, *, split: str = "test") -> EvalReport:
        """Held-out (or, for rollouts, train) episodes of ``ref``; the report is saved beside."""
        from agent_runtime.evaluation import AgentPolicy, evaluate

        where.mkdir(parents=True, exist_ok=True)
        rollouts = split == "train"
        runs_dir = where / ("rollouts" if rollouts else "eval-runs")
        if runs_dir.exists():  # a stage cut off half-way is replayed from its start
            shutil.rmtree(runs_dir)
        temperature = self.opts.rollout_temperature if rollouts else None
        iteration = int(where.name.removeprefix("iter_"))
        progress: dict[str, Advance] = {}

        def on_plan(n: int) -> None:
            progress["advance"] = self.track("rollouts" if rollouts else "held-out eval", n)

        if self.opts.task_list is not None:
            on_plan(sum(1 for t in self.listed() if t.split == split))
            report = self._play_list(
                ref, runs_dir, split, temperature, on_result=lambda _r: progress["advance"](1)
            )
            _atomic_write(
                where / ("rollouts.json" if rollouts else "eval.json"), report.model_dump_json(indent=2)
            )
            return report
        policy = AgentPolicy(self.config_with(ref, runs_dir=runs_dir, temperature=temperature))
        report = evaluate(
            policy,
            tasks=self.opts.tasks if rollouts else self.opts.held_out_tasks(),
            split=split,
            episodes=self.opts.train_episodes if rollouts else self.opts.eval_episodes,
            # New train instances every iteration; the same held-out instances every time.
            seed=self.opts.seed + 1000 * iteration if rollouts else self.opts.seed,
            workers=self.opts.workers,
            executor="thread",
            on_plan=on_plan,
            on_result=lambda _r: progress["advance"](1),
            distinct=not rollouts,  # held-out instances are different tasks (paired test, table)
        )
        name = "rollouts.json" if rollouts else "eval.json"
        _atomic_write(where / name, report.model_dump_json(indent=2))
        return report

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
    ) -> EvalReport:
        """The task list's ``split`` on ``--device`` (module docstring of :mod:`.tasklist`)."""
        from agent_runtime.trainers.evolve.tasklist import play

        device = self.opts.device or self.runtime.device.spec
        config = self.config_with(ref, runs_dir=runs_dir, temperature=temperature)
        tasks = hinted if hinted is not None else self.listed()
        judge = self.critic(steps=False)
        return play(tasks, config, device, judge, split=split, hinted=hinted is not None, on_result=on_result)

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
        """``OUT/report.json``: every evaluated model's held-out results, per template."""
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
                    "promoted": decision.promoted if decision else None,
                }
            )
        _atomic_write(
            self.out / "report.json",
            json.dumps({"best": self.best.model_dump(mode="json"), "rows": rows}, indent=2),
        )


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
    """SFT from the current model on this iteration's data and the data carried over."""
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
        if (here / "hinted").is_dir():
            new += list(iter_runs(here / "hinted"))
    carried = [Path(p) for p in ev.state.carried if Path(p).is_dir()]
    data, out = here / "data", here / "sft"
    for d in (data, out):
        if d.exists():
            shutil.rmtree(d)
    _link_runs(carried + new, data)
    base = training_ref(ev.best.ref)
    config = SFTConfig(
        base=base,
        output_dir=out,
        role=ev.opts.role,
        learning_rate=ev.opts.sft_lr,
        epochs=ev.opts.sft_epochs,
        max_steps=ev.opts.sft_max_steps,
        batch_size=ev.opts.sft_batch_size,
        seed=ev.opts.seed + it,
        progress=False,
    )
    options = DataOptions(
        runs_dir=data, max_samples=ev.opts.max_samples, filters=FilterSettings(seed=ev.opts.seed)
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
    return {
        "output": str(out),
        "base": base,
        "runs": len(carried) + len(new),
        "carried_runs": len(carried),
        "train_rows": manifest.data.train_rows,
        "final_loss": manifest.training.losses[-1].loss if manifest.training.losses else None,
    }


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
            tasks=ev.opts.tasks,
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
    data = DataOptions(tasks=ev.opts.tasks, episodes=ev.opts.train_episodes, overwrite=True)
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
    rl = RLOptions(tasks=ev.opts.tasks, episodes=ev.opts.rl_episodes, iterations=ev.opts.rl_iterations)
    runtime = ev.config_with(start, runs_dir=out / "runs")
    distill(
        ev.opts.rl, config, DataOptions(rl=rl, overwrite=True), echo=ev.echo, track=ev.track, runtime=runtime
    )
    return {"output": str(out), "base": start}


def stage_eval(ev: Evolution, it: int) -> dict[str, Any]:
    candidate = ev._candidate(it)
    if candidate is None:
        return {"candidate": None}
    report = ev._evaluate(candidate, ev._dir(it))
    ev.echo(_eval_line(f"iteration {it}", report))
    ev._write_report()
    return {"candidate": candidate, "successes": report.successes, "n": report.n}


def decide(best: EvalReport, candidate: EvalReport, alpha: float) -> tuple[bool, PairedResult, str]:
    """Promote iff the candidate gains more held-out instances than it loses, significantly at
    ``alpha`` (one-sided exact McNemar on the same instances)."""
    paired = paired_test(outcomes(best.results), outcomes(candidate.results))
    if paired.missing:
        raise TrainingError(
            "the candidate and the current model were evaluated on different instances "
            f"({len(paired.missing)} differ)",
            hint="held-out settings changed between iterations; start a new evolve run",
        )
    if paired.gains <= paired.losses:
        return False, paired, f"no net gain ({paired.gains} gained, {paired.losses} lost)"
    if paired.p_greater > alpha:
        return False, paired, f"gain not significant (p = {paired.p_greater:.3g} > {alpha})"
    return True, paired, f"{paired.gains} gained, {paired.losses} lost, p = {paired.p_greater:.3g} ≤ {alpha}"


def stage_promote(ev: Evolution, it: int) -> dict[str, Any]:
    candidate = ev._candidate(it)
    ev.state.decisions = [d for d in ev.state.decisions if d.iteration != it]
    if candidate is None or not (ev._dir(it) / "eval.json").exists():
        decision = Promotion(iteration=it, candidate=None, promoted=False, reason="nothing was trained")
    else:
        best = EvalReport.model_validate_json(Path(ev.best.eval_path).read_text(encoding="utf-8"))
        new = EvalReport.model_validate_json((ev._dir(it) / "eval.json").read_text(encoding="utf-8"))
        promoted, paired, reason = decide(best, new, ev.opts.promote_alpha)
        decision = Promotion(
            iteration=it, candidate=candidate, paired=paired, promoted=promoted, reason=reason
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
    "hints": stage_hints,
    "demos": stage_demos,
    "sft": stage_sft,
    "irr": stage_irr,
    "rl": stage_rl,
    "eval": stage_eval,
    "promote": stage_promote,
}
