"""Resuming a run: the checkpoint it continues from, the config and totals it carries, its device.

A run's plan (:mod:`agent_runtime.run.plan`) calls these while it prepares a resumed run (before
anything is written), and its session (:mod:`agent_runtime.run.session`) whenever a step commits.
See :mod:`agent_runtime.runtime`'s docstring for what a resume guarantees.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.config import RuntimeConfig
from agent_runtime.device import Device
from agent_runtime.errors import AgentRuntimeError, ConfigError, TraceError
from agent_runtime.events import Notice
from agent_runtime.runlock import LOCK_NAME
from agent_runtime.traces import LoadedRun, RunRecord, StepRecord, Usage, replace_file

if TYPE_CHECKING:
    from agent_runtime.graphs.context import RunContext
    from agent_runtime.simphone import SimPhone
    from agent_runtime.tracing import Redactor

#: The SimPhone snapshot a run directory keeps: the phone's state after the last committed step.
SIMPHONE_SNAPSHOT = "simphone.json"


def recorded_config(run: RunRecord, current: RuntimeConfig) -> RuntimeConfig:
    """The configuration a run started with (run.json's ``config``), for resuming it.

    run.json holds no secrets, so API keys come from ``current`` for models (and role
    endpoints) with the same name and base URL, and the values to redact are ``current``'s;
    the runs directory is ``current``'s (where the run was found). Environment variables
    (``AGENT_RUNTIME_…``) still override, as they do for a config file. A run recorded without
    a config snapshot resumes with ``current``.
    """
    if not run.config:
        return current
    data = json.loads(json.dumps(run.config))
    for name, model in (data.get("models") or {}).items():
        mine = current.models.get(name)
        if isinstance(model, dict) and mine is not None and mine.base_url == model.get("base_url"):
            model["api_key"] = mine.api_key
    for name, role in (data.get("roles") or {}).items():
        mine_role = current.roles.get(name)
        if isinstance(role, dict) and mine_role is not None and mine_role.base_url == role.get("base_url"):
            role["api_key"] = mine_role.api_key
    data.setdefault("memory", {})["sensitive"] = list(current.memory.sensitive)
    data.setdefault("runs", {})["dir"] = str(current.runs.dir)
    # Where traces may go is the user's choice now, not the one recorded with the run.
    data["tracing"] = current.tracing.model_dump()
    try:
        return RuntimeConfig(**data)
    except ValueError as exc:
        raise ConfigError(
            f"run {run.run_id} recorded a configuration this version cannot use: {exc}",
            hint="resume with --config FILE to use another configuration",
        ) from None


@dataclass(frozen=True)
class Totals:
    """What a run spent before this session: timings (total_ms, model_ms, device_ms, calls) and tokens."""

    timings: dict[str, float] = field(default_factory=dict)
    tokens: Usage = field(default_factory=Usage)


def with_totals(record: RunRecord, base: Totals, ctx: RunContext, started: float, *, steps: int) -> RunRecord:
    """``record`` with the totals so far: before this session plus this session."""
    usage, session = ctx.totals()
    now = time.time()
    timings = {
        "total_ms": base.timings.get("total_ms", 0.0) + (now - started) * 1000,
        "model_ms": base.timings.get("model_ms", 0.0) + session["model_ms"],
        "device_ms": base.timings.get("device_ms", 0.0) + session["device_ms"],
        "calls": base.timings.get("calls", 0.0) + session["calls"],
    }
    return record.model_copy(
        update={"timings": timings, "tokens": base.tokens + usage, "steps": steps, "updated_at": now}
    )


def carried_totals(loaded: LoadedRun) -> Totals:
    """The totals a resumed run starts from: run.json's, plus what a killed session spent after
    its last run.json write — its calls from calls.jsonl (run.json counts the calls it covers)
    and its time up to the last file it wrote."""
    run = loaded.run
    timings = {k: float(v) for k, v in run.timings.items()}
    tokens = run.tokens
    if run.status != "running":  # ended cleanly (an error): run.json is complete
        return Totals(timings, tokens)
    counted = int(timings.get("calls", 0))
    missed = loaded.calls[counted:]
    for call in missed:
        tokens = tokens + call.usage
        timings["model_ms"] = timings.get("model_ms", 0.0) + call.latency_ms
    timings["calls"] = float(counted + len(missed))
    extra = run.model_extra or {}
    since = float(extra.get("updated_at") or (run.created_at if not timings.get("total_ms") else 0.0))
    if since:
        last = _last_write(loaded.dir)
        timings["total_ms"] = timings.get("total_ms", 0.0) + max(0.0, last - since) * 1000
    return Totals(timings, tokens)


def _last_write(run_dir: Path) -> float:
    """When a killed run last wrote anything: the newest mtime among its files."""
    newest = 0.0
    for path in (*run_dir.glob("*"), *run_dir.glob("screens/*")):
        if path.name == LOCK_NAME:  # written by this resume as it locked the run, not by the run
            continue
        try:
            if path.is_file():
                newest = max(newest, path.stat().st_mtime)
        except OSError:
            continue
    return newest


def restore_device(
    device: Device,
    *,
    owned: bool,
    run_dir: Path,
    run_id: str,
    started_on: str,
    written: set[int],
    steps: list[StepRecord],
    values: dict[str, Any],
) -> list[Notice]:
    """Put a resumed run's device where its trace says it is (see the module docs), before
    anything is written; returns what to tell the user.

    The actions that ran are those of the committed steps in steps.jsonl, plus the step in
    progress when the checkpoint holds its execution's result; a step whose execution was
    interrupted is not replayed (the Worker decides it again). An owned SimPhone is first put
    in the state of the run's snapshot (:func:`save_simphone`), when there is one, and replays
    only the steps after it; a run written before snapshots existed replays them all. The
    screen to match is the one the checkpoint points to.
    """
    from agent_runtime.simphone import SimPhone

    replay = owned and isinstance(device, SimPhone)
    after = load_simphone(device, run_dir) if owned and isinstance(device, SimPhone) else None
    since = after if after is not None else -1
    batches = [
        actions
        for rec in sorted(steps, key=lambda r: r.step)
        if rec.step > since and (actions := executed_actions(rec))
    ]
    pending = values.get("pending")
    if pending is not None and pending.action_result is not None and pending.step not in written:
        batches.append(pending.to_execute)
    if replay:
        for actions in batches:
            for action in actions:
                if not device.execute(action).ok:
                    break
    ref = values.get("screen")
    expected = run_dir / ref if isinstance(ref, str) else None
    restored = f"SimPhone restored: replayed the actions of {len(batches)} steps"
    if after is not None:
        restored = (
            f"SimPhone restored from its snapshot after step {after}, then {len(batches)} steps replayed"
        )
    if expected is None or not expected.is_file():
        return [Notice(message=restored)] if replay and (batches or after is not None) else []
    if same_screen(device.observe().screenshot, expected.read_bytes()):
        return [Notice(message=f"{restored}; the screen equals {ref}")] if replay else []
    if replay:
        raise TraceError(
            f"cannot resume run {run_id} on SimPhone: replaying its {len(batches)} executed "
            f"steps on a fresh {device.info().spec} does not reproduce the last recorded screen ({ref})",
            hint=f"resume on the device the run started on ({started_on}, same options) with the same "
            "agent-runtime version; or start the task again as a new run",
            run_dir=run_dir,
        )
    return [
        Notice(
            level="warning",
            message=f"the device's screen differs from the last screen this run recorded ({ref}): an "
            "action in flight when the run stopped probably reached the device, or the device was "
            "used since; the agent continues from what is on the screen now",
        )
    ]


def snapshot_device(device: Device, *, owned: bool, run_dir: Path, step: int, redactor: Redactor) -> None:
    """After committed ``step``: keep the state of an in-process SimPhone the run built
    (:func:`save_simphone`), so that a resume restores it instead of replaying every step. Any
    other device keeps its own state."""
    from agent_runtime.simphone import SimPhone

    if owned and isinstance(device, SimPhone):
        save_simphone(device, run_dir, step, redactor)


def save_simphone(phone: SimPhone, run_dir: Path, step: int, redactor: Redactor) -> bool:
    """Keep ``phone``'s state after committed ``step`` in the run directory, replaced whole.

    A state holding a value the run must not write (``[memory] sensitive``) is not saved, and
    an older snapshot is removed: the resume then replays the steps instead. False then.
    """
    path = run_dir / SIMPHONE_SNAPSHOT
    state = phone.state()
    if redactor and redactor.apply(state) != state:
        path.unlink(missing_ok=True)
        return False
    replace_file(path, json.dumps({"step": step, "state": state}).encode("utf-8"))
    return True


def load_simphone(phone: SimPhone, run_dir: Path) -> int | None:
    """Put the run's snapshot onto the fresh ``phone``; the step it was taken after, or None
    when there is none this phone can take (then every step is replayed)."""
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.state import restore

    path = run_dir / SIMPHONE_SNAPSHOT
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        step, state = int(saved["step"]), saved["state"]
        if state["device"] != phone.state()["device"]:
            return None  # another phone (seed, size): its state is not this one's
        SimPhone.from_state(state)  # rebuilds, or raises, before this phone is touched
    except (OSError, ValueError, KeyError, TypeError, AgentRuntimeError):
        return None
    restore(phone, state)
    return step


def executed_actions(record: StepRecord) -> list[Action]:
    """The screen actions a committed step ran on the device, in order (none when it ran nothing:
    a format failure, an answer, a stalemate)."""
    from agent_runtime.actions import parse_action

    if record.action_result is None or record.action_screen is None:
        return []
    listed = (record.model_extra or {}).get("screen_actions") or [record.action_screen]
    try:
        return [parse_action(a) for a in listed]
    except AgentRuntimeError as exc:
        raise TraceError(
            f"step {record.step} of steps.jsonl holds an action this version cannot replay: {exc.message}",
            hint="start the task again as a new run",
        ) from None


def same_screen(a: bytes, b: bytes) -> bool:
    """Two screenshots show the same pixels (equal PNG bytes, or equal once decoded)."""
    if a == b:
        return True
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(a)) as x, Image.open(io.BytesIO(b)) as y:
            return x.size == y.size and x.convert("RGB").tobytes() == y.convert("RGB").tobytes()
    except OSError:
        return False


def check_checkpoint(run_dir: Path, run_id: str) -> dict[str, Any]:
    """Refuse, with a hint, a checkpoint.sqlite that is not this run's: not SQLite, another
    program's database, another run's checkpoints, or unreadable. Also refuse a checkpoint whose
    step in progress is an untyped dict: an agent-runtime from before
    :class:`~agent_runtime.graphs.state.Step` wrote it, and the graph cannot continue from it.
    Returns the state the run resumes from (empty when killed before its first checkpoint)."""
    from agent_runtime.graphs.build import sqlite_checkpointer

    path = run_dir / "checkpoint.sqlite"
    hint = (
        f"this run cannot be resumed; its trace stays readable (agent-runtime traces show {run_id}); "
        "start the task again as a new run"
    )
    conn = sqlite3.connect(path)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "checkpoints" not in tables:
            raise TraceError(
                f"{path} is not an agent-runtime checkpoint (another program's database)", hint=hint
            )
        if "checkpoints" in tables:
            own = conn.execute("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (run_id,)).fetchone()
            other = conn.execute("SELECT thread_id FROM checkpoints WHERE thread_id != ? LIMIT 1", (run_id,))
            foreign = other.fetchone()
            if own is None and foreign is not None:
                raise TraceError(f"{path} holds the checkpoints of another run ({foreign[0]})", hint=hint)
        saved = sqlite_checkpointer(conn).get_tuple({"configurable": {"thread_id": run_id}})
    except sqlite3.Error as exc:
        raise TraceError(f"{path} is not a readable checkpoint: {exc}", hint=hint) from None
    except (ValueError, TypeError, KeyError) as exc:  # a damaged checkpoint blob
        raise TraceError(f"{path} holds a damaged checkpoint: {exc}", hint=hint) from None
    finally:
        conn.close()
    if saved is not None and isinstance(saved.checkpoint["channel_values"].get("pending"), dict):
        raise TraceError(
            f"run {run_id} was checkpointed by an older agent-runtime, whose step in progress this "
            "version cannot continue",
            hint="start the task again as a new run; its traces so far stay readable",
            run_dir=run_dir,
        )
    return dict(saved.checkpoint["channel_values"]) if saved is not None else {}
