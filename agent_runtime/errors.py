"""Every error agent-runtime raises on purpose.

The tree::

    AgentRuntimeError                 base; carries ``hint`` and ``context``
    ├── ClusterError                  a Ray cluster cannot be reached, or an episode's workers kept dying
    ├── ConfigError                   bad or unknown config keys, bad CLI arguments
    ├── DependencyError               an optional extra is not installed
    ├── DeviceError                   a device cannot be reached or refused a command
    │   └── DeviceNotFoundError       no device matches the spec / serial
    ├── ModelError                    a model endpoint failed (dead server, HTTP error, timeout)
    ├── ParseError                    a model reply could not be parsed into its typed output
    │   └── ActionParseError          … specifically the action JSON (names the bad field)
    ├── MemoryStoreError              the memory store (chromadb, embeddings) cannot be opened or used
    ├── TaskError                     an unknown or invalid SimPhone task
    ├── TraceError                    a run directory is missing or unreadable
    │   ├── RunLockedError            another process is playing the run (one writer per run)
    │   └── TraceWriteError           a run directory cannot be written: full, read-only, uncreatable
    └── TrainingError                 a trainer could not run (no data, bad base model)

Errors caused by *model output* (``ParseError``) are recorded on the step and fed back to the
model; every other error stops the run with a message the CLI prints without a traceback.
"""

from __future__ import annotations

from typing import Any


class AgentRuntimeError(Exception):
    """Base class. ``hint`` tells the user how to fix it; ``context`` says where it happened."""

    def __init__(self, message: str, *, hint: str | None = None, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.context = {k: v for k, v in context.items() if v is not None}

    def __str__(self) -> str:
        text = self.message
        if self.context:
            where = ", ".join(f"{k}={v}" for k, v in self.context.items())
            text = f"{text} [{where}]"
        if self.hint:
            text = f"{text}\n  hint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form for traces and logs."""
        return {
            "type": type(self).__name__,
            "message": self.message,
            "hint": self.hint,
            "context": {k: str(v) for k, v in self.context.items()},
        }


class ClusterError(AgentRuntimeError):
    """The execution backend could not play episodes: the Ray cluster cannot be reached, or an
    episode's worker died more often than its retries allow (``key`` names the episode)."""


class ConfigError(AgentRuntimeError):
    """The configuration file, an environment override or a CLI argument is invalid."""


class DependencyError(AgentRuntimeError):
    """An optional extra is needed but not installed."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed",
            hint=f"pip install 'agent-runtime[{extra}]'",
        )
        self.package = package
        self.extra = extra


class DeviceError(AgentRuntimeError):
    """A device could not be reached, dropped its connection, or refused a command."""


class DeviceNotFoundError(DeviceError):
    """No device matches the requested spec or serial."""


class ModelError(AgentRuntimeError):
    """A model backend failed: connection refused, HTTP error, timeout, bad reply shape."""


class ParseError(AgentRuntimeError):
    """A model reply could not be parsed into the role's typed output."""


class ActionParseError(ParseError):
    """An action object is malformed; ``field`` names the offending field."""

    def __init__(self, message: str, *, field: str | None = None, **context: Any) -> None:
        super().__init__(message, field=field, **context)
        self.field = field


class MemoryStoreError(AgentRuntimeError):
    """The memory store cannot be opened, read or written (chromadb, the embedding model)."""


class TaskError(AgentRuntimeError):
    """An unknown task template or invalid task parameters."""


class TraceError(AgentRuntimeError):
    """A run directory or trace file is missing or unreadable."""


class RunLockedError(TraceError):
    """Another process (or another runtime in this one) is playing the run: two writers would
    play its steps twice, so the second is refused. ``pid``, ``host`` and ``since`` name the holder
    (as it wrote them in the run's lock file; None when it had not written them yet)."""

    def __init__(
        self,
        message: str,
        *,
        pid: int | None = None,
        host: str | None = None,
        since: float | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message, **context)
        self.pid, self.host, self.since = pid, host, since


class TraceWriteError(TraceError):
    """A run directory cannot be written: the disk is full, the file system is read-only, the
    directory cannot be created or is not ours to write. Nothing is left half-written (files are
    replaced whole); a run that was playing stays resumable once there is room."""


class TrainingError(AgentRuntimeError):
    """A trainer could not run: no samples after filtering, a bad base model, …"""
