"""Does online RL move held-out success? DGRPO/TRPO from ``--base`` on SimPhone, before vs after.

For each method (and each ablation asked for): held-out success of the starting policy on the
*test* split of ``--tasks`` (one rollout per instance at the sampling temperature), then
``--iterations`` of online RL on the *train* split, then held-out success of the result — each
with a 95 % Wilson interval — plus wall times. The methods ``dgrpo-no-spa``, ``dgrpo-no-dapr``
and ``dgrpo-no-fcf`` are MobileRL's ablation rows. Pick templates where the starting model's
success is middling: at 0 % or 100 % every group is uniform, every advantage 0, and nothing is
learnt.

By default the start is the shipped demo model (SmolLM2-135M + its SFT adapter) and the other
roles run the demo configuration (the same SFT'd model as Manager, in-process); ``--config``
gives them a runtime TOML instead. The trained role samples in-process (or from
``--server-url``). ``--screen`` only measures the start on the *train* split — how to pick
middling templates without looking at the held-out instances. Prints one line per phase, or one
JSON object with ``--json``.

    python benchmarks/rl_signal.py --tasks 're:^(ClockToggleAlarm|SettingsReachPage)$' \
        --iterations 4 --group-size 4 --eval-episodes 6 --lr 1e-4 --json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from agent_runtime.evaluation.harness import share_cores
from agent_runtime.evaluation.paired import holm, paired_test


def runtime_config(args: argparse.Namespace) -> Any:
    """The other roles' configuration: ``--config``, or the demo model's."""
    from agent_runtime.config import load_config
    from agent_runtime.demo_model import demo_config

    return load_config(args.config) if args.config else demo_config()


def evaluate(model_ref: str, args: argparse.Namespace, runs_dir: Path, split: str = "test") -> dict[str, Any]:
    """Success of a model reference (base dir or distill output) on ``split``, one rollout per
    instance, ``--rollout-workers`` at once."""
    from peft import PeftModel

    from agent_runtime.evaluation import wilson_interval
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.models.refs import resolve_model_ref
    from agent_runtime.simphone.tasks import select
    from agent_runtime.simphone.tasks.registry import task_instances
    from agent_runtime.trainers.online.policy import InProcessPolicy
    from agent_runtime.trainers.online.rollouts import LocalRollouts, RolloutRequest, RolloutWorker

    resolved = resolve_model_ref(model_ref)
    engine = TransformersEngine(resolved.base, dtype="float32")
    if resolved.adapter is not None:
        engine.model = PeftModel.from_pretrained(engine.model, str(resolved.adapter)).eval()
    policy = InProcessPolicy(
        engine, "eval", temperature=args.temperature, top_p=1.0, max_tokens=args.max_new_tokens
    )
    worker = RolloutWorker(
        runtime_config(args),
        args.role,
        policy.chat_model,
        engine.processor,
        runs_dir,
        max_turns=args.max_turns,
    )
    instances = task_instances(select(args.tasks), split=split, episodes=args.eval_episodes, seed=args.seed)
    requests = [
        RolloutRequest(task_name=t.name, task_seed=t.seed, sample_seed=args.seed + i)
        for i, t in enumerate(instances)
    ]
    started = time.perf_counter()
    results = LocalRollouts(args.rollout_workers).play(worker, requests)
    ok = sum(1 for r in results if r.episode.success)
    calls = sum(r.episode.policy_calls for r in results)
    low, high = wilson_interval(ok, len(results))
    per_task: dict[str, list[int]] = {}
    for r in results:
        per_task.setdefault(r.episode.task_name, []).append(int(r.episode.success))
    return {
        "episodes": len(results),
        "successes": ok,
        "success_rate": ok / len(results) if results else 0.0,
        "wilson95": [round(low, 4), round(high, 4)],
        "errors": sum(1 for r in results if r.episode.error),
        "mean_steps": round(sum(r.episode.steps for r in results) / max(1, len(results)), 2),
        # the trained role's replies that did not parse or named an element it cannot act on:
        # on the same instances and seeds, the sharpest sign of a policy drifting out of format
        "malformed_rate": round(sum(r.episode.malformed for r in results) / max(1, calls), 4),
        "per_task": {name: f"{sum(v)}/{len(v)}" for name, v in sorted(per_task.items())},
        "outcomes": {f"{r.episode.task_name}/{r.episode.task_seed}": int(r.episode.success) for r in results},
        "wall_s": round(time.perf_counter() - started, 2),
    }


#: Per-iteration metrics kept in the report: FCF shows in ``active_tasks``, SPA in
#: ``spa_adjusted``, DAPR in ``replayed``/``pruned_negatives``, TRPO's success replay in
#: ``replay_injected``.
MECHANISMS = (
    "active_tasks",
    "cooling_tasks",
    "malformed_rate",
    "spa_adjusted",
    "replayed",
    "pruned_negatives",
    "replay_injected",
)


def train(
    label: str, method: str, args: argparse.Namespace, out: Path, ablation: dict[str, bool]
) -> dict[str, Any]:
    """``--iterations`` of ``method`` from ``--base`` into ``out``; per-iteration lines go to stderr
    as they happen (a run takes minutes to hours)."""
    from agent_runtime.trainers.distill import CONFIGS
    from agent_runtime.trainers.online.loop import RLOptions, train_online

    fields: dict[str, Any] = {
        "base": args.base,
        "output_dir": out,
        "role": args.role,
        "num_generations": args.group_size,
        "max_turns": args.max_turns,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "learning_rate": args.lr,
        "lora_r": args.lora_r,
        "lora_alpha": 2 * args.lora_r,
        "seed": args.seed,
    }
    if method == "dgrpo":
        fields.update(ablation)
    cfg = CONFIGS[method](**fields)
    opts = RLOptions(
        tasks=args.tasks,
        split="train",
        episodes=args.train_episodes,
        iterations=args.iterations,
        rollout_workers=args.rollout_workers,
        server_url=args.server_url,
    )
    started = time.perf_counter()

    def echo(line: str) -> None:
        if not args.json:
            print(f"  {label}: {line}", file=sys.stderr, flush=True)

    _, training, _ = train_online(method, cfg, opts, runtime=runtime_config(args), overwrite=True, echo=echo)
    iters = training.extra["iterations"]
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "train_success_by_iteration": [round(m["success_rate"], 4) for m in iters],
        # what each mechanism did per iteration: an ablation whose mechanism never acted is the
        # same run (the per-iteration malformed rate is noisy: few calls, new seeds each time)
        "by_iteration": [{k: m[k] for k in MECHANISMS if k in m} for m in iters],
        "losses": [p.loss for p in training.losses],
    }


#: ``--methods`` entries beyond the plain methods: MobileRL's ablation rows (Table 3).
ABLATIONS = {"dgrpo-no-spa": "spa", "dgrpo-no-dapr": "dapr", "dgrpo-no-fcf": "fcf"}


def run_phase(name: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """One phase: ``before`` (the start's held-out success) or a method (train, then held-out
    success of its result). Phases are independent, so ``--jobs`` runs them in parallel processes."""
    if name == "before":
        return evaluate(args.base, args, root / "eval-before")
    from agent_runtime.models.refs import resolve_model_ref

    ablation = {"spa": True, "dapr": True, "fcf": True}
    if name in ABLATIONS:
        ablation[ABLATIONS[name]] = False
    trained = train(name, "trpo" if name == "trpo" else "dgrpo", args, root / name, ablation)
    base_dir = resolve_model_ref(args.base).base
    trained["after"] = evaluate(f"transformers:{base_dir}?adapter={root / name}", args, root / f"eval-{name}")
    return trained


def record(report: dict[str, Any], name: str, outcome: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """File a finished phase (a phase that raised is filed as its error, and the others go on);
    pair every method that has a result with the start's."""
    try:
        result = outcome()
    except Exception as exc:  # one failed phase must not lose the other phases' hours
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"}
    if name == "before":
        report["before"] = result
    else:
        report["methods"][name] = result
    before = report.get("before", {}).get("outcomes")
    compared = [t for t in report["methods"].values() if before is not None and "after" in t]
    for trained in compared:
        outcome_after = {k: bool(v) for k, v in trained["after"]["outcomes"].items()}
        trained["paired"] = paired_test({k: bool(v) for k, v in before.items()}, outcome_after).model_dump()
    # Several methods against one start: Holm's correction of the one-sided p-values.
    for trained, adjusted in zip(compared, holm([t["paired"]["p_greater"] for t in compared]), strict=True):
        trained["paired"]["p_greater_holm"] = adjusted
    return result


#: What the start's held-out measurement depends on: ``--before`` reuses one only if all match.
SAME_START = ("base", "role", "tasks", "eval_episodes", "seed", "temperature", "max_turns", "max_new_tokens")


def earlier_start(args: argparse.Namespace) -> dict[str, Any]:
    """The start's held-out result from an earlier ``report.json`` (``--before``), checked to be
    the same measurement: same settings, same test instances. Adding a method to a finished run
    then costs its own training and eval only."""
    from agent_runtime.simphone.tasks import select
    from agent_runtime.simphone.tasks.registry import task_instances

    try:
        earlier = json.loads(args.before.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        sys.exit(f"--before {args.before}: cannot read it ({exc})")
    before = earlier.get("before") or {}
    if "outcomes" not in before:
        sys.exit(f"--before {args.before}: no measurement of the start with per-instance outcomes")
    differ = [k for k in SAME_START if k in earlier and earlier[k] != getattr(args, k)]
    if differ:
        sys.exit(f"--before {args.before}: measured with other {', '.join(differ)}; rerun without --before")
    instances = task_instances(select(args.tasks), split="test", episodes=args.eval_episodes, seed=args.seed)
    if set(before["outcomes"]) != {f"{t.name}/{t.seed}" for t in instances}:
        sys.exit(f"--before {args.before}: measured other test instances; rerun without --before")
    return before


def hardware() -> dict[str, Any]:
    """Where the wall times were measured."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu_cores": os.cpu_count(), "gpu": gpu}


def main(argv: list[str] | None = None) -> None:
    from agent_runtime.demo_model import MODEL_REF

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--base",
        default=MODEL_REF,
        help="starting model: DIR, transformers:DIR?adapter=A, distill output (default: the demo model)",
    )
    p.add_argument(
        "--config", type=Path, help="runtime TOML for the other roles (default: the demo configuration)"
    )
    p.add_argument("--role", default="worker", help="trained role: worker or manager")
    p.add_argument("--tasks", default="Clock*", help="SimPhone task pattern")
    p.add_argument(
        "--methods",
        default="dgrpo,trpo",
        help=f"comma-separated: dgrpo, trpo, and the ablations {', '.join(ABLATIONS)}",
    )
    p.add_argument("--iterations", type=int, default=10, help="RL iterations per method")
    p.add_argument("--group-size", type=int, default=8, help="G: rollouts per task")
    p.add_argument("--train-episodes", type=int, default=1, help="train instances per template")
    p.add_argument(
        "--eval-episodes", type=int, default=10, help="held-out (test split) instances per template"
    )
    p.add_argument("--max-turns", type=int, default=10, help="policy steps per rollout at most")
    p.add_argument("--max-new-tokens", type=int, default=256, help="longest reply")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (rollouts and eval)")
    p.add_argument("--lr", type=float, default=1e-5, help="learning rate")
    p.add_argument("--lora-r", type=int, default=16, help="LoRA rank (a new adapter only)")
    p.add_argument("--rollout-workers", type=int, default=2, help="K: rollouts at once")
    p.add_argument("--server-url", help="policy server with runtime LoRA loading (default: in-process)")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="phases (the start's eval and each method) run at once, one process each: on a GPU one "
        "process leaves it mostly idle (default 1: one after another)",
    )
    p.add_argument(
        "--screen",
        action="store_true",
        help="only measure the start on the train split (--eval-episodes instances per template)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed")
    p.add_argument(
        "--before",
        type=Path,
        help="reuse the start's held-out result from an earlier run's report.json (same settings)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="keep outputs (and report.json, updated per phase) here (default: a temp dir)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in ("dgrpo", "trpo", *ABLATIONS)]
    if unknown:
        p.error(f"unknown method(s) {', '.join(unknown)}")
    if args.jobs < 1:
        p.error("--jobs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="rl_signal-") as tmp:
        root = args.out or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        report: dict[str, Any] = {
            **{key: getattr(args, key) for key in SAME_START},
            "iterations": args.iterations,
            "group_size": args.group_size,
            "learning_rate": args.lr,
            "hardware": hardware(),
            "jobs": args.jobs,
            "methods": {},
        }

        def phase(name: str, result: dict[str, Any]) -> None:
            (root / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
            if not args.json:
                print(f"{name}: {json.dumps(result)}", file=sys.stderr, flush=True)

        if args.screen:
            report["screen"] = evaluate(args.base, args, root / "screen", split="train")
            phase("screen (train split)", report["screen"])
            print(json.dumps(report) if args.json else json.dumps(report, indent=2))
            return
        phases = ["before", *methods]
        if args.before is not None:
            report["before"] = {**earlier_start(args), "reused_from": str(args.before)}
            phases.remove("before")
        if args.jobs == 1:
            for name in phases:
                phase(name, record(report, name, lambda n=name: run_phase(n, args, root)))
        else:
            ctx = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
            threads = max(1, (os.cpu_count() or 1) // args.jobs)
            with ProcessPoolExecutor(
                args.jobs, mp_context=ctx, initializer=share_cores, initargs=(threads,)
            ) as pool:
                futures = {pool.submit(run_phase, name, args, root): name for name in phases}
                for future in as_completed(futures):
                    name = futures[future]
                    phase(name, record(report, name, future.result))
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
