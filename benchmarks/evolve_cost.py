"""Where one ``agent-runtime evolve`` iteration spends its time, stage by stage.

Runs the start's evaluation and one iteration of ``evolve`` (``--recipe self-evolve``) at the
documented default size — the learning table's (docs/training.md, "The learning table"): five
templates, 2 train instances and 5 selection instances per template, ``--max-samples 40``,
4 workers, the offline demo model — then reads what the run left in ``OUT`` and prints the cost:

* ``stages``: wall seconds of every stage of iteration 1 (``OUT/iter_0001/stages/*.json``) and
  ``iteration_s``, their sum: the figure the ≤ 20-minute target is about. The start's evaluation
  (``start_eval_s``) and the final test (``final_s``) run once per ``evolve`` run, not per
  iteration, and are reported beside it;
* ``rollouts`` / ``eval``: episodes, role calls, prompt and completion tokens per call (mean
  and max: the sequence lengths every stage pays for), seconds per call;
* ``sft``: rows (new, replayed, held aside), optimizer steps, training seconds and rows per
  second, the validation points and the kept step;
* ``labelling``: the corrections / hints stage's own summary.

    python benchmarks/evolve_cost.py [--tasks PATTERN] [--train-episodes 2] [--eval-episodes 5]
        [--max-samples 40] [--workers 4] [--config TOML] [--out DIR] [--json]

Other ``evolve`` options pass through ``--set NAME=VALUE`` (``--set replay_ratio=0``). With no
``--out`` the run goes to a temporary directory that is deleted afterwards. Timings depend on
what else the machine runs: quote them with the machine and its load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: The learning table's templates (docs/training.md): the documented default size.
DEFAULT_TASKS = "re:^(ClockDeleteAlarm|ClockToggleAlarm|ContactsEditPhone|MessagesReply|SettingsReachPage)$"
#: The issue's target for one iteration on 2 CPU cores, in minutes.
TARGET_MIN = 20.0


def stage_seconds(stages_dir: Path) -> dict[str, float]:
    """Seconds of every finished stage in ``stages_dir`` (``STAGE.json`` markers), by stage."""
    out: dict[str, float] = {}
    for marker in sorted(stages_dir.glob("*.json")):
        out[marker.stem] = float(json.loads(marker.read_text(encoding="utf-8")).get("seconds", 0.0))
    return out


def call_stats(calls: Iterable[Any]) -> dict[str, Any]:
    """Per-call figures of recorded role calls (``CallRecord``s): how many, tokens in and out
    (mean and max), mean seconds — by role and over all."""

    def summary(group: list[Any]) -> dict[str, Any]:
        prompt = [c.usage.prompt_tokens for c in group]
        completion = [c.usage.completion_tokens for c in group]
        return {
            "calls": len(group),
            "prompt_tokens_mean": round(statistics.fmean(prompt), 1) if group else 0.0,
            "prompt_tokens_max": max(prompt, default=0),
            "completion_tokens_mean": round(statistics.fmean(completion), 1) if group else 0.0,
            "completion_tokens_max": max(completion, default=0),
            "call_s_mean": round(statistics.fmean(c.latency_ms for c in group) / 1000, 3) if group else 0.0,
        }

    every = list(calls)
    roles = sorted({c.role for c in every})
    return {**summary(every), "by_role": {r: summary([c for c in every if c.role == r]) for r in roles}}


def runs_stats(runs_dir: Path) -> dict[str, Any]:
    """Episodes, steps and :func:`call_stats` of every run under ``runs_dir``."""
    from agent_runtime.traces import iter_runs, load_run

    runs = [load_run(d) for d in iter_runs(runs_dir)]
    return {
        "episodes": len(runs),
        "steps": sum(len(r.steps) for r in runs),
        **call_stats(c for r in runs for c in r.calls),
    }


def sft_stats(iteration_dir: Path) -> dict[str, Any] | None:
    """Rows, steps and throughput of the iteration's SFT (its stage marker and manifest)."""
    marker = iteration_dir / "stages" / "sft.json"
    manifest_path = iteration_dir / "sft" / "manifest.json"
    if not marker.is_file():
        return None
    stage = json.loads(marker.read_text(encoding="utf-8"))
    out: dict[str, Any] = {"stage_s": stage.get("seconds"), "train_rows": stage.get("train_rows")}
    replay = stage.get("replay") or {}
    out["replay_rows"] = sum((replay.get("rows") or {}).values())
    validation = stage.get("validation") or {}
    out["validation_rows"] = validation.get("rows", 0)
    out["validation"] = validation.get("points", [])
    out["kept_step"] = validation.get("best_step")
    if manifest_path.is_file():
        training = json.loads(manifest_path.read_text(encoding="utf-8"))["training"]
        out["steps"] = training["steps"]
        out["train_s"] = training["runtime_s"]
        rows = out["train_rows"] or 0
        trained = max(rows - out["validation_rows"], 0)
        out["rows_per_s"] = round(trained / training["runtime_s"], 3) if training["runtime_s"] else None
    return out


def cost_report(out: Path) -> dict[str, Any]:
    """The cost of the first iteration of the ``evolve`` run in ``out`` (module docstring)."""
    it0, it1 = out / "iter_0000", out / "iter_0001"
    stages = stage_seconds(it1 / "stages")
    total = sum(stages.values())
    labelling = {}
    for name in ("corrections", "hints"):
        marker = it1 / "stages" / f"{name}.json"
        if marker.is_file():
            labelling[name] = json.loads(marker.read_text(encoding="utf-8"))
    final = [stage_seconds(d / "stages") for d in sorted((out / "final").glob("iter_*"))]
    return {
        "start_eval_s": stage_seconds(it0 / "stages").get("eval"),
        "stages": stages,
        "iteration_s": round(total, 1),
        "iteration_min": round(total / 60, 2),
        "target_min": TARGET_MIN,
        "within_target": total / 60 <= TARGET_MIN,
        "final_s": round(sum(sum(s.values()) for s in final), 1) if final else None,
        "rollouts": runs_stats(it1 / "rollouts"),
        "eval": runs_stats(it1 / "eval-runs"),
        "labelling": labelling,
        "sft": sft_stats(it1),
    }


# -- --sft-sweep: the measurement behind evolve's SFT defaults -------------------------------------

#: (name, lr, batch, warm-up, replay ratio): the regime issue 33 measured and the new defaults,
#: each without and with replay.
SWEEP = (
    ("old: lr 1e-4, batch 4, no warm-up, no replay", 1e-4, 4, 0.0, 0.0),
    ("old: lr 1e-4, batch 4, no warm-up, replay 1", 1e-4, 4, 0.0, 1.0),
    ("lr 2e-5, batch 8, warm-up 10 %, no replay", 2e-5, 8, 0.1, 0.0),
    ("lr 2e-5, batch 8, warm-up 10 %, replay 1", 2e-5, 8, 0.1, 1.0),
)


def completion_scores(model_ref: str, rows: Any) -> dict[str, float]:
    """Mean completion-token loss and the share of rows whose whole reply is the greedy
    (teacher-forced) prediction, of ``model_ref`` on text-only SFT ``rows``."""
    import torch

    from agent_runtime.models.hf import load_tokenizer
    from agent_runtime.models.refs import resolve_model_ref
    from agent_runtime.trainers.hf import load_reference

    resolved = resolve_model_ref(model_ref)
    model = load_reference(resolved)
    tokenizer = load_tokenizer(resolved.base)
    losses, right = [], 0
    for row in rows:
        prompt = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        full = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
        start = len(tokenizer(prompt).input_ids)
        ids = tokenizer(full, return_tensors="pt").input_ids
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, start - 1 : -1]
        target = ids[0, start:]
        losses.append(float(torch.nn.functional.cross_entropy(logits, target)))
        right += int(bool((logits.argmax(-1) == target).all()))
    return {"loss": round(statistics.fmean(losses), 4), "exact": round(right / len(losses), 3)}


def sft_sweep(
    work: Path, *, tasks: str, episodes: int, max_samples: int, probe_rows: int, new_runs: Path | None = None
) -> dict[str, Any]:
    """Continue the demo adapter on rows of ``tasks`` under each :data:`SWEEP` regime; score the
    start and each result on unseen instances of ``tasks`` (``new``: what the stage should add)
    and of the other train templates (``old``: what it should not forget).

    The rows are oracle demonstrations, or with ``new_runs`` the runs an ``evolve`` iteration
    trained on (``OUT/iter_0001/data``: its rollouts and corrections), the data the loop really
    continues the adapter on."""
    import random

    from agent_runtime.demo_model import MODEL_REF
    from agent_runtime.simphone.tasks import select
    from agent_runtime.trainers.data.datasets import build_sft_dataset
    from agent_runtime.trainers.data.samples import collect_samples
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
    from agent_runtime.trainers.distill import DataOptions, distill
    from agent_runtime.trainers.sft_config import SFTConfig

    chosen = set(select(tasks))
    others = ",".join(sorted(set(select(None)) - chosen))
    demos = {
        "new": DemoOptions(tasks=tasks, episodes=episodes, seed=1000, prompts="compact"),
        "pool": DemoOptions(tasks=others, exclude_heldout=True, seed=2000, prompts="compact"),
        "probe_new": DemoOptions(tasks=tasks, seed=3000, prompts="compact"),
        "probe_old": DemoOptions(tasks=others, exclude_heldout=True, seed=4000, prompts="compact"),
    }
    if new_runs is not None:
        del demos["new"]
    for name, options in demos.items():
        if not (work / name).is_dir():
            write_demos(options, work / name)
    new = new_runs if new_runs is not None else work / "new"

    def probe(name: str) -> Any:
        samples = collect_samples(work / name, ["manager", "worker"]).samples
        drawn: list[Any] = random.Random(0).sample(samples, min(probe_rows, len(samples)))
        return build_sft_dataset(drawn, text_only=True)

    probes = {"new": probe("probe_new"), "old": probe("probe_old")}
    start = {k: completion_scores(MODEL_REF, rows) for k, rows in probes.items()}
    results: list[dict[str, Any]] = []
    for name, lr, batch, warmup, ratio in SWEEP:
        out = work / f"sft-{len(results)}"
        # one row per forward, as evolve's SFT on the CPU: eight in one forward ran out of memory
        config = SFTConfig(
            base=MODEL_REF, output_dir=out, role="manager,worker", learning_rate=lr, batch_size=1,
            gradient_accumulation_steps=batch, warmup_ratio=warmup, max_steps=-1, progress=False,
        )  # fmt: skip
        data = DataOptions(
            runs_dir=new, max_samples=max_samples, replay_dir=work / "pool", replay_ratio=ratio,
            overwrite=True,
        )  # fmt: skip
        manifest = distill("sft", config, data)
        scores = {k: completion_scores(str(out), rows) for k, rows in probes.items()}
        results.append(
            {
                "regime": name,
                "train_rows": manifest.data.train_rows,
                "steps": manifest.training.steps,
                "train_s": manifest.training.runtime_s,
                **scores,
            }
        )
    return {"probe_rows": probe_rows, "new_rows": str(new), "start": start, "results": results}


def replay_toy(work: Path, *, ratios: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)) -> dict[str, Any]:
    """Forgetting in miniature, with the tiny LM (minutes, not hours): a model trained until it
    answers 12 "old" rows right is continued on 6 rows it does not know, each replay ratio with the
    same budget (40 full fine-tune steps of 6 rows, warm-up 10 %, 2 seeds, lr 3e-3 and 1e-3); the
    share of old and new rows it then answers right (greedy, teacher-forced)."""
    import shutil

    from datasets import Dataset

    from agent_runtime.testing.tiny_lm import build_tiny_lm
    from agent_runtime.trainers.data.datasets import assistant, mix_replay, sft_features
    from agent_runtime.trainers.sft_config import SFTConfig
    from agent_runtime.trainers.sft_trainer import train_sft

    old_words = "apple river stone cloud tiger piano lemon candle rocket garden silver window".split()
    new_words = "orange forest pencil mirror dragon castle".split()

    def rows(words: list[str], tag: str) -> list[dict[str, Any]]:
        prompts = [[{"role": "user", "content": f"{tag} {i}: say the word"}] for i in range(len(words))]
        return [
            {"prompt": p, "completion": assistant(w, text_only=True)}
            for p, w in zip(prompts, words, strict=True)
        ]

    old, new = rows(old_words, "Item"), rows(new_words, "Thing")
    features = sft_features(text_only=True)
    tiny = work / "tiny-lm"
    if not tiny.is_dir():
        build_tiny_lm(tiny, seed=0)
    start = work / "start"
    if not start.is_dir():
        cfg = SFTConfig(
            base=str(tiny), output_dir=start, lora=False, learning_rate=3e-3, max_steps=150, batch_size=12,
            progress=False,
        )  # fmt: skip
        train_sft(cfg, Dataset.from_list(old, features=features))
    results: list[dict[str, Any]] = []
    for lr in (3e-3, 1e-3):
        for ratio in ratios:
            scores = []
            for seed in (0, 1):
                mixed, _ = mix_replay(new, old, ratio=ratio, seed=seed, role=lambda _row: "worker")
                out = work / "continued"
                shutil.rmtree(out, ignore_errors=True)
                cfg = SFTConfig(
                    base=str(start), output_dir=out, lora=False, learning_rate=lr, max_steps=40, batch_size=6,
                    warmup_ratio=0.1, seed=seed, progress=False,
                )  # fmt: skip
                train_sft(cfg, Dataset.from_list(mixed, features=features))
                dataset = {
                    k: Dataset.from_list(v, features=features) for k, v in (("old", old), ("new", new))
                }
                scores.append({k: completion_scores(str(out), v)["exact"] for k, v in dataset.items()})
            results.append(
                {
                    "lr": lr,
                    "replay_ratio": ratio,
                    "old": round(statistics.fmean(s["old"] for s in scores), 3),
                    "new": round(statistics.fmean(s["new"] for s in scores), 3),
                }
            )
    probes = {k: Dataset.from_list(v, features=features) for k, v in (("old", old), ("new", new))}
    return {
        "start": {k: completion_scores(str(start), v)["exact"] for k, v in probes.items()},
        "results": results,
    }


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--train-episodes", type=int, default=2)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--max-samples", type=int, default=40)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--config", type=Path, default=None, help="runtime config (default: the demo model)")
    parser.add_argument("--out", type=Path, default=None, help="keep the run here (default: a temp dir)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="other evolve options"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--sft-sweep", type=Path, default=None, metavar="WORKDIR", help="measure SFT regimes instead (docs)"
    )
    parser.add_argument("--probe-rows", type=int, default=12, help="--sft-sweep: rows per probe set")
    parser.add_argument(
        "--sweep-runs", type=Path, default=None, metavar="DIR",
        help="--sft-sweep: train on these runs (an evolve iteration's data) instead of oracle demos",
    )  # fmt: skip
    parser.add_argument(
        "--replay-toy", type=Path, default=None, metavar="WORKDIR", help="forgetting with the tiny LM (docs)"
    )
    args = parser.parse_args(argv)
    if args.replay_toy is not None:
        with contextlib.redirect_stdout(sys.stderr):
            toy = replay_toy(args.replay_toy)
        print(json.dumps(toy, indent=2))
        return 0
    if args.sft_sweep is not None:
        with contextlib.redirect_stdout(sys.stderr):
            sweep = sft_sweep(
                args.sft_sweep, tasks=args.tasks, episodes=args.train_episodes,
                max_samples=args.max_samples, probe_rows=args.probe_rows, new_runs=args.sweep_runs,
            )  # fmt: skip
        print(json.dumps(sweep, indent=2))
        return 0

    from agent_runtime.config import load_config
    from agent_runtime.demo_model import demo_config
    from agent_runtime.errors import AgentRuntimeError
    from agent_runtime.trainers.evolve import Evolution, EvolveOptions

    extra = dict(item.split("=", 1) for item in args.set)
    with tempfile.TemporaryDirectory(prefix="evolve-cost-") as tmp:
        out = args.out or Path(tmp) / "evolve"
        size = {
            "tasks": args.tasks,
            "train_episodes": args.train_episodes,
            "eval_episodes": args.eval_episodes,
            "max_samples": args.max_samples,
            "workers": args.workers,
            **{k: _value(v) for k, v in extra.items()},
        }
        try:
            opts = EvolveOptions(out=out, iterations=1, overwrite=True, **size)
            runtime = load_config(args.config) if args.config else demo_config()
            started = time.perf_counter()
            # --json: stdout carries the one object; whatever a library prints goes to stderr
            with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
                Evolution(opts, runtime, echo=print).run()
        except AgentRuntimeError as exc:
            print(f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr)
            return 2
        report = {
            "size": size,
            "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
            "wall_s": round(time.perf_counter() - started, 1),
            **cost_report(out),
        }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, seconds in report["stages"].items():
            print(f"{name:>12}: {seconds / 60:6.2f} min")
        print(f"{'iteration':>12}: {report['iteration_min']:6.2f} min (target ≤ {TARGET_MIN:g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
