"""agent-runtime: a runtime for GUI agents.

The public surface is :data:`__all__`: the runtime, its configuration, devices, observations and
actions, the events a run streams (``Runtime.stream``) and every error it raises on purpose. Heavy
parts (torch, chromadb, adbutils, pyautogui) load only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from agent_runtime.version import __version__

if TYPE_CHECKING:
    from agent_runtime.runtime import RunInterrupted, RunResult, Runtime

#: Names loaded on first use (the runtime pulls in LangGraph).
_LAZY = {name: "agent_runtime.runtime" for name in ("Runtime", "RunResult", "RunInterrupted")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
