"""``agent-runtime init`` and ``agent-runtime doctor``: get a working setup and prove it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import httpx
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent_runtime import demo_model
from agent_runtime.config import (
    DEFAULT_CONFIG_NAME,
    EXAMPLE_CONFIG,
    GRAPH_ROLES,
    ROLES,
    ModelConfig,
    RuntimeConfig,
    load_config,
)
from agent_runtime.devices.registry import check_backend, split_spec
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.profiles import resolve as resolve_profile

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Config file (default: ./agent-runtime.toml).")
]

#: extra -> the import names it provides, for doctor's table.
EXTRAS: dict[str, tuple[str, ...]] = {
    "android": ("adbutils",),
    "desktop": ("pyautogui", "mss"),
    "rag": ("chromadb", "ddgs", "sentence_transformers"),
    "train": ("torch", "transformers", "trl", "peft", "accelerate", "datasets"),
    "serve": ("fastapi", "uvicorn"),
    "ray": ("ray",),
    "mcp": ("mcp",),
    "otel": ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.grpc"),
}


def probe_model(cfg: ModelConfig, timeout_s: float = 5.0) -> tuple[bool, str]:
    """Check that a model is usable: ``GET /models`` on an endpoint, or the path of an in-process one."""
    if cfg.in_process:
        kind, _, where = cfg.model.partition(":")
        if kind == "transformers" and not Path(where).expanduser().exists():
            return False, f"{where} does not exist"
        missing = [p for p in ("torch", "transformers") if importlib.util.find_spec(p) is None]
        if missing:
            return False, f"needs {', '.join(missing)}: pip install 'agent-runtime[train]'"
        return True, f"in-process {cfg.model}"
    url = f"{(cfg.base_url or '').rstrip('/')}/models"
    try:
        resp = httpx.get(url, headers={"Authorization": f"Bearer {cfg.api_key}"}, timeout=timeout_s)
        resp.raise_for_status()
        ids = [m.get("id", "?") for m in resp.json().get("data", [])]
    except (httpx.HTTPError, ValueError) as exc:
        return False, f"{url}: {type(exc).__name__}: {exc}".strip()
    if not ids:
        return False, f"{url} lists no models"
    if cfg.model != "auto" and cfg.model not in ids:
        return False, f"{cfg.model!r} not served (served: {', '.join(ids)})"
    return True, f"{cfg.base_url} serves {', '.join(ids)}"


def profile_note(cfg: ModelConfig, probed: str) -> str:
    """Which model profile (docs/models.md) the role's model runs under, and why: ``auto``
    reads the served id (the first one the endpoint lists when ``model = "auto"``)."""
    served = cfg.model
    if served == "auto" and " serves " in probed:
        served = probed.split(" serves ", 1)[1].split(", ")[0]
    name, why = resolve_profile(cfg.profile, served)
    return f"profile {name} ({why})"


def run_doctor(
    config: RuntimeConfig | None, config_error: AgentRuntimeError | None
) -> tuple[Table, list[str]]:
    """Build the doctor table; return it and the names of the required checks that failed."""
    table = Table(title="agent-runtime doctor")
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    failed: list[str] = []

    def row(name: str, ok: bool, detail: str, required: bool = True) -> None:
        status = "[green]ok[/]" if ok else ("[red]FAIL[/]" if required else "[yellow]missing[/]")
        table.add_row(name, status, escape(detail))
        if required and not ok:
            failed.append(name)

    row("config", config_error is None, str(config_error) if config_error else "valid")
    if config is not None:
        probed: dict[str, tuple[bool, str]] = {}
        used = config.graph_roles()
        row("graph", True, f"{config.graph.kind}: roles {', '.join(used)}")
        for role in ROLES:
            if role not in used:
                if role in GRAPH_ROLES[config.graph.kind]:  # an optional role switched off
                    row(f"role {role}", True, "disabled")
                continue
            try:
                cfg = config.model_for(role)
            except AgentRuntimeError as exc:
                row(f"role {role}", False, str(exc))
                continue
            key = f"{cfg.base_url}|{cfg.model}"
            if key not in probed:
                probed[key] = probe_model(cfg)
            ok, detail = probed[key]
            row(f"role {role}", ok, f"{detail}; {profile_note(cfg, detail)}")
        try:
            kind, _ = split_spec(config.device.spec)
            check_backend(kind)
            row("device", True, config.device.spec)
        except AgentRuntimeError as exc:
            row("device", False, str(exc))
    why = demo_model.missing()
    row(
        "demo model",
        why is None,
        "ready: SmolLM2-135M + LoRA, offline (used by run when nothing is configured and no server answers)"
        if why is None
        else f"{why}: {demo_model.INSTALL_HINT}",
        required=False,
    )
    if _installed("torch"):  # in-process models: the formats their fast engine packs in
        from agent_runtime.models.cpu_formats import choose, detect

        cap = detect()
        row("cpu", True, f"{cap.describe()} -> {choose(cap).describe()}", required=False)
    for extra, packages in EXTRAS.items():
        missing = [p for p in packages if not _installed(p)]
        row(
            f"extra \\[{extra}]",
            not missing,
            "installed" if not missing else f"missing {', '.join(missing)}",
            required=False,
        )
    return table, failed


def _installed(module: str) -> bool:
    """Whether ``module`` (dotted names too) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        return False


def _demo_in_use(cfg: RuntimeConfig | None) -> RuntimeConfig | None:
    """The demo configuration ``run`` would fall back to (and can run), else None."""
    if cfg is None or demo_model.missing() is not None:
        return None
    return demo_model.fallback(cfg)


def register(app: typer.Typer) -> None:
    @app.command()
    def init(
        path: Annotated[Path, typer.Argument(help="Where to write the config.")] = Path(DEFAULT_CONFIG_NAME),
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    ) -> None:
        """Write a commented example configuration."""
        if path.exists() and not force:
            Console(stderr=True).print(f"[red]error:[/] {path} exists; pass --force to overwrite")
            raise typer.Exit(2)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(EXAMPLE_CONFIG, encoding="utf-8")
        print(f"wrote {path}")

    @app.command()
    def doctor(config: ConfigOpt = None) -> None:
        """Check the config, each role's model endpoint, the device spec and installed extras."""
        cfg: RuntimeConfig | None = None
        error: AgentRuntimeError | None = None
        try:
            cfg = load_config(config)
        except AgentRuntimeError as exc:
            error = exc
        demo = _demo_in_use(cfg)
        table, failed = run_doctor(demo or cfg, error)
        Console().print(table)
        if demo is not None:
            print(f"{demo_model.NOTICE} (the roles above)")
        if failed:
            err = Console(stderr=True)
            err.print("[red]doctor found problems[/] (see FAIL rows above)")
            if any(name.startswith("role ") for name in failed):
                err.print(
                    "  no model endpoint answers: start one (vllm serve MODEL --port 8000, or "
                    "agent-runtime serve --model DIR), point [models.default] base_url at yours, "
                    "or try the offline pipeline: agent-runtime selftest (with no config file at all, "
                    "run falls back to the offline demo model)",
                    highlight=False,
                    markup=False,
                )
            raise typer.Exit(1)
