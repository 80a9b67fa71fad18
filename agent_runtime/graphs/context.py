"""The run context: the live, non-serializable parts of one run that graph nodes use.

LangGraph passes it to every node as ``runtime.context`` and never checkpoints it. It owns the
device, the role callers, the trace writer, a small cache of live observations keyed by screen
ref, the thread pool the speculative Notetaker runs in, and the run's totals. One context per
run, so two runs in one process share nothing.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from agent_runtime.config import ModelConfig, RuntimeConfig, shows_tree
from agent_runtime.coords import CoordMapper, Size
from agent_runtime.device import Device
from agent_runtime.observation import Observation
from agent_runtime.roles.caller import RoleCaller
from agent_runtime.telemetry import RunTelemetry
from agent_runtime.traces import CallRecord, InterventionRecord, StepRecord, TraceWriter, Usage
from agent_runtime.tracing import ContextThreadPool

_CACHE_SIZE = 4


@dataclass
class RunContext:
    """Everything a node needs that is not state. Build one per run (see :mod:`agent_runtime.run.session`)."""

    run_id: str
    device: Device
    writer: TraceWriter
    config: RuntimeConfig
    callers: dict[str, RoleCaller]
    platform: str = "mobile"
    device_word: str = "phone"
    #: Two workers: a discarded (failed-step) Notetaker call still in flight never delays the next.
    #: Its tasks keep the run's context variables (third-party tracing as configured).
    executor: ThreadPoolExecutor = field(default_factory=lambda: ContextThreadPool(2, "notetaker"))
    model_ms: float = 0.0
    device_ms: float = 0.0
    calls: int = 0
    #: This session's token usage per role (the run's total is their sum; a money budget prices them).
    role_usage: dict[str, Usage] = field(default_factory=dict)
    #: When this session started (``time.monotonic``): what a time budget counts from (moved on
    #: by the time the run waited for a person).
    started: float = field(default_factory=time.monotonic)
    steps_written: set[int] = field(default_factory=set)
    resumed: bool = False
    #: role -> observation mode (screenshot | ui_tree | both); roles not listed see screenshots.
    observation: dict[str, str] = field(default_factory=dict)
    #: Called after a step is committed and synced (the runtime records the run's totals so far).
    on_commit: Callable[[], None] | None = None
    #: OpenTelemetry export of the run's calls and steps (None: ``[tracing] otel`` is off).
    telemetry: RunTelemetry | None = None
    #: Whether a person can answer this run's requests (else they are settled unattended).
    attended: bool = False
    #: A reply is on its way to the pending request (``Command(resume=...)``): take it even in
    #: a run no one attends (``resume(run_id, reply=...)``).
    replying: bool = False
    #: Set by ``Runtime.pause()`` (Ctrl-\\ in the CLI): the next step starts with a takeover.
    pause: threading.Event = field(default_factory=threading.Event)
    #: Ids of the requests already in interventions.jsonl (a resumed run's too).
    interventions_written: set[str] = field(default_factory=set)
    #: Ids whose line this session appended but could not fsync yet (retried on a re-ask).
    _unsynced: set[str] = field(default_factory=set)
    _observations: OrderedDict[str, Observation] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def mode(self, role: str) -> str:
        """What ``role`` is shown of the screen."""
        return self.observation.get(role, "screenshot")

    @property
    def any_tree(self) -> bool:
        """Whether some role reads the UI tree (then trees travel with the step in progress)."""
        return any(shows_tree(m) for m in self.observation.values())

    # -- calls ----------------------------------------------------------------------------------
    def record_call(self, record: CallRecord) -> None:
        """The sink every RoleCaller writes to: the trace plus the run's totals."""
        self.writer.append_call(record)
        if self.telemetry is not None:
            self.telemetry.call(record)
        with self._lock:
            self.role_usage[record.role] = self.role_usage.get(record.role, Usage()) + record.usage
            self.model_ms += record.latency_ms
            self.calls += 1

    def add_device_ms(self, ms: float) -> None:
        with self._lock:
            self.device_ms += ms

    # -- observations ---------------------------------------------------------------------------
    def remember(self, ref: str, obs: Observation) -> None:
        self._observations[ref] = obs
        self._observations.move_to_end(ref)
        while len(self._observations) > _CACHE_SIZE:
            self._observations.popitem(last=False)

    def cached(self, ref: str | None) -> Observation | None:
        return self._observations.get(ref) if ref else None

    def save_new_screen(self, index: int, png: bytes) -> str:
        """Store a new observation without overwriting one already saved under ``index``."""
        ref = self.writer.save_screen(index, png)
        attempt = 0
        while (self.writer.dir / ref).read_bytes() != png:
            attempt += 1
            ref = self.writer.save_screen(index, png, tag=f"r{attempt}")
        return ref

    def png(self, ref: str) -> bytes:
        """Screenshot bytes for a ref: from the cache, else from the run directory (after a resume)."""
        obs = self._observations.get(ref)
        return obs.screenshot if obs is not None else (self.writer.dir / ref).read_bytes()

    def model(self, role: str) -> ModelConfig:
        """The model config ``role`` is called with."""
        return self.callers[role].model_config

    def mapper(self, screen: Size, role: str) -> CoordMapper:
        """Maps the coordinates of ``role``'s model (the one that chose the action) to this screen."""
        cfg = self.model(role)
        return CoordMapper(space=cfg.coords, screen=screen, budget=cfg.budget)

    # -- steps ----------------------------------------------------------------------------------
    def write_step(self, record: StepRecord) -> None:
        """Commit a step: append it once (a node re-run after a resume does not duplicate it),
        then fsync steps.jsonl and calls.jsonl so a power cut loses at most the step in flight."""
        if record.step in self.steps_written:
            return
        self.writer.append_step(record)
        self.steps_written.add(record.step)
        self.writer.sync()
        if self.telemetry is not None:
            self.telemetry.step(record)
        if self.on_commit is not None:
            self.on_commit()

    def write_intervention(self, record: InterventionRecord) -> None:
        """Record a settled request once, whatever failed on the way: its id is marked as soon as
        its line is in the file, so neither a node re-run after a resume nor a re-ask after a
        failed fsync writes the line again — the re-ask only retries the fsync. Telemetry hears
        of it once, after the line is on disk."""
        if record.request_id not in self._unsynced:
            if record.request_id in self.interventions_written:
                return
            self.writer.append_intervention(record)
            self.interventions_written.add(record.request_id)
            self._unsynced.add(record.request_id)
        self.writer.sync()
        self._unsynced.discard(record.request_id)
        if self.telemetry is not None:
            self.telemetry.intervention(record)

    def take_pause(self) -> bool:
        """Whether a pause was asked for since the last look (clearing it): only an attended run
        can hand the device to a person."""
        if not self.pause.is_set():
            return False
        self.pause.clear()
        return self.attended

    def totals(self) -> tuple[Usage, dict[str, float]]:
        """This session's token usage and timings so far (model_ms, device_ms, calls)."""
        with self._lock:
            usage = sum(self.role_usage.values(), Usage())
            return usage, {"model_ms": self.model_ms, "device_ms": self.device_ms, "calls": self.calls}

    def role_totals(self) -> dict[str, Usage]:
        """This session's token usage per role so far."""
        with self._lock:
            return dict(self.role_usage)

    def close(self) -> None:
        """Wait for a Notetaker call still in flight, so its record reaches calls.jsonl."""
        self.executor.shutdown(wait=True, cancel_futures=True)
