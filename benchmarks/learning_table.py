"""The learning table: does the loop make the demo model better? Each stage as a row.

Rows, all measured on the same held-out instances (evolve's *selection* half of the test split,
``--eval-episodes`` *distinct* instances per template, greedy; template-held-out templates in
``--tasks`` are dropped, as evolve never trains on them):

* **base** — SmolLM2-135M without an adapter;
* **SFT on demos** — the shipped demo adapter (SFT on oracle demonstrations): the start;
* **evolve 1..N** — ``agent-runtime evolve`` iterations (rollouts → filters → hint-guided SFT);
* **+ online RL** — one more evolve iteration with ``--rl dgrpo`` (its candidate is SFT then DGRPO).

Each row gets per-template counts, a Wilson interval, a paired exact McNemar test against the
start (Holm-corrected over the rows compared) and the template-clustered test. The selection rows
are what evolve's gate decided on; the honest numbers are evolve's **final test** (``final`` in the
JSON, a second table): the start and the model kept, scored once on final instances
(*instance-held-out*) and on templates never trained on (*template-held-out*), side by side.
``--screen`` first measures the start on *train* instances of candidate templates: pick the ones
where it succeeds 10-70 % before looking at any held-out result. Prints a markdown table, or one
JSON object with ``--json``. Each phase is kept in ``--out`` and skipped when run again (the
evolve phases resume).

    python benchmarks/learning_table.py --screen --tasks 'Clock*,Contacts*' --json
    python benchmarks/learning_table.py --tasks 're:^(ClockToggleAlarm|ContactsReachCard)$' \
        --evolve-iterations 1 --rl-iterations 1 --out learning-table --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("agent-runtime")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agent_runtime.cli"]


def device() -> str:
    import torch

    return f"GPU ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "CPU"


def evaluate_model(model: str | None, args: argparse.Namespace, where: Path, split: str) -> dict[str, Any]:
    """Held-out (or train, for the screen) results of the demo configuration with ``model`` as its
    model ref (None: the shipped demo model); cached in ``where/eval.json``."""
    from agent_runtime.demo_model import demo_config
    from agent_runtime.evaluation import AgentPolicy, EvalReport, evaluate

    cached = where / "eval.json"
    if cached.exists():
        return EvalReport.model_validate_json(cached.read_text(encoding="utf-8")).model_dump(mode="json")
    cfg = demo_config(runs_dir=where / "runs")
    if model is not None:
        cfg.models["demo"] = cfg.models["demo"].model_copy(update={"model": model})
    from agent_runtime.simphone.tasks.registry import select, trainable

    report = evaluate(
        AgentPolicy(cfg),
        tasks=",".join(trainable(select(args.tasks))),
        split=split,
        episodes=args.screen_episodes if split == "train" else args.eval_episodes,
        seed=args.seed,
        workers=args.workers,
        executor="thread",
        distinct=True,
        on_result=lambda r: print(f"  {r.task}/{r.seed}: {'ok' if r.success else 'fail'}", file=sys.stderr),
    )
    where.mkdir(parents=True, exist_ok=True)
    cached.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report.model_dump(mode="json")


def run_evolve(args: argparse.Namespace, iterations: int, *, rl: bool) -> None:
    out = args.out / "evolve"
    cmd = [
        *_cli(),
        "evolve",
        "--out",
        str(out),
        "--tasks",
        args.tasks,
        "--train-episodes",
        str(args.train_episodes),
        "--eval-episodes",
        str(args.eval_episodes),
        "--iterations",
        str(iterations),
        "--workers",
        str(args.workers),
        "--sft-lr",
        str(args.sft_lr),
        "--sft-epochs",
        str(args.sft_epochs),
        "--promote-alpha",
        str(args.promote_alpha),
        # the RL row is one more iteration, added by --resume: the gate's level is split over both
        "--gate-iterations",
        str(args.evolve_iterations + (1 if args.rl_iterations else 0)),
        "--hint-samples",
        str(args.hint_samples),
        "--seed",
        str(args.seed),
    ]
    if args.max_samples:
        cmd += ["--max-samples", str(args.max_samples)]
    if rl:
        # The RL row's iteration: its own rollouts and SFT, then DGRPO; no corrections or hint
        # stage (its cost on a CPU goes to the RL rollouts instead).
        cmd += [
            "--no-corrections",
            "--no-hints",
            "--rl",
            "dgrpo",
            "--rl-iterations",
            str(args.rl_iterations),
            "--rl-lr",
            str(args.rl_lr),
        ]
    if (out / "evolve.json").exists():
        cmd.append("--resume")
    print("$ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)


def table(args: argparse.Namespace, rows: list[tuple[str, dict[str, Any], str]]) -> dict[str, Any]:
    """Per-row results, paired against the start (row 2) with Holm's correction."""
    from agent_runtime.evaluation import EvalReport
    from agent_runtime.evaluation.paired import clustered_test, holm, outcomes, paired_test

    reports = [(label, EvalReport.model_validate(data), where) for label, data, where in rows]
    start = outcomes(reports[1][1].results)
    out = []
    for label, report, where in reports:
        row: dict[str, Any] = {
            "row": label,
            "successes": report.successes,
            "n": report.n,
            "success_rate": report.success_rate,
            "ci95": report.ci95,
            "per_task": {name: f"{t.successes}/{t.n}" for name, t in report.per_task.items()},
            "ran_on": where,
        }
        if label != "SFT on demos":
            row["paired_vs_start"] = paired_test(start, outcomes(report.results)).model_dump()
            row["clustered_vs_start"] = clustered_test(start, outcomes(report.results)).model_dump()
        out.append(row)
    compared = [r for r in out if "paired_vs_start" in r]
    for r, adjusted in zip(
        compared, holm([r["paired_vs_start"]["p_two_sided"] for r in compared]), strict=True
    ):
        r["paired_vs_start"]["p_two_sided_holm"] = adjusted
    return {"tasks": args.tasks, "eval_episodes": args.eval_episodes, "rows": out}


def markdown(result: dict[str, Any]) -> str:
    names = sorted(result["rows"][0]["per_task"])
    head = (
        "| stage | held-out success (Wilson 95 %) | "
        + " / ".join(names)
        + " | vs start (McNemar, Holm) | ran on |"
    )
    lines = [head, "|---|---|---|---|---|"]
    for r in result["rows"]:
        low, high = r["ci95"]
        paired = r.get("paired_vs_start")
        vs = (
            f"+{paired['gains']} / -{paired['losses']}, p = {paired['p_two_sided_holm']:.3g}"
            if paired
            else "–"
        )
        lines.append(
            f"| {r['row']} | {r['successes']}/{r['n']} = {r['success_rate']:.0%} ({low:.0%}–{high:.0%}) | "
            + " · ".join(r["per_task"].get(n, "–") for n in names)
            + f" | {vs} | {r['ran_on']} |"
        )
    final = result.get("final")
    if final:
        lines += ["", final_markdown(final)]
    return "\n".join(lines)


def _rate(stats: dict[str, Any] | None) -> str:
    if not stats:
        return "–"
    low, high = stats["ci95"]
    return f"{stats['successes']}/{stats['n']} = {stats['success_rate']:.0%} ({low:.0%}–{high:.0%})"


def final_markdown(final: dict[str, Any]) -> str:
    """evolve's final test: instance-held-out beside template-held-out, kept against start."""
    lines = [
        "| final test (scored once) | instance-held-out (Wilson 95 %) | template-held-out (Wilson 95 %) |",
        "|---|---|---|",
    ]
    for label in ("start", "kept"):
        row = final[label]
        lines.append(
            f"| {label} (iteration {row['iteration']}) | {_rate(row['instance_heldout'])} | "
            f"{_rate(row['template_heldout'])} |"
        )
    tests = [
        ("instance-held-out", final["instance_heldout"]),
        ("template-held-out", final["template_heldout"]),
    ]
    for label, t in tests:
        if t:
            lines.append(
                f"| kept vs start, {label} (clustered) | +{t['better']} / -{t['worse']} templates, "
                f"net {t['net']:+d}, one-sided p = {t['p_greater']:.3g} | |"
            )
    if final.get("note"):
        lines.append(f"\n{final['note']}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", required=True, help="templates (glob or re:REGEX), chosen in advance")
    p.add_argument("--screen", action="store_true", help="only measure the start on train instances")
    p.add_argument("--screen-episodes", type=int, default=3)
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--train-episodes", type=int, default=4)
    p.add_argument("--evolve-iterations", type=int, default=1, help="evolve iterations without RL")
    p.add_argument("--rl-iterations", type=int, default=1, help="DGRPO iterations of the last row (0: none)")
    p.add_argument("--sft-lr", type=float, default=1e-4)
    p.add_argument("--sft-epochs", type=float, default=1.0)
    p.add_argument("--rl-lr", type=float, default=1e-5)
    p.add_argument("--hint-samples", type=int, default=1)
    p.add_argument("--max-samples", type=int, default=None, help="cap on SFT rows per role per iteration")
    p.add_argument(
        "--promote-alpha", type=float, default=0.05, help="evolve's run-wide false-promotion level"
    )
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("learning-table"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    where = device()
    if args.screen:
        report = evaluate_model(None, args, args.out / "screen", "train")
        result: dict[str, Any] = {
            "screen": {name: f"{t['successes']}/{t['n']}" for name, t in report["per_task"].items()},
            "wall_s": round(time.perf_counter() - started, 1),
        }
        print(json.dumps(result) if args.json else json.dumps(result, indent=2))
        return
    from agent_runtime.demo_model import BASE

    # The evolve rows first: the base model without an adapter rarely writes a usable reply and
    # plays every episode to its step budget, so its row is the slowest and the least informative.
    run_evolve(args, args.evolve_iterations, rl=False)
    if args.rl_iterations:
        run_evolve(args, args.evolve_iterations + 1, rl=True)
    rows: list[tuple[str, dict[str, Any], str]] = [
        ("base (no adapter)", evaluate_model(BASE, args, args.out / "base", "selection"), where)
    ]
    evolve_dir = args.out / "evolve"
    for it in sorted(evolve_dir.glob("iter_*")):
        path = it / "eval.json"
        if not path.exists():
            continue
        n = int(it.name.removeprefix("iter_"))
        if n == 0:
            label = "SFT on demos"
        elif n > args.evolve_iterations:
            label = f"evolve {n} (+ online RL)"
        else:
            label = f"evolve {n}"
        rows.append((label, json.loads(path.read_text(encoding="utf-8")), where))
    result = table(args, rows)
    state = json.loads((evolve_dir / "evolve.json").read_text(encoding="utf-8"))
    result["decisions"] = state["decisions"]
    result["best"] = state["best"]
    result["final"] = state.get("final")
    result["wall_s"] = round(time.perf_counter() - started, 1)
    (args.out / "table.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result) if args.json else markdown(result))


if __name__ == "__main__":
    main()
