"""``agent-runtime selftest``: the whole pipeline on a fresh CPU-only machine, no downloads.

(It was called ``agent-runtime demo``, which read like "the offline demo model"; ``demo`` still
works, hidden, and says the new name.)

It builds the tiny offline Qwen2.5-VL (cached), starts the built-in OpenAI-compatible server with
it as a real subprocess, and runs a task on SimPhone over HTTP with every role pointed at that
server. The tiny model has **random weights**: it exercises serving, the graph, parsing and
re-asks, device execution and tracing — it does not solve the task. On a GPU, run ``vllm serve``
with a real model and ``agent-runtime run`` instead (see the README).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import httpx
import typer
from rich.console import Console

from agent_runtime.cli import guarded
from agent_runtime.errors import DependencyError, ModelError

SERVED_NAME = "tiny-vlm"


def cache_dir() -> Path:
    """Where the tiny model is kept between demo runs (``$XDG_CACHE_HOME/agent-runtime``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "agent-runtime" / "tiny-vlm"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ensure_tiny_model(console: Console) -> Path:
    out = cache_dir()
    if (out / "config.json").is_file():
        return out
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, "serve", "the demo's tiny model")
    with console.status("building the tiny offline model (once)…"):
        from transformers.utils import logging as hf_logging

        from agent_runtime.testing.tiny_vlm import build_tiny_vlm

        hf_logging.disable_progress_bar()
        build_tiny_vlm(out)
    return out


def start_server(
    model_dir: Path, port: int, console: Console, timeout_s: float = 120.0
) -> subprocess.Popen[bytes]:
    """Start ``agent-runtime serve`` as a real process and wait until it answers."""
    cmd = [
        sys.executable,
        "-m",
        "agent_runtime.cli",
        "serve",
        "--model",
        str(model_dir),
        "--port",
        str(port),
        "--served-model-name",
        SERVED_NAME,
        "--threads",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout_s
    with console.status(f"starting the built-in server on port {port}…"):
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise ModelError(f"the demo server exited with code {proc.returncode}: {err.strip()[-500:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    proc.kill()
    raise ModelError(f"the demo server did not answer within {timeout_s:.0f} s")


TaskArg = Annotated[str, typer.Argument(help="The task for the agent.")]
StepsOpt = Annotated[int, typer.Option("--max-steps", min=1, help="Step budget.")]
RunsOpt = Annotated[Path, typer.Option("--runs-dir", help="Where the run directory goes.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="SimPhone seed.")]
#: What ``agent-runtime demo`` (the old name) prints before it runs the self-test.
RENAMED = (
    "'agent-runtime demo' is now 'agent-runtime selftest' (a random-weights pipeline check, not the "
    "offline demo model: that one plays with 'agent-runtime run TASK' when nothing is configured)"
)


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def selftest(
        task: TaskArg = "Turn on Wi-Fi",
        max_steps: StepsOpt = 4,
        runs_dir: RunsOpt = Path("./runs"),
        seed: SeedOpt = 0,
    ) -> None:
        """Check the whole pipeline offline: a tiny random-weights model behind `serve`, on SimPhone."""
        run_selftest(task, max_steps, runs_dir, seed)

    @app.command(hidden=True, deprecated=True)
    @guarded
    def demo(
        task: TaskArg = "Turn on Wi-Fi",
        max_steps: StepsOpt = 4,
        runs_dir: RunsOpt = Path("./runs"),
        seed: SeedOpt = 0,
    ) -> None:
        """The old name of ``selftest``."""
        Console(stderr=True).print(f"[yellow]{RENAMED}[/]", highlight=False)
        run_selftest(task, max_steps, runs_dir, seed)


def run_selftest(task: str, max_steps: int, runs_dir: Path, seed: int) -> None:
    """The self-test: build and serve the tiny model, run ``task`` against it, check the trace."""
    from agent_runtime.cli.run import LiveView
    from agent_runtime.config import RuntimeConfig
    from agent_runtime.events import RunFinished
    from agent_runtime.runtime import Runtime
    from agent_runtime.traces import load_run
    from agent_runtime.tracing import Redactor

    console = Console(stderr=True)
    console.print(
        "[bold yellow]selftest:[/] the tiny offline model has random weights — it exercises the whole "
        "pipeline (server, roles, parsing, device, traces) but does not solve tasks. "
        "For real runs see the README.",
        highlight=False,
    )
    model_dir = ensure_tiny_model(console)
    port = free_port()
    server = start_server(model_dir, port, console)
    try:
        config = RuntimeConfig(
            models={
                "default": {
                    "base_url": f"http://127.0.0.1:{port}/v1",
                    "model": SERVED_NAME,
                    "min_pixels": 56 * 56,
                    "max_pixels": 112 * 112,
                    "max_tokens": 48,
                    "retries": 1,
                    "timeout_s": 60,
                }
            },
            graph={"max_steps": max_steps, "reask": 1},
            device={"spec": f"simphone:{seed}"},
            runs={"dir": runs_dir},
            roles={"rag": {"enabled": False}},
        )
        final: RunFinished | None = None
        with LiveView(console, Redactor()) as view:
            for event in Runtime(config).stream(task, device=f"simphone:{seed}"):
                view.show(event)
                final = event if isinstance(event, RunFinished) else final
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    if final is None:
        raise typer.Exit(1)
    run = load_run(final.run_dir)
    parse_errors = sum(1 for c in run.calls if c.parse_error)
    console.print(
        f"[bold]pipeline ok[/]: run {final.run_id} ended '{final.status}' after {final.steps} steps; "
        f"{len(run.calls)} role calls over HTTP ({parse_errors} unparseable, as expected from random "
        "weights); "
        f"trace in {final.run_dir}",
        highlight=False,
    )
    console.print(
        f"inspect it with: agent-runtime traces show {final.run_id} --runs-dir {runs_dir}",
        highlight=False,
    )
    if final.status == "error":
        raise typer.Exit(1)
