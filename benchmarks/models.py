"""Model-backend speed with the offline tiny Qwen2.5-VL (CPU).

Measures: building the tiny model; ``agent-runtime serve`` start-up (process spawn to the
"listening" line, torch import included); decode throughput in-process and over HTTP (completion
tokens per second of wall time, with one 1080×2400 screenshot in the prompt); the HTTP overhead per
call; encoding a phone screenshot (cold vs cached); and how long a dead endpoint takes to fail
with the default retry policy.

    python benchmarks/models.py [--iterations 5] [--max-tokens 64] [--threads 1] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _screenshot() -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (1080, 2400), (245, 245, 245))
    draw = ImageDraw.Draw(img)
    for row in range(60):
        draw.rectangle((20, row * 40, 1060, row * 40 + 30), fill=((row * 37) % 255, 90, 160))
        draw.text((40, row * 40 + 8), f"Setting {row}: the quick brown fox 0123456789", fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _start_server(model_dir: Path, *extra: str) -> tuple[subprocess.Popen[str], str, float]:
    cli = Path(sys.executable).with_name("agent-runtime")
    cmd = [str(cli)] if cli.exists() else [sys.executable, "-c", "from agent_runtime.cli import main; main()"]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, "serve", "--model", str(model_dir), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if match := re.search(r"listening at (http://\S+/v1)", line):
            return proc, match.group(1), time.perf_counter() - start
    raise RuntimeError("server exited before listening")


def _throughput(model: Any, messages: list[Any], iterations: int) -> dict[str, float]:
    model.invoke(messages)  # warm-up
    rates, latencies = [], []
    for _ in range(iterations):
        start = time.perf_counter()
        reply = model.invoke(messages)
        elapsed = time.perf_counter() - start
        latencies.append(elapsed * 1000)
        rates.append(reply.usage_metadata["output_tokens"] / elapsed)
    return {
        "tokens_per_s": round(statistics.median(rates), 1),
        "latency_ms": round(statistics.median(latencies), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed calls per measurement")
    parser.add_argument("--max-tokens", type=int, default=64, help="completion tokens per call")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (in-process and server)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    from langchain_core.messages import HumanMessage

    from agent_runtime.coords import ImageBudget
    from agent_runtime.errors import ModelError
    from agent_runtime.models import OpenAIChatModel, TransformersChatModel
    from agent_runtime.models.images import ImageEncoder

    result: dict[str, Any] = {}
    png = _screenshot()
    enc = ImageEncoder()
    start = time.perf_counter()
    part = enc.encode(png, ImageBudget()).part()
    result["encode_cold_ms"] = round((time.perf_counter() - start) * 1000, 1)
    start = time.perf_counter()
    enc.encode(png, ImageBudget())
    result["encode_cached_ms"] = round((time.perf_counter() - start) * 1000, 3)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    start = time.perf_counter()
    try:
        OpenAIChatModel(base_url=dead, model="x").invoke("hi")  # default retries=3, backoff 0.5 s
    except ModelError:
        result["dead_endpoint_fail_s"] = round(time.perf_counter() - start, 2)

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        from agent_runtime.testing.tiny_vlm import build_tiny_vlm

        model_dir = build_tiny_vlm(Path(tmp) / "tiny-vlm")
        result["tiny_build_s_incl_imports"] = round(time.perf_counter() - start, 2)
        messages = [HumanMessage(content=[part, {"type": "text", "text": "### Thought ###"}])]
        import torch

        torch.set_num_threads(args.threads)
        # temperature 1 with top_k off: random weights rarely emit <|im_end|>, so calls run to max_tokens
        local = TransformersChatModel(path=str(model_dir), max_tokens=args.max_tokens, temperature=1.0)
        result["in_process"] = _throughput(local, messages, args.iterations)
        proc, url, startup_s = _start_server(model_dir, "--threads", str(args.threads))
        try:
            result["serve_startup_s"] = round(startup_s, 2)
            remote = OpenAIChatModel(base_url=url, max_tokens=args.max_tokens, temperature=1.0)
            result["http"] = _throughput(remote, messages, args.iterations)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    result["http_overhead_ms"] = round(result["http"]["latency_ms"] - result["in_process"]["latency_ms"], 1)
    result["max_tokens"] = args.max_tokens
    result["threads"] = args.threads
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
