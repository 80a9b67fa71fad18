"""Experience memory: guidance distilled from finished runs, recalled for similar new tasks.

Mobile-Agent-v3 (§6.4) turns a successful trajectory into *query-specific guidance*: describe
what each step achieved, drop the steps that did not do what was expected, and summarise "the
essential steps required to complete the query". :func:`record_run` does that for every finished
run: the Reflector's verdicts decide which steps worked, the Worker's descriptions say what they
did, and the configured text model (``ask``) writes the summary — or, without a model, the kept
steps are listed as they are. A failed run is stored as a *caution* (what went wrong, what had
worked up to then), so the next attempt does not repeat it.

Records are embedded by their task text, so :func:`recall` finds guidance for tasks phrased
alike — e.g. the same SimPhone template with other parameters.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.errors import AgentRuntimeError
from agent_runtime.traces import LoadedRun, StepRecord
from agent_runtime.tracing import Redactor

if TYPE_CHECKING:
    from agent_runtime.config import MemoryConfig
    from agent_runtime.memory.store import Hit, MemoryStore

log = logging.getLogger("agent_runtime.memory.experience")

Ask = Callable[[str], str]

#: Statuses worth learning from; "error" (infrastructure) and "running" say nothing about the task.
RECORDED_STATUSES = frozenset({"completed", "failed", "gave_up", "max_steps"})
GUIDANCE_CHARS = 1500
NOTES_CHARS = 400
MAX_LISTED_STEPS = 15
REDACTED = Redactor.MASK

DISTIL_PROMPT = """\
You turn a GUI agent's finished run into short guidance for future runs of similar tasks.

Task: {task}
Apps: {apps}
Outcome: {outcome}
Steps, in order (ok = the step did what was intended):
{steps}
{notes}
{request}
Reply with the guidance only: a numbered list of at most 8 short lines, naming apps, screens and
buttons rather than coordinates."""

REQUEST_SUCCESS = "Summarise the essential steps required to complete the task; leave out steps that failed."
REQUEST_FAILURE = (
    "The run did not succeed. Write what to avoid and what to try instead, then the steps that did work."
)


class Guidance(BaseModel):
    """One experience record: what a finished run teaches about its task."""

    run_id: str
    task: str
    apps: list[str] = Field(default_factory=list)
    outcome: Literal["success", "failure"]
    status: str
    steps: list[str] = Field(default_factory=list, description="what worked, in order")
    failures: list[str] = Field(default_factory=list, description="what went wrong (cautions)")
    notes: str = ""
    text: str = Field(description="the guidance handed to the Manager")
    distilled_by: Literal["model", "trace"] = "trace"
    created_at: float = Field(default_factory=time.time)


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _truncate(text: str, limit: int) -> str:
    """Like :func:`_clip` but keeps line breaks (guidance is a list)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _action_summary(action: dict[str, Any] | None) -> str:
    if not action:
        return ""
    name = str(action.get("action", "?"))
    for key in ("text", "button", "direction", "status"):
        if action.get(key):
            return f'{name} "{_clip(str(action[key]), 60)}"'
    return name


def _step_worked(step: StepRecord) -> bool:
    if step.format_failure:
        return False
    if step.verdict is not None:
        return step.verdict.success
    return bool((step.action_result or {}).get("ok", step.action is not None))


def _describe(step: StepRecord) -> str:
    """The step's own description, plus the action when it carries a reusable argument.

    ``open_app "Clock"`` or ``type "07:30"`` transfer to the next run; coordinates do not.
    """
    what = _clip(step.description or step.subgoal or step.thought, 160)
    action = _action_summary(step.action)
    if what and '"' in action:
        return f"{what} ({action})"
    return what or action or f"step {step.step + 1}"


def run_apps(run: LoadedRun) -> list[str]:
    """Apps a run touched: opened by name, reported as foreground, or named by the device."""
    apps: list[str] = []
    for step in run.steps:
        if step.action and step.action.get("action") == "open_app" and step.action.get("text"):
            apps.append(str(step.action["text"]))
        extra = step.model_extra or {}
        for key in ("app", "foreground_app", "package"):
            if isinstance(extra.get(key), str) and extra[key]:
                apps.append(extra[key])
    raw = run.run.device.get("details")
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for source in (run.run.device, details):
        for key in ("app", "foreground_app"):
            if isinstance(source.get(key), str) and source[key]:
                apps.append(source[key])
    launcher = {"com.android.launcher3", "launcher"}
    return [a for a in dict.fromkeys(apps) if a.lower() not in launcher]


def run_succeeded(run: LoadedRun) -> bool:
    """Ground truth from an evaluation when there is one, else the run's own verdict."""
    ev = run.run.eval or {}
    if "task_success" in ev and ev["task_success"] is not None:
        return float(ev["task_success"]) >= 1.0
    if run.run.success is not None:
        return bool(run.run.success)
    return run.run.status == "completed"


def _redact(text: str, sensitive: Sequence[str]) -> str:
    """The one redaction every sink uses (:class:`agent_runtime.tracing.Redactor`)."""
    return Redactor(sensitive).text(text)


def _final_notes(run: LoadedRun) -> str:
    for step in reversed(run.steps):
        if step.notes.strip():
            return _clip(step.notes, NOTES_CHARS)
    return ""


def _header(g: Guidance) -> str:
    apps = f"\nApps: {', '.join(g.apps)}" if g.apps else ""
    if g.outcome == "success":
        return f"Task: {g.task}{apps}\nOutcome: succeeded ({len(g.steps)} effective steps)"
    caution = f"Caution: an earlier attempt at this task did not succeed ({g.status})."
    return f"{caution}\nTask: {g.task}{apps}"


def _trace_text(g: Guidance) -> str:
    lines = [_header(g)]
    if g.failures:
        lines.append("What went wrong:")
        lines += [f"- {f}" for f in g.failures[:5]]
    if g.steps:
        lines.append("Steps that worked:" if g.outcome == "success" else "Steps that did work:")
        lines += [f"{n}. {s}" for n, s in enumerate(g.steps[:MAX_LISTED_STEPS], 1)]
    if g.notes:
        lines.append(f"Notes: {g.notes}")
    return "\n".join(lines)


def _model_text(g: Guidance, run: LoadedRun, ask: Ask, sensitive: Sequence[str]) -> str | None:
    listed = []
    for step in run.steps[: MAX_LISTED_STEPS * 2]:
        mark = (
            "ok"
            if _step_worked(step)
            else "failed"
            + (f": {_clip(step.verdict.feedback, 120)}" if step.verdict and step.verdict.feedback else "")
        )
        listed.append(f"{step.step + 1}. [{mark}] {_describe(step)}")
    prompt = DISTIL_PROMPT.format(
        task=g.task,
        apps=", ".join(g.apps) or "not recorded",
        outcome="success" if g.outcome == "success" else f"failure ({g.status})",
        steps=_redact("\n".join(listed) or "(no steps)", sensitive),
        notes=f"Notes: {g.notes}\n" if g.notes else "",
        request=REQUEST_SUCCESS if g.outcome == "success" else REQUEST_FAILURE,
    )
    try:
        reply = ask(prompt)
    except (AgentRuntimeError, OSError) as exc:
        log.warning(
            "experience: the model could not distil run %s (%s); using the trace summary", g.run_id, exc
        )
        return None
    body = _redact((reply or "").strip(), sensitive)
    if not body:
        return None
    return _truncate(f"{_header(g)}\n{body}", GUIDANCE_CHARS)


def distil_run(run: LoadedRun, *, ask: Ask | None = None, sensitive: Sequence[str] = ()) -> Guidance:
    """The guidance a finished run teaches (model-written when ``ask`` works, else from the trace)."""
    success = run_succeeded(run)
    worked = [
        _describe(s) for s in run.steps if _step_worked(s) and (s.action or {}).get("action") != "terminate"
    ]
    failures = []
    for s in run.steps:
        if not _step_worked(s):
            why = "no parseable action" if s.format_failure else (s.verdict.feedback if s.verdict else "")
            failures.append(f"step {s.step + 1}: {_describe(s)}" + (f" — {_clip(why, 160)}" if why else ""))
    if not success and not failures:
        failures.append(f"the run ended with status {run.run.status} after {len(run.steps)} steps")
    g = Guidance(
        run_id=run.run.run_id,
        task=_redact(run.run.task, sensitive),
        apps=run_apps(run),
        outcome="success" if success else "failure",
        status=run.run.status,
        steps=[_redact(w, sensitive) for w in worked],
        failures=[_redact(f, sensitive) for f in failures] if not success else [],
        notes=_redact(_final_notes(run), sensitive),
        text="",
    )
    text = _model_text(g, run, ask, sensitive) if ask is not None else None
    if text is not None:
        return g.model_copy(update={"text": text, "distilled_by": "model"})
    return g.model_copy(update={"text": _truncate(_trace_text(g), GUIDANCE_CHARS)})


def store_guidance(store: MemoryStore, g: Guidance) -> None:
    """Write (or replace, by run id) one experience record."""
    store.upsert(
        "experience",
        ids=[g.run_id],
        texts=[g.task],
        metadatas=[
            {
                "run_id": g.run_id,
                "outcome": g.outcome,
                "status": g.status,
                "apps": ", ".join(g.apps),
                "guidance": g.text,
                "distilled_by": g.distilled_by,
                "created_at": g.created_at,
            }
        ],
    )


def record_run(run: LoadedRun, config: MemoryConfig, ask: Ask | None = None) -> Guidance | None:
    """Distil a finished run into the experience store. Never raises for store or model failures.

    Returns the stored guidance, or None when experience is off, the run did not finish on its
    own (status ``running``/``error``), or the store failed (logged as a warning).
    """
    if not config.experience:
        return None
    if run.run.status not in RECORDED_STATUSES:
        log.info("experience: run %s not recorded (status %s)", run.run.run_id, run.run.status)
        return None
    from agent_runtime.memory.store import MemoryStore

    g = distil_run(run, ask=ask, sensitive=config.sensitive)
    try:
        store_guidance(MemoryStore.from_config(config), g)
    except AgentRuntimeError as exc:
        log.warning("experience: could not store run %s: %s", run.run.run_id, exc)
        return None
    return g


def recall(
    task: str, config: MemoryConfig, k: int | None = None, *, store: MemoryStore | None = None
) -> list[Hit]:
    """Guidance records of the ``k`` most similar past tasks at or above ``config.threshold``.

    The threshold is on cosine similarity (``Hit.score``); among the records above it, the
    order is the store's hybrid ranking (dense + BM25 over the task texts).

    Raises :class:`~agent_runtime.errors.MemoryStoreError` if the store fails (the RAG pipeline
    turns that into a warning). Each hit's ``metadata["guidance"]`` is the text for the Manager.
    """
    from agent_runtime.memory.store import MemoryStore

    k = k or config.k
    store = store or MemoryStore.from_config(config)
    return store.search(task, k, name="experience", min_score=config.threshold)
