"""Per-run traces: the records every role call and step leave behind, and the reader trainers use.

A run directory looks like::

    RUNS_DIR/<run_id>/
        run.json        RunRecord — task, config snapshot (no secrets), device, models, status, totals
        steps.jsonl     one StepRecord per executed step
        calls.jsonl     one CallRecord per role call (including re-asks)
        screens/NNNN.png  observation N (0 = before step 0; N+1 = after step N)
        checkpoint.sqlite LangGraph checkpoints (resume)
        run.lock        held by the one process playing the run (:mod:`agent_runtime.runlock`)

JSONL files are append-only and flushed after every record, so a killed process leaves every
finished line readable; when a step commits, both files are also fsynced (:meth:`TraceWriter.sync`),
so a power cut loses at most the step in flight. One record is exactly one line: the writer
escapes every character a line splitter could break on (U+2028, U+2029, U+0085) and lone
surrogates (a model may reply ``"\\ud83d"``), and readers split on ``"\\n"`` only.
:func:`load_run` skips a torn last line with a warning (:attr:`LoadedRun.problems`); a writer
opened on a file that ends in a torn line (a killed run being resumed) cuts the fragment off
first — into ``<file>.torn`` — so the next record is never glued onto it.

Every record carries ``schema_version``. Readers accept older and equal versions and refuse a
newer one with a :class:`~agent_runtime.errors.TraceError` that says to upgrade. Fields added
within a version are optional (run.json's ``verification``, ``sessions``): records without them
still load.
Images inside recorded messages are stored as references (``{"type": "image_ref", "ref":
"screens/0003.png", "size": [w, h]}``, ``size`` being what the model saw after smart_resize).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.errors import TraceError, TraceWriteError
from agent_runtime.tracing import Redactor

SCHEMA_VERSION = 1

log = logging.getLogger(__name__)

#: What a line splitter could break a record on, or UTF-8 cannot encode: escaped as ``\\uXXXX``.
#: (Below U+0020, JSON itself escapes every control character.)
_UNSAFE = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")
_UPGRADE_HINT = "upgrade agent-runtime (pip install -U agent-runtime) to read it"

RunStatus = Literal[
    "running",  # in progress (or killed: check for a checkpoint and resume)
    "completed",  # the plan finished or the agent answered/terminated with success
    "failed",  # the agent terminated with failure
    "gave_up",  # stalemate: too many consecutive failures or repeated actions
    "max_steps",  # step budget exhausted
    "error",  # an infrastructure error stopped the run (dead model server, lost device)
    "interrupted",  # stopped by Ctrl-C or Runtime.cancel(); totals final, resumable from its checkpoint
    "waiting",  # waits for a person's reply (a confirmation, an answer); resume it with the reply
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class CallRecord(_Record):
    """One model call by one role. Re-asks after a parse error are separate records (``attempt``)."""

    run_id: str
    step: int = Field(description="step index; -1 for calls before the first step (RAG, Manager init)")
    role: str
    model: str = ""
    attempt: int = 0
    messages: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI-style, images as refs")
    completion: str = ""
    parsed: dict[str, Any] | None = None
    parse_error: str | None = None
    latency_ms: float = 0.0
    usage: Usage = Usage()
    started_at: float = Field(default_factory=time.time)
    extra: dict[str, Any] = Field(default_factory=dict, description="token ids, logprobs, … when recorded")

    @property
    def valid(self) -> bool:
        return self.parse_error is None and self.parsed is not None


#: What reached a step's verdict (see :class:`Verdict`).
VerdictSource = Literal["reflector", "screen_diff", "device", "format", "person", "guard"]


class Verdict(BaseModel):
    """The Reflector's judgement of one step, in the one shape the step in progress, its
    :class:`StepRecord` and the run's verdict event all share.

    ``outcome`` is the Mobile-Agent-v3 letter: A success (or partial), B wrong page, C no change.
    ``source`` says who or what reached it, so a reader knows how much it says: ``reflector``
    (a model judged the step), ``screen_diff`` (no Reflector: only whether the screen changed —
    no judgement of the action), ``device`` (the device reported a failure), ``format`` (no
    parseable reply), ``person`` / ``guard`` (a request settled it); None in traces written
    before it was recorded.
    """

    model_config = ConfigDict(frozen=True)

    outcome: Literal["A", "B", "C"]
    success: bool
    feedback: str = ""
    source: VerdictSource | None = None

    @classmethod
    def of(cls, outcome: str, feedback: str = "", *, source: VerdictSource | None = None) -> Verdict:
        """A verdict whose ``success`` follows from its letter (only A succeeds; a letter other
        than A, B or C is a validation error).

        >>> Verdict.of("B", "opened Clock", source="reflector")
        Verdict(outcome='B', success=False, feedback='opened Clock', source='reflector')
        """
        return cls(outcome=outcome, success=outcome == "A", feedback=feedback, source=source)


class StepTimings(BaseModel):
    """A step's timing parts in milliseconds, as ``steps.jsonl`` records them (``timings_ms``).

    A part is None until measured, and an unmeasured part is absent from the record
    (:meth:`as_ms`). The parts are declared in the order a step measures them — the acting
    role's call, the device, the Reflector and the Notetaker, then what :func:`commit
    <agent_runtime.graphs.steps.commit>` adds — so a record's keys keep the order they always
    had. The step in progress carries one (:class:`~agent_runtime.graphs.state.Step`); a node
    hands on a copy with its parts set, never changes the checkpointed one.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    worker: float | None = None
    single: float | None = None
    high: float | None = None
    low: float | None = None
    execute: float | None = None
    observe: float | None = None
    reflector: float | None = None
    reflect_model: float | None = Field(
        None, description="the Reflector plus the part of the Notetaker that outlasted it"
    )
    notetaker: float | None = None
    notetaker_wait: float | None = Field(None, description="the part of the Notetaker's call on the path")
    reflect_phase: float | None = None
    manager: float | None = Field(None, description="the Manager's plan that ended the step")
    critical_path: float | None = Field(None, description="the whole step, wall clock")
    model_critical: float | None = Field(None, description="model calls on the critical path")
    overhead: float | None = Field(None, description="critical_path less model calls and the device")
    critical_calls: float | None = Field(None, description="model calls on the path, re-asks too")

    @classmethod
    def from_ms(cls, timings_ms: dict[str, float]) -> StepTimings:
        """A recorded ``timings_ms``; parts this version does not know are left out."""
        return cls.model_validate({k: v for k, v in timings_ms.items() if k in cls.model_fields})

    def ms(self, *parts: str) -> float:
        """The sum of ``parts`` (field names), an unmeasured one counting 0."""
        return sum(getattr(self, part) or 0.0 for part in parts)

    def as_ms(self) -> dict[str, float]:
        """The measured parts to the microsecond: the ``timings_ms`` a step record holds."""
        return {k: round(v, 3) for k, v in self.model_dump(exclude_none=True).items()}


class StepFields(BaseModel):
    """What the step in progress and its committed :class:`StepRecord` both hold, declared once.

    :class:`~agent_runtime.graphs.state.Step` adds what only a step in progress needs (typed
    actions, trees, clocks); the record adds what is known at commit (notes, timings, critic).
    """

    step: int
    subgoal: str = ""
    plan: list[str] = Field(default_factory=list)
    completed: list[str] = Field(default_factory=list)
    thought: str = ""
    description: str = ""
    before_screen: str | None = None
    after_screen: str | None = None
    action: dict[str, Any] | None = Field(
        None,
        description="the action JSON exactly as the model wrote it (model coordinates); None: none valid",
    )
    verdict: Verdict | None = None
    format_failure: bool = Field(False, description="the Worker never produced a parseable action")
    graph: str = Field("mobile_agent_v3", description="the graph kind that played the step (auto: either)")
    actor: str = Field(
        "worker", description="the role whose action it is (its coordinate space): worker, low or single"
    )
    confirmation: dict[str, Any] | None = Field(
        None, description="a sensitive action's decision: decision, by (person|guard|yes|default), reasons"
    )


class StepRecord(StepFields, _Record):
    """One executed step: what the Worker did and what came of it."""

    action_screen: dict[str, Any] | None = Field(None, description="the executed action in screen pixels")
    action_result: dict[str, Any] | None = None
    notes: str = ""
    timings_ms: dict[str, float] = Field(
        default_factory=dict, description="per part, incl. critical_path (StepTimings.as_ms)"
    )
    critic: dict[str, Any] | None = Field(None, description="step-critic label, filled in by `judge`")


class InterventionRecord(_Record):
    """One request a run made of a person and how it was settled (interventions.jsonl): a
    question answered, a sensitive action approved, rejected or taken over, a pause. A takeover's
    ``before_screen``/``after_screen`` bound the segment the person operated the device."""

    step: int
    kind: Literal["confirm", "ask", "takeover"]
    request_id: str
    question: str = ""
    action: dict[str, Any] | None = None
    target: str = ""
    reasons: list[str] = Field(default_factory=list)
    decision: str
    by: str = Field("person", description="person | guard | yes | default")
    text: str = Field("", description="the answer, or why the action was rejected")
    refused: list[str] = Field(
        default_factory=list, description="replies refused before this one (torn or too long), each cut"
    )
    asked_at: float
    answered_at: float
    before_screen: str | None = None
    after_screen: str | None = None


class Verification(BaseModel):
    """Whether a run's outcome was checked, and what the check found (``RunRecord.verification``).

    ``checked`` False (``success`` None) means nothing could check the run — ``detail`` says
    why; the agent's ``success`` is then only its claim. ``by`` names the checker, e.g.
    ``simphone:ClockStartTimer/3`` (SimPhone's ``is_successful`` for that task instance).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    checked: bool = False
    success: bool | None = None
    by: str | None = None
    detail: str = ""
    score: float | None = None

    @property
    def verified(self) -> bool | None:
        """True: the check passed; False: it failed; None: not checked."""
        return self.success if self.checked else None


#: How one session of a run ended (:class:`RunSession`): the run's status when the process
#: stopped playing it (``failed`` also covers ``gave_up`` and ``max_steps``), or ``killed``
#: when the process ended without saying (SIGKILL, a crash, power loss).
SessionEnd = Literal["completed", "failed", "interrupted", "waiting", "error", "killed"]
_SESSION_END: dict[str, SessionEnd] = {
    "completed": "completed",
    "failed": "failed",
    "gave_up": "failed",
    "max_steps": "failed",
    "interrupted": "interrupted",
    "waiting": "waiting",
    "error": "error",
}


class RunSession(BaseModel):
    """One process's play of a run, from its start (or a resume) to where it stopped: what the
    timeline shows as stops and resumes, recorded rather than guessed from the screens.

    ``ended`` is None while the process plays the run; a session still open when the next one
    starts was ``killed`` (its ``ended_at`` stays None: when it died is not known)."""

    started_at: float
    from_step: int = Field(description="the first step this session played (0 for a new run)")
    pid: int
    ended_at: float | None = None
    ended: SessionEnd | None = None


def session_started(sessions: list[RunSession], *, started_at: float, from_step: int) -> list[RunSession]:
    """``sessions`` with a new one for this process; one still open was killed (it never
    recorded an end).

    >>> [s.ended for s in session_started([RunSession(started_at=1, from_step=0, pid=7)],
    ...                                   started_at=2, from_step=3)]
    ['killed', None]
    """
    closed = [s if s.ended else s.model_copy(update={"ended": "killed"}) for s in sessions]
    return [*closed, RunSession(started_at=started_at, from_step=from_step, pid=os.getpid())]


def session_ended(sessions: list[RunSession], status: RunStatus, at: float) -> list[RunSession]:
    """``sessions`` with this process's (the last, open one) ended as ``status`` says."""
    if not sessions or sessions[-1].ended is not None:
        return sessions
    end = _SESSION_END.get(status)
    return [*sessions[:-1], sessions[-1].model_copy(update={"ended_at": at, "ended": end})]


class RunRecord(_Record):
    """run.json — rewritten atomically whenever the run's status changes."""

    run_id: str
    task: str
    status: RunStatus = "running"
    success: bool | None = None
    answer: str | None = None
    steps: int = 0
    created_at: float = Field(default_factory=time.time)
    finished_at: float | None = None
    device: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, dict[str, Any]] = Field(default_factory=dict, description="role -> model id, coords, …")
    config: dict[str, Any] = Field(default_factory=dict, description="public config snapshot, no secrets")
    timings: dict[str, float] = Field(default_factory=dict)
    tokens: Usage = Usage()
    error: dict[str, Any] | None = None
    eval: dict[str, Any] | None = Field(None, description="task name, seed, task_success when run by eval")
    critic: dict[str, Any] | None = Field(None, description="trajectory-critic labels, filled in by `judge`")
    verification: Verification | None = Field(
        None, description="the end-of-run check (absent in records written before checks existed)"
    )
    sessions: list[RunSession] = Field(
        default_factory=list,
        description="each process's play of the run, oldest first (empty in records written before)",
    )


def verification_of(run: RunRecord) -> Verification | None:
    """The run's check: ``verification``, else the eval harness's ``eval.task_success`` (runs
    judged by ``agent-runtime eval`` or recorded as demonstrations before checks were recorded).

    >>> judged = {"task": "X", "seed": 3, "task_success": True}
    >>> v = verification_of(RunRecord(run_id="r", task="t", eval=judged))
    >>> v.verified, v.by
    (True, 'simphone:X/3')
    """
    if run.verification is not None and run.verification.checked:
        return run.verification
    evaluation = run.eval or {}
    if evaluation.get("task_success") is not None:
        name = evaluation.get("task") or evaluation.get("task_name") or "?"
        return Verification(
            checked=True,
            success=bool(evaluation["task_success"]),
            by=f"simphone:{name}/{evaluation.get('seed', '?')}",
            detail="judged by agent-runtime eval",
        )
    return run.verification


def new_run_id() -> str:
    """Sortable, unique: ``20261122-063001-3f2a9c``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


def dumps(data: Any, indent: int | None = None) -> str:
    """JSON text that is one line (without ``indent``) whatever the strings hold, and always
    encodable as UTF-8: line separators and lone surrogates are written as ``\\uXXXX``.

    >>> dumps({"t": "a\\u2028b\\ud83d"})
    '{"t": "a\\\\u2028b\\\\ud83d"}'
    """
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    # Outside strings JSON is ASCII, so every match is inside a string and its escape is valid.
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def storage_error(exc: OSError, path: Path | str, doing: str = "write") -> TraceWriteError:
    """``exc`` (an OSError writing ``path``) as one paragraph: what could not be done and why,
    and what to do about it (no space, a read-only file system, no permission, …)."""
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        why, hint = "the disk is full", "free some space (or pass --runs-dir DIR on another disk)"
    elif code == errno.EROFS:
        why = "the file system is read-only"
        hint = "pass --runs-dir DIR on a writable disk, or set [runs] dir"
    elif code in (errno.EACCES, errno.EPERM):
        why, hint = "permission denied", "pass --runs-dir DIR you can write to, or set [runs] dir"
    else:
        why = exc.strerror or str(exc)
        hint = "check the runs directory (pass --runs-dir DIR to use another one)"
    return TraceWriteError(f"cannot {doing} {path}: {why}", hint=hint)


def replace_file(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file, then ``os.replace``): a reader never
    sees half of it, and a full disk leaves the old version (and no temporary) behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise storage_error(exc, path) from None


def _replace_run_json(run_dir: Path, text: str) -> None:
    """Write run.json atomically: a reader never sees a half-written file."""
    replace_file(run_dir / "run.json", text.encode("utf-8"))


class _Appender:
    """One append-only JSONL file: a record is appended whole or not at all — a write cut short
    (no space left) is cut back off, so the file never holds half a line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def append(self, data: bytes) -> None:
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise storage_error(exc, self.path) from None

    def sync(self) -> None:
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise storage_error(exc, self.path) from None

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


class TraceWriter:
    """Writes one run directory. One writer per run (the run's lock, :mod:`agent_runtime.runlock`,
    sees to that); appends are safe from several threads (the Notetaker's call is recorded from a
    worker thread). ``sensitive`` values are redacted from every record (see :class:`Redactor`).

    Every write is whole or absent: run.json and screens are replaced atomically, a JSONL record
    that could not be written entirely is cut back off. A write the disk refuses (full, read-only,
    no permission) is a :class:`~agent_runtime.errors.TraceWriteError`."""

    def __init__(self, run_dir: Path, *, sensitive: Iterable[str] = ()) -> None:
        self.dir = Path(run_dir)
        self.redactor = Redactor(sensitive)
        self._lock = threading.Lock()
        try:
            (self.dir / "screens").mkdir(parents=True, exist_ok=True)
            for name in ("steps.jsonl", "calls.jsonl", "interventions.jsonl"):
                repair_tail(self.dir / name)
            self._steps = _Appender(self.dir / "steps.jsonl")
            self._calls = _Appender(self.dir / "calls.jsonl")
            self._interventions = _Appender(self.dir / "interventions.jsonl")
        except OSError as exc:
            raise storage_error(exc, exc.filename or self.dir) from None

    def _dump(self, record: BaseModel, indent: int | None = None) -> str:
        data = record.model_dump(mode="json")
        if self.redactor:
            data = self.redactor.apply(data)
        return dumps(data, indent=indent)

    def write_run(self, record: RunRecord) -> None:
        text = self._dump(record, indent=2)
        with self._lock:
            _replace_run_json(self.dir, text)

    def _append(self, out: _Appender, record: BaseModel) -> None:
        line = (self._dump(record) + "\n").encode("utf-8")
        with self._lock:
            out.append(line)

    def append_step(self, record: StepRecord) -> None:
        self._append(self._steps, record)

    def append_call(self, record: CallRecord) -> None:
        self._append(self._calls, record)

    def append_intervention(self, record: InterventionRecord) -> None:
        self._append(self._interventions, record)

    def sync(self) -> None:
        """fsync the JSONL files: called when a step commits, so a power cut loses at most the
        step in flight (every record is already written to the OS when appended)."""
        with self._lock:
            for out in (self._steps, self._calls, self._interventions):
                out.sync()

    def save_screen(self, index: int, png: bytes, *, tag: str = "") -> str:
        """Store observation ``index``; returns its ref (``screens/0003.png``). Idempotent.

        ``tag`` names a second look at the same index (``screens/0003-r1.png``), e.g. the
        re-observation after a resume.
        """
        ref = f"screens/{index:04d}{'-' + tag if tag else ''}.png"
        path = self.dir / ref
        if not path.exists():
            replace_file(path, png)
        return ref

    def close(self) -> None:
        with self._lock:
            self._steps.close()
            self._calls.close()
            self._interventions.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_tail(path: Path) -> str | None:
    """Cut a torn last line (no trailing newline: a process killed mid-write) off ``path``,
    so the next appended record starts on a line of its own. The fragment is kept in
    ``<name>.torn``; returns a description of what was cut, or None when nothing was (a whole
    record that only lacks its newline gets one: readers count it too)."""
    if not path.is_file():
        return None
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        keep, pos = 0, size
        while pos > 0:  # back from the end, a chunk at a time, to the last newline
            start = max(0, pos - (1 << 16))
            fh.seek(start)
            cut = fh.read(pos - start).rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            pos = start
        fh.seek(keep)
        fragment = fh.read()
        try:  # cut right before its newline: the record is whole, end its line
            json.loads(fragment)
        except ValueError:
            pass
        else:
            fh.write(b"\n")
            return None
        with (path.parent / (path.name + ".torn")).open("ab") as torn:
            torn.write(fragment + b"\n")
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    what = f"{path.name}: cut a torn last line of {len(fragment)} bytes (kept in {path.name}.torn)"
    log.warning(what)
    return what


def check_version(data: Any, where: str) -> None:
    """Refuse a record written by a newer agent-runtime (older and equal versions are read)."""
    version = data.get("schema_version", SCHEMA_VERSION) if isinstance(data, dict) else SCHEMA_VERSION
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise TraceError(
            f"{where} was written by a newer agent-runtime (schema_version {version}; "
            f"this version reads up to {SCHEMA_VERSION})",
            hint=_UPGRADE_HINT,
        )


def _read_jsonl(path: Path, model: type[_Record], problems: list[str] | None = None) -> list[Any]:
    """Records of a JSONL trace file. Lines are split on ``\\n`` only (a record may hold any
    other separator, escaped or not); a torn or invalid last line is skipped with a warning."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(
            f"{path} is not a trace file (not UTF-8 text at byte {exc.start})",
            hint="it was overwritten or damaged; restore it from a copy, or move it away to read the rest",
        ) from None
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            check_version(data, f"{path}:{i + 1}")
            out.append(model.model_validate(data))
        except (ValueError, ValidationError) as exc:
            if i == last:  # a torn last line from a killed process
                what = f"{path.name}:{i + 1}: skipped a torn last line ({len(line)} characters)"
                log.warning(what)
                if problems is not None:
                    problems.append(what)
                break
            msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise TraceError(
                f"{path}:{i + 1} is not a valid {model.__name__}: {msg}",
                hint="the file was edited or damaged; move the bad line away to read the rest",
            ) from None
    return out


class LoadedRun(BaseModel):
    """A run read back from disk."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    dir: Path
    run: RunRecord
    steps: list[StepRecord]
    calls: list[CallRecord]
    interventions: list[InterventionRecord] = Field(
        default_factory=list, description="what a person was asked and decided, in order"
    )
    problems: list[str] = Field(default_factory=list, description="what the reader skipped (torn lines)")

    def screen(self, ref: str) -> bytes:
        path = (self.dir / ref).resolve()
        if self.dir.resolve() not in path.parents:
            raise TraceError(f"screen ref {ref!r} points outside the run directory")
        return path.read_bytes()

    def calls_for(self, role: str) -> list[CallRecord]:
        return [c for c in self.calls if c.role == role]

    def intervention_kinds(self) -> str:
        """How many requests of each kind a person got, in the order first made: ``1 ask, 2 confirm``."""
        counts: dict[str, int] = {}
        for record in self.interventions:
            counts[record.kind] = counts.get(record.kind, 0) + 1
        return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def load_run(path: Path | str) -> LoadedRun:
    """Read a run directory (or its run.json). Raises :class:`TraceError` when it is not one."""
    p = Path(path)
    if p.name == "run.json":
        p = p.parent
    run_file = p / "run.json"
    if not run_file.is_file():
        raise TraceError(f"{p} is not a run directory (no run.json)", hint="see 'agent-runtime traces list'")
    run = read_run_record(run_file)
    problems: list[str] = []
    return LoadedRun(
        dir=p,
        run=run,
        steps=_read_jsonl(p / "steps.jsonl", StepRecord, problems),
        calls=_read_jsonl(p / "calls.jsonl", CallRecord, problems),
        interventions=_read_jsonl(p / "interventions.jsonl", InterventionRecord, problems),
        problems=problems,
    )


def read_run_record(run_file: Path) -> RunRecord:
    """run.json, checked: readable, JSON, not from a newer agent-runtime, a valid RunRecord."""
    try:
        data = json.loads(run_file.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise TraceError(f"{run_file} is not readable run JSON: {exc}") from None
    check_version(data, str(run_file))
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        raise TraceError(f"{run_file} is invalid: {exc.errors()[0]['msg']}") from None


def annotate_run(path: Path | str, **fields: Any) -> RunRecord:
    """Set top-level fields of an existing run.json (e.g. ``eval`` after judging) atomically.

    Used by harnesses that learn something about a run after it ended: the eval harness writes
    the task checker's verdict here so trainers and experience memory trust it over the agent's
    own status.
    """
    run = load_run(path)
    record = run.run.model_copy(update=fields)
    _replace_run_json(run.dir, dumps(record.model_dump(mode="json"), indent=2))
    return record


def iter_runs(runs_dir: Path | str) -> Iterator[Path]:
    """Run directories under ``runs_dir``, oldest first."""
    root = Path(runs_dir)
    if not root.is_dir():
        return iter(())
    return iter(sorted(d for d in root.iterdir() if (d / "run.json").is_file()))


def find_run(runs_dir: Path | str, run_id: str) -> Path:
    """A run directory by id or unique id prefix."""
    matches = [d for d in iter_runs(runs_dir) if d.name == run_id or d.name.startswith(run_id)]
    if len(matches) != 1:
        what = "no run" if not matches else f"{len(matches)} runs"
        raise TraceError(f"{what} matching {run_id!r} in {runs_dir}", hint="see 'agent-runtime traces list'")
    return matches[0]
