"""``agent-runtime traces view``: a run (or a runs directory) as self-contained HTML pages.

A run page holds, per step, the screenshot before and after (embedded as ``data:`` URIs, so the
file works offline and can be mailed around) with the executed action drawn over the *before*
screen (a circle for a tap, an arrow for a swipe or drag, the text for typing), the subgoal,
every role call of the step (prompt and reply collapsible, re-asks and parse errors shown), the
verdict, notes, timings and tokens, and a timeline of the per-step critical path. What a person
was asked and decided (interventions.jsonl) shows at its step: a question with its answer, a
confirmation with its decision and reasons, a takeover with the screens it began and ended on —
and the step's own ``confirmation`` as a badge. Three filters (failed steps only; steps a person
was in; one role's calls) are plain inline JavaScript — the page loads nothing.

Everything in a trace is untrusted text (model replies, on-screen text), so the templates render
with Jinja autoescaping on; a screenshot ref is read only from inside its run directory, and
only when it is a regular file under a size cap (viewer/files.py: a FIFO never hangs the
command); the index links only folder names that are plain run ids. Times read as a person
says them ("4 min 55 s") and no absolute path of the machine that ran the run is shown
(viewer/display.py); where the run was stopped and resumed shows on the timeline
(viewer/sessions.py). Roles are whatever the trace's calls name — any graph kind renders.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import struct
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from agent_runtime.checks import Tone, recorded_outcome, recorded_summary, tone
from agent_runtime.costs import format_money, run_costs
from agent_runtime.errors import AgentRuntimeError, TraceError
from agent_runtime.specs import DEFAULT_GRAPH
from agent_runtime.traces import (
    CallRecord,
    InterventionRecord,
    LoadedRun,
    RunRecord,
    StepRecord,
    iter_runs,
    load_run,
    read_run_record,
)
from agent_runtime.viewer.display import duration, without_paths
from agent_runtime.viewer.files import MAX_SCREEN_BYTES, read_regular, require_regular, write_regular
from agent_runtime.viewer.sessions import Mark, run_marks

__all__ = ["PAGE_NAME", "Overlay", "action_overlay", "write_index", "write_run_page"]

#: A run page's file name inside its run directory (the default ``--out``).
PAGE_NAME = "view.html"

_MIME = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))
#: The files a run page is read from (each must be a regular file: see viewer/files.py).
_TRACE_FILES = ("run.json", "steps.jsonl", "calls.jsonl", "interventions.jsonl")
#: Timings that are not a part of the step (totals, counts): left out of the parts table.
_DERIVED = ("critical_path", "model_critical", "overhead", "critical_calls")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agent_runtime.viewer", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # every trace string is untrusted model or screen text
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["duration"] = duration  # milliseconds as "4 min 55 s"
    return env


@dataclass(frozen=True)
class Overlay:
    """What to draw over a screenshot, in the image's own pixels: circles at taps, arrows
    (shaft + head polygon) for swipes and drags, and a ``banner`` line (typed text, a button)."""

    circles: list[tuple[float, float]] = field(default_factory=list)
    arrows: list[tuple[float, float, float, float, str]] = field(default_factory=list)
    banner: str = ""
    radius: float = 0.0


def _point(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        try:
            x, y = float(value[0]), float(value[1])
        except (TypeError, ValueError):
            return None
        if math.isfinite(x) and math.isfinite(y):
            return x, y
    return None


def action_overlay(action: dict[str, Any] | None, image: tuple[int, int], screen: tuple[int, int]) -> Overlay:
    """The drawing for ``action`` (screen pixels) over an image of size ``image`` taken of a
    screen of size ``screen`` (they differ when a device scales its screenshots).

    >>> o = action_overlay({"action": "swipe", "coordinate": [100, 800], "coordinate2": [100, 200]},
    ...                    (1000, 2000), (500, 1000))
    >>> o.arrows[0][:4], o.circles
    ((200.0, 1600.0, 200.0, 400.0), [])
    >>> action_overlay({"action": "type", "text": "hi"}, (10, 10), (10, 10)).banner
    'type: hi'
    """
    if not action:
        return Overlay()
    sx = image[0] / screen[0] if screen[0] > 0 else 1.0
    sy = image[1] / screen[1] if screen[1] > 0 else 1.0
    start, end = _point(action.get("coordinate")), _point(action.get("coordinate2"))
    radius = max(image) * 0.025
    name = str(action.get("action", "?"))
    detail = next(
        (
            str(action[k])
            for k in ("text", "button", "direction", "status", "pixels")
            if action.get(k) is not None
        ),
        "",
    )
    banner = f"{name}: {detail}" if detail else ("" if start else name)
    if start and end:
        x1, y1, x2, y2 = start[0] * sx, start[1] * sy, end[0] * sx, end[1] * sy
        return Overlay(
            arrows=[(x1, y1, x2, y2, _arrow_head(x1, y1, x2, y2, radius))], banner=banner, radius=radius
        )
    if start:
        return Overlay(circles=[(start[0] * sx, start[1] * sy)], banner=banner, radius=radius)
    return Overlay(banner=banner, radius=radius)


def _arrow_head(x1: float, y1: float, x2: float, y2: float, size: float) -> str:
    """SVG polygon points of an arrow head at (x2, y2) pointing away from (x1, y1)."""
    angle = math.atan2(y2 - y1, x2 - x1)
    points = [(x2, y2)]
    for turn in (2.6, -2.6):
        points.append((x2 + 1.6 * size * math.cos(angle + turn), y2 + 1.6 * size * math.sin(angle + turn)))
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


@dataclass(frozen=True)
class Shot:
    """One embedded screenshot, or why it could not be."""

    ref: str | None
    uri: str = ""
    width: int = 0
    height: int = 0
    problem: str = ""


def _screen_bytes(run: LoadedRun, ref: str) -> bytes:
    """A screenshot's bytes: only from inside the run directory, only a regular file (a FIFO
    there would block the read for ever), only up to :data:`MAX_SCREEN_BYTES`."""
    root = run.dir.resolve()
    path = (root / ref).resolve()
    if root not in path.parents:
        raise TraceError(f"screen ref {ref!r} points outside the run directory")
    return read_regular(path, MAX_SCREEN_BYTES, name=ref)


def _shot(run: LoadedRun, ref: str | None, screen: tuple[int, int]) -> Shot:
    if not ref:
        return Shot(ref=None, problem="none recorded (the run ended here)")
    try:
        data = _screen_bytes(run, ref)
    except TraceError as exc:
        return Shot(ref=ref, problem=exc.message)
    mime = next((m for magic, m in _MIME if data.startswith(magic)), None)
    if mime is None:
        return Shot(ref=ref, problem=f"{ref} is not a PNG or JPEG image")
    width, height = screen
    if mime == "image/png" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
    uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return Shot(ref=ref, uri=uri, width=width, height=height)


def _json(value: Any, indent: int | None = 1) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent) if value is not None else ""


@dataclass(frozen=True)
class Part:
    """One piece of a recorded message: text, an image reference, or anything else as JSON."""

    kind: str
    text: str


def _parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Part("text", content)]
    parts = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(Part("text", str(part.get("text", ""))))
        elif isinstance(part, dict) and part.get("type") == "image_ref":
            size = part.get("size")
            seen = (
                f" (the model saw {size[0]}×{size[1]})" if isinstance(size, list) and len(size) == 2 else ""
            )
            parts.append(Part("image", f"{part.get('ref')}{seen}"))
        else:
            parts.append(Part("json", _json(part)))
    return parts


@dataclass(frozen=True)
class CallView:
    call: CallRecord
    messages: list[tuple[str, list[Part]]]
    parsed: str


def _call_view(call: CallRecord) -> CallView:
    messages = [(str(m.get("role", "?")), _parts(m.get("content", ""))) for m in call.messages]
    return CallView(call=call, messages=messages, parsed=_json(call.parsed))


#: A decision's css class: what went ahead, what was stopped, what a person did instead.
_DECISION_CLASS = {"approve": "ok", "answer": "ok", "resume": "ok", "reject": "bad", "takeover": "warn"}
#: A decision as the page says it (an unknown one as it was recorded).
_DECIDED = {
    "approve": "approved",
    "reject": "rejected",
    "takeover": "taken over",
    "answer": "answered",
    "resume": "handed back",
}


def _decided(decision: Any) -> str:
    return _DECIDED.get(str(decision), str(decision))


@dataclass(frozen=True)
class InterventionView:
    """One settled request of a person. ``before``/``after`` are set for a takeover segment (the
    record has an ``after_screen``): the screens the person was handed and left."""

    record: InterventionRecord
    anchor: str
    css: str
    action: str
    waited_s: float
    before: Shot | None = None
    after: Shot | None = None


@dataclass(frozen=True)
class StepView:
    step: StepRecord
    before: Shot
    after: Shot
    overlay: Overlay
    calls: list[CallView]
    failed: bool
    action: str
    action_screen: str
    parts: list[tuple[str, float]]
    interventions: list[InterventionView] = field(default_factory=list)

    @property
    def confirmation_css(self) -> str:
        decision = (self.step.confirmation or {}).get("decision")
        return _DECISION_CLASS.get(str(decision), "")


def _failed(step: StepRecord) -> bool:
    result_ok = (step.action_result or {}).get("ok", True)
    return step.format_failure or not result_ok or (step.verdict is not None and not step.verdict.success)


def _screen_size(run: RunRecord) -> tuple[int, int]:
    size = run.device.get("screen")
    if isinstance(size, list | tuple) and len(size) == 2 and all(isinstance(v, int) for v in size):
        return int(size[0]), int(size[1])
    return 0, 0


class _Shots:
    """The screenshots embedded so far, by ref: a step's after-screen is the next step's
    before-screen (and a takeover's screens are its step's), each read and encoded once."""

    def __init__(self, run: LoadedRun, screen: tuple[int, int]) -> None:
        self.run, self.screen = run, screen
        self._by_ref: dict[str | None, Shot] = {}

    def __call__(self, ref: str | None) -> Shot:
        if ref not in self._by_ref:
            self._by_ref[ref] = _shot(self.run, ref, self.screen)
        return self._by_ref[ref]


def _intervention_view(record: InterventionRecord, index: int, shot: _Shots) -> InterventionView:
    segment = record.after_screen is not None
    return InterventionView(
        record=record,
        anchor=f"intervention-{index}",
        css=_DECISION_CLASS.get(record.decision, ""),
        action=_json(record.action, indent=None),
        waited_s=max(0.0, record.answered_at - record.asked_at),
        before=shot(record.before_screen) if segment else None,
        after=shot(record.after_screen) if segment else None,
    )


def _step_view(
    step: StepRecord,
    calls: list[CallRecord],
    interventions: list[InterventionView],
    shot: _Shots,
) -> StepView:
    screen = shot.screen
    before = shot(step.before_screen)
    image = (before.width, before.height) if before.width else screen
    overlay = action_overlay(step.action_screen, image, screen if screen[0] else image)
    return StepView(
        step=step,
        before=before,
        after=shot(step.after_screen),
        overlay=overlay,
        calls=[_call_view(c) for c in calls],
        failed=_failed(step),
        action=_json(step.action, indent=None),
        action_screen=_json(step.action_screen, indent=None) if step.action_screen != step.action else "",
        parts=[(k, v) for k, v in step.timings_ms.items() if k not in _DERIVED],
        interventions=interventions,
    )


#: The css class of each outcome's tone (:func:`~agent_runtime.checks.tone`).
_TONE_CSS: dict[Tone, str] = {"ok": "ok", "warn": "warn", "open": "warn", "bad": "bad"}


def _outcome(run: RunRecord) -> tuple[str, str]:
    """The run's outcome as (the word ``run`` gave it, css class)."""
    kind = recorded_outcome(run)
    return kind, _TONE_CSS[tone(kind)]


def render_run(run: LoadedRun) -> str:
    """The run page's HTML."""
    screen = _screen_size(run.run)
    by_step: dict[int, list[CallRecord]] = {}
    for call in run.calls:
        by_step.setdefault(call.step, []).append(call)
    shot = _Shots(run, screen)
    asked: dict[int, list[InterventionView]] = {}
    for i, record in enumerate(run.interventions, start=1):
        asked.setdefault(record.step, []).append(_intervention_view(record, i, shot))
    steps = [_step_view(s, by_step.pop(s.step, []), asked.pop(s.step, []), shot) for s in run.steps]
    # A request settled at a step that was never committed (the run ended or waits there).
    uncommitted = [view for step in sorted(asked) for view in asked[step]]
    before_first = [_call_view(c) for c in by_step.pop(-1, [])]
    stray = [_call_view(c) for step in sorted(by_step) for c in by_step[step]]
    longest = max((s.step.timings_ms.get("critical_path", 0.0) for s in steps), default=0.0)
    roles = list(dict.fromkeys(c.role for c in run.calls))
    costs = run_costs(run)
    run_dir = str(run.dir.resolve())
    marks: dict[int | None, list[Mark]] = {}
    for mark in run_marks(run):
        marks.setdefault(mark.step, []).append(mark)
    return (
        _environment()
        .get_template("run.html.j2")
        .render(
            run=run.run,
            problems=run.problems,
            steps=steps,
            before_first=before_first,
            stray=stray,
            uncommitted=uncommitted,
            n_interventions=len(run.interventions),
            intervention_kinds=run.intervention_kinds(),
            roles=roles,
            longest=longest or 1.0,
            outcome=(recorded_summary(run.run), _outcome(run.run)[1]),  # run's last line
            decided=_decided,
            graph=(run.run.config.get("graph") or {}).get("kind", DEFAULT_GRAPH),
            created=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.run.created_at)),
            n_calls=len(run.calls),
            n_parse_errors=sum(1 for c in run.calls if c.parse_error),
            costs=costs,
            cost_rows=[*costs.roles.items(), ("total", costs.total)],
            money=lambda amount: "" if amount is None else format_money(amount, costs.currency),
            plain=lambda text: without_paths(str(text), run_dir),  # no absolute paths on the page
            marks=marks,
        )
    )


def write_run_page(run_dir: Path, out: Path | None = None) -> Path:
    """Render the run in ``run_dir`` to ``out`` (default ``RUN_DIR/view.html``); returns the path."""
    folder = Path(run_dir)
    folder = folder.parent if folder.name == "run.json" else folder
    require_regular(folder / name for name in _TRACE_FILES)
    run = load_run(folder)
    target = out if out is not None else run.dir / PAGE_NAME
    write_regular(target, render_run(run))
    return target


#: A run folder name the index links to: what :func:`~agent_runtime.traces.new_run_id` makes and
#: people type — no ``:`` (a URL scheme), ``/``, ``%``, ``#``, ``?``, space or leading dot.
SAFE_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_UNSAFE_NAME = (
    "not linked: the folder name is not a plain run id (letters, digits, '.', '_', '-'); "
    "rename the folder to view it here"
)


@dataclass(frozen=True)
class IndexRow:
    run_id: str
    link: str = ""
    run: RunRecord | None = None
    outcome: tuple[str, str] = ("", "")
    problem: str = ""


def write_index(runs_dir: Path, out: Path | None = None) -> tuple[Path, list[Path]]:
    """Write every run's page and an index over them (default ``RUNS_DIR/index.html``).

    A run that cannot be read is listed with its problem instead of a link, so one damaged run
    does not hide the others. A link is built only from a folder name that is a plain run id
    (:data:`SAFE_RUN_ID`): any other name (``javascript:alert(1)``) is listed as text, its page
    not written, since a browser would read it as a URL of its own. Returns the index and the
    run pages written (the ones it links).
    """
    if not runs_dir.is_dir():
        raise TraceError(f"{runs_dir} is not a directory", hint="pass --runs-dir DIR (a directory of runs)")
    target = out if out is not None else runs_dir / "index.html"
    rows: list[IndexRow] = []
    pages: list[Path] = []
    for run_dir in iter_runs(runs_dir):
        if not SAFE_RUN_ID.fullmatch(run_dir.name):
            rows.append(IndexRow(run_id=run_dir.name, problem=_UNSAFE_NAME))
            continue
        try:
            record = read_run_record(run_dir / "run.json")
            page = write_run_page(run_dir)
        except AgentRuntimeError as exc:
            rows.append(IndexRow(run_id=run_dir.name, problem=f"unreadable: {exc.message}"))
            continue
        pages.append(page)
        link = quote(Path(os.path.relpath(page, target.parent)).as_posix())
        rows.append(IndexRow(run_id=record.run_id, link=link, run=record, outcome=_outcome(record)))
    rows.sort(key=lambda r: (r.run.created_at if r.run else 0.0, r.run_id))
    html = _environment().get_template("index.html.j2").render(root=runs_dir.resolve().name, rows=rows)
    write_regular(target, html)
    return target, pages
