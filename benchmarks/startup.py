"""Start-up cost: ``import agent_runtime`` and ``agent-runtime --help`` against ``python -c pass``.

Each figure is the CPU time (user + system) of a fresh interpreter, read from ``os.wait4``, so a
busy machine slows wall time but hardly the count. The three commands run in turns, round after
round (paired), and each ratio is the median of the per-round ratios to ``python -c pass`` from
the same round. ``--ref DIR`` times a second checkout (for example a clean clone of the commit
before a change) in the same rounds, so before and after are measured side by side.

Goals (issue: one shape for roles, graphs and commands): import ≤ 5×, ``--help`` ≤ 9×.

    python benchmarks/startup.py [--rounds 15] [--ref /path/to/other/checkout] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"import": 5.0, "help": 9.0}


def _cpu_seconds(argv: list[str], cwd: Path) -> float:
    """CPU seconds (user + sys) the child and its own children spent."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryFile() as stderr:  # a file, not a pipe: a chatty child cannot block on it
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            stderr.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed in {cwd}: {stderr.read().decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def _commands() -> dict[str, list[str]]:
    python = sys.executable
    return {
        "pass": [python, "-c", "pass"],
        "import": [python, "-c", "import agent_runtime"],
        "help": [python, "-m", "agent_runtime.cli", "--help"],
    }


def measure(trees: dict[str, Path], rounds: int) -> dict[str, dict[str, float]]:
    commands = _commands()
    for tree in trees.values():  # warm the page cache and the bytecode of both trees once
        for argv in commands.values():
            _cpu_seconds(argv, tree)
    samples: dict[str, dict[str, list[float]]] = {t: {k: [] for k in commands} for t in trees}
    ratios: dict[str, dict[str, list[float]]] = {t: {"import": [], "help": []} for t in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            cpu = {key: _cpu_seconds(argv, tree) for key, argv in commands.items()}
            for key, value in cpu.items():
                samples[name][key].append(value)
            for key in ("import", "help"):
                ratios[name][key].append(cpu[key] / cpu["pass"])
    result: dict[str, dict[str, float]] = {}
    for name in trees:
        row = {f"{k}_cpu_ms": round(statistics.median(v) * 1000, 1) for k, v in samples[name].items()}
        for key in ("import", "help"):
            ratio = statistics.median(ratios[name][key])
            row[f"{key}_ratio"] = round(ratio, 2)
            row[f"{key}_meets_goal"] = ratio <= GOALS[key]
        result[name] = row
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--ref", type=Path, help="another checkout to time in the same rounds (the baseline)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.ref:
        trees = {"baseline": args.ref.resolve(), "this": ROOT}
    result = {"rounds": args.rounds, "goals": GOALS, **measure(trees, args.rounds)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name in trees:
        row = result[name]
        print(
            f"{name:9s} pass {row['pass_cpu_ms']:.0f} ms  import {row['import_cpu_ms']:.0f} ms "
            f"({row['import_ratio']}×)  --help {row['help_cpu_ms']:.0f} ms ({row['help_ratio']}×)"
        )


if __name__ == "__main__":
    main()
