"""agent-runtime: a runtime for GUI agents.

The public surface is :data:`__all__`: the runtime, its configuration, devices, observations and
actions, the events a run streams (``Runtime.stream``) and every error it raises on purpose.

Every name loads on first use (PEP 562 ``__getattr__``), so ``import agent_runtime`` — and with
it every ``agent_runtime.*`` import, the CLI's included — costs the interpreter little more than
``python -c pass``: the configuration pulls in pydantic-settings, the runtime LangGraph, and the
heavy parts (torch, chromadb, adbutils, pyautogui) load only when used. Type checkers read the
imports under ``TYPE_CHECKING``; :data:`_LAZY` must name the same modules (tests/test_startup.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_runtime.version import __version__

if TYPE_CHECKING:
    from agent_runtime.actions import Action, ActionResult, parse_action
    from agent_runtime.config import RuntimeConfig, SafetyConfig, load_config
    from agent_runtime.control import InputReply, InputRequest
    from agent_runtime.coords import CoordMapper, CoordSpace, Size, smart_resize
    from agent_runtime.device import Device, DeviceInfo
    from agent_runtime.devices.registry import resolve_device
    from agent_runtime.errors import (
        ActionParseError,
        AgentRuntimeError,
        ClusterError,
        ConfigError,
        DependencyError,
        DeviceError,
        DeviceNotFoundError,
        MemoryStoreError,
        ModelError,
        ParseError,
        RunLockedError,
        TaskError,
        TraceError,
        TraceWriteError,
        TrainingError,
    )
    from agent_runtime.events import (
        ActionExecuted,
        Event,
        InputAnswered,
        InputRequested,
        NotesEvent,
        Notice,
        RoleOutputEvent,
        RunFinished,
        RunStarted,
        StepStarted,
        VerdictEvent,
    )
    from agent_runtime.observation import Observation, UIElement, compress_ui_xml, parse_ui_xml
    from agent_runtime.runtime import RunInterrupted, RunResult, Runtime

_MODULES = {
    "agent_runtime.actions": ("Action", "ActionResult", "parse_action"),
    "agent_runtime.config": ("RuntimeConfig", "SafetyConfig", "load_config"),
    "agent_runtime.control": ("InputReply", "InputRequest"),
    "agent_runtime.coords": ("CoordMapper", "CoordSpace", "Size", "smart_resize"),
    "agent_runtime.device": ("Device", "DeviceInfo"),
    "agent_runtime.devices.registry": ("resolve_device",),
    "agent_runtime.errors": (
        "ActionParseError",
        "AgentRuntimeError",
        "ClusterError",
        "ConfigError",
        "DependencyError",
        "DeviceError",
        "DeviceNotFoundError",
        "MemoryStoreError",
        "ModelError",
        "ParseError",
        "RunLockedError",
        "TaskError",
        "TraceError",
        "TraceWriteError",
        "TrainingError",
    ),
    "agent_runtime.events": (
        "ActionExecuted",
        "Event",
        "InputAnswered",
        "InputRequested",
        "NotesEvent",
        "Notice",
        "RoleOutputEvent",
        "RunFinished",
        "RunStarted",
        "StepStarted",
        "VerdictEvent",
    ),
    "agent_runtime.observation": ("Observation", "UIElement", "compress_ui_xml", "parse_ui_xml"),
    "agent_runtime.runtime": ("RunInterrupted", "RunResult", "Runtime"),
}

#: Each public name → the module it loads from on first use.
_LAZY = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Action",
    "ActionExecuted",
    "ActionParseError",
    "ActionResult",
    "AgentRuntimeError",
    "ClusterError",
    "ConfigError",
    "CoordMapper",
    "CoordSpace",
    "DependencyError",
    "Device",
    "DeviceError",
    "DeviceInfo",
    "DeviceNotFoundError",
    "Event",
    "InputAnswered",
    "InputReply",
    "InputRequest",
    "InputRequested",
    "MemoryStoreError",
    "ModelError",
    "NotesEvent",
    "Notice",
    "Observation",
    "ParseError",
    "RoleOutputEvent",
    "RunFinished",
    "RunInterrupted",
    "RunLockedError",
    "RunResult",
    "RunStarted",
    "Runtime",
    "RuntimeConfig",
    "SafetyConfig",
    "Size",
    "StepStarted",
    "TaskError",
    "TraceError",
    "TraceWriteError",
    "TrainingError",
    "UIElement",
    "VerdictEvent",
    "__version__",
    "compress_ui_xml",
    "load_config",
    "parse_action",
    "parse_ui_xml",
    "resolve_device",
    "smart_resize",
]
