"""A run's plan: the request validated, run id, directory and device picked — before anything is written.

A usage error (an empty task, a bad step limit, a device spec no backend knows) is refused
before the runtime decides on its models (:func:`check_new_run`), so it is reported as what it
is rather than as a missing model. A resumed run is locked first (:mod:`agent_runtime.runlock`:
one process plays a run), then read, so what is checked is what this process will continue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent_runtime.config import GRAPH_KINDS, GraphKind, RuntimeConfig, check_max_steps
from agent_runtime.control import InputRequest, as_reply
from agent_runtime.device import Device
from agent_runtime.errors import ConfigError, TraceError
from agent_runtime.events import Notice
from agent_runtime.resume import Totals, carried_totals, check_checkpoint, restore_device
from agent_runtime.run.checking import check_notice, new_run_check, resumed_run_check
from agent_runtime.run.request import NewRun, ResumeRun
from agent_runtime.runlock import RunLock
from agent_runtime.specs import DEFAULT_GRAPH
from agent_runtime.traces import RunRecord, Verification, find_run, load_run, new_run_id

if TYPE_CHECKING:
    from agent_runtime.checks import RunCheck

#: The statuses a run can be resumed from.
_RESUMABLE = ("running", "error", "interrupted", "waiting")


@dataclass
class Plan:
    """What a run will be: validated before any file is written. The run that plays it owns
    its device (when ``owned``) and its lock."""

    run_id: str
    run_dir: Path
    task: str
    max_steps: int
    device: Device
    owned: bool
    previous: RunRecord | None = None
    written: set[int] = field(default_factory=set)
    base: Totals = field(default_factory=Totals)
    #: What restoring a resumed run's device had to say (yielded once the run has started).
    notices: list[Notice] = field(default_factory=list)
    #: What judges the run at its end on the SimPhone built for it, if anything can.
    check: RunCheck | None = None
    #: Why the run cannot be checked (when ``check`` is None).
    unchecked: str = "this run plays no SimPhone task, so nothing could check it"
    #: The graph kind the run plays (a resumed run: the one it started with).
    kind: GraphKind = "mobile_agent_v3"
    #: Ids of the requests a resumed run already recorded in interventions.jsonl.
    interventions: set[str] = field(default_factory=set)
    #: The run directory's lock, held from before the run is read to after its last write.
    lock: RunLock | None = None

    def verify(self, answer: str | None) -> Verification:
        """The run's check at its end, or why nothing could check it."""
        if self.check is None:
            return Verification(detail=self.unchecked)
        return self.check.verify(self.device, answer)


def open_device(
    device: Device | str | None, config: RuntimeConfig, fallback_spec: str | None = None
) -> tuple[Device, bool]:
    """The device to use and whether the run owns it (and must close it)."""
    if isinstance(device, Device):
        return device, False
    spec = device or fallback_spec or config.device.spec
    if not isinstance(spec, str):
        raise ConfigError(f"device must be a Device or a spec string, got {type(device).__name__}")
    from agent_runtime.devices.registry import resolve_device

    return resolve_device(spec, **config.device.options), True


def check_new_run(request: NewRun, config: RuntimeConfig) -> int:
    """Refuse a new run's usage errors; its step limit."""
    if not request.task or not request.task.strip():
        raise ConfigError("the task is empty", hint="describe what the agent should do")
    limit = check_max_steps(request.max_steps if request.max_steps is not None else config.graph.max_steps)
    if request.device is None or isinstance(request.device, str):
        from agent_runtime.devices.registry import split_spec

        split_spec(request.device or config.device.spec)
    return limit


def plan_new(request: NewRun, config: RuntimeConfig, runs_dir: Path, max_steps: int) -> Plan:
    """A new run's plan (``request`` passed :func:`check_new_run`), with the configuration its
    models were chosen in: a SimPhone task's phone is set up for its check."""
    run_id = new_run_id()
    check, unchecked = new_run_check(request.task, request.device, config)
    dev, owned = (
        (check.phone(**config.device.options), True) if check else open_device(request.device, config)
    )
    plan = Plan(
        run_id, runs_dir / run_id, request.task, max_steps, dev, owned, check=check, kind=config.graph.kind
    )
    if check is not None:
        plan.notices.append(check_notice(check))
    else:
        plan.unchecked = unchecked
    return plan


def plan_resume(request: ResumeRun, config: RuntimeConfig, runs_dir: Path) -> Plan:
    """A resumed run's plan, its directory locked before it is read."""
    run_dir = find_run(runs_dir, request.run_id)
    lock = RunLock.acquire(run_dir)
    try:
        plan = _resumed(run_dir, request, config)
    except BaseException:
        lock.release()
        raise
    plan.lock = lock
    return plan


def _resumed(run_dir: Path, request: ResumeRun, config: RuntimeConfig) -> Plan:
    """A resumed run's plan (its directory locked by the caller): resumable, its checkpoint
    this run's, the reply one its pending request accepts, its device put back."""
    loaded = load_run(run_dir)
    previous = loaded.run
    if previous.status not in _RESUMABLE:
        raise ConfigError(
            f"run {previous.run_id} already ended with status {previous.status!r}",
            hint="only runs that were interrupted or stopped by an error can be resumed",
        )
    if not (run_dir / "checkpoint.sqlite").is_file():
        raise TraceError(f"run {previous.run_id} has no checkpoint.sqlite to resume from")
    values = check_checkpoint(run_dir, previous.run_id)
    if request.reply is not None and values.get("request") is not None:
        # A reply the request does not accept is refused now: the run stays waiting.
        as_reply(request.reply).check(InputRequest.model_validate(values["request"]))
    kind = (previous.config.get("graph") or {}).get("kind", DEFAULT_GRAPH)
    if kind not in GRAPH_KINDS:
        raise TraceError(f"run {previous.run_id} was played by an unknown graph kind {kind!r}")
    dev, owned = open_device(request.device, config, previous.device.get("spec"))
    plan = Plan(
        previous.run_id,
        run_dir,
        previous.task,
        config.graph.max_steps,
        dev,
        owned,
        previous,
        {s.step for s in loaded.steps},
        carried_totals(loaded),
        kind=kind,
        interventions={i.request_id for i in loaded.interventions},
    )
    try:
        plan.check = resumed_run_check(previous, dev, owned=owned)
        plan.notices = restore_device(
            dev,
            owned=owned,
            run_dir=run_dir,
            run_id=previous.run_id,
            started_on=previous.device.get("spec", "?"),
            written=plan.written,
            steps=loaded.steps,
            values=values,
        )
    except BaseException:
        if owned:
            dev.close()
        raise
    return plan
