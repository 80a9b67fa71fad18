"""Episodes per hour on 1 and 2 workers, locally and on Ray, with a 200 ms model.

The policy is SimPhone's expert waiting ``--model-ms`` before every decision, as an agent waits
on a model server: what scales out is the waiting, not this machine's cores. Every backend plays
the same instances; Ray runs on a cluster started here (``ray.init``, ``--workers`` CPUs).

    python benchmarks/scale_out.py --json              # the table the docs quote
    python benchmarks/scale_out.py --episodes 4 --json # quicker

Reports episodes/hour per (backend, workers), the scaling efficiency from 1 to 2 workers
(eph(2) / (2 · eph(1)), target >= 0.8), Ray's overhead per episode (its 1-worker seconds per
episode minus the local one's) and the load average, since other work on the machine skews it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from agent_runtime.evaluation import evaluate
from agent_runtime.evaluation.episode import Outcome, play, tree_observation


class SlowModelExpert:
    """The expert, waiting ``model_s`` per decision like an agent waiting on its model."""

    name = "oracle-slow"

    def __init__(self, model_s: float) -> None:
        self.model_s = model_s

    def __call__(self, task: Any, device: Any) -> Outcome:
        from agent_runtime.simphone.tasks.oracle import OraclePolicy

        decide = OraclePolicy(task)

        def slow(observation: Any) -> Any:
            time.sleep(self.model_s)
            return decide(observation)

        return play(slow, device, max_steps=task.max_steps, observe=lambda: tree_observation(device))


def measure(policy: SlowModelExpert, tasks: str, episodes: int, backend: Any) -> dict[str, Any]:
    started = time.perf_counter()
    report = evaluate(policy, tasks=tasks, split="all", episodes=episodes, seed=0, backend=backend)
    wall = time.perf_counter() - started
    return {
        "episodes": report.n,
        "successes": report.successes,
        "steps": sum(r.steps for r in report.results),
        "wall_s": round(wall, 2),
        "episodes_per_hour": round(3600 * report.n / wall, 1),
        "outcomes": sorted((r.task, r.seed, r.success, r.steps) for r in report.results),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="ClockAlarmTimeQuestion,SettingsToggle*,ShopPriceQuestion")
    parser.add_argument("--episodes", type=int, default=4, help="instances per template")
    parser.add_argument("--model-ms", type=float, default=200.0, help="the model's latency per decision")
    parser.add_argument("--no-ray", action="store_true", help="local backend only")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    from agent_runtime.execution import LocalBackend

    policy = SlowModelExpert(args.model_ms / 1000)
    rows: dict[str, dict[str, Any]] = {}
    for workers in (1, 2):
        rows[f"local/{workers}"] = measure(policy, args.tasks, args.episodes, LocalBackend(workers, "thread"))
    if not args.no_ray:
        import ray

        from agent_runtime.execution.ray_backend import RayBackend

        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
        startup = time.perf_counter() - t0
        try:
            for workers in (1, 2):
                backend = RayBackend("local", workers)
                backend.worker_pids()  # workers started before the clock: startup is reported apart
                rows[f"ray/{workers}"] = measure(policy, args.tasks, args.episodes, backend)
                backend.close()
        finally:
            ray.shutdown()
    same = len({json.dumps(r.pop("outcomes")) for r in rows.values()}) == 1
    out: dict[str, Any] = {
        "model_ms": args.model_ms,
        "rows": rows,
        "same_outcomes": same,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    for kind in ("local", "ray"):
        if f"{kind}/2" in rows:
            one, two = rows[f"{kind}/1"], rows[f"{kind}/2"]
            out[f"{kind}_efficiency_1_to_2"] = round(
                two["episodes_per_hour"] / (2 * one["episodes_per_hour"]), 3
            )
    if "ray/1" in rows:
        n = rows["ray/1"]["episodes"]
        out["ray_overhead_s_per_episode"] = round(
            (rows["ray/1"]["wall_s"] - rows["local/1"]["wall_s"]) / n, 3
        )
        out["ray_startup_s"] = round(startup, 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for name, row in rows.items():
            rate = f"{row['episodes_per_hour']:>9.0f} episodes/h"
            print(f"{name:8} {rate}  ({row['episodes']} in {row['wall_s']} s)")
        print({k: v for k, v in out.items() if k != "rows"})
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
