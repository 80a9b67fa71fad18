"""Role inputs from graph state: the one place a role's prompt variables are assembled.

What each role is shown of the screen is decided here too: a role's model config says
``observation = "screenshot" | "ui_tree" | "both"``. Text-only models get the compressed
uiautomator tree (MobileRL App. D) with ``[i]`` element indices and **no image parts at all**;
VLMs get screenshots; ``both`` gets the two.

The Mobile-Agent-v3 nodes call these builders with the run's
:class:`~agent_runtime.graphs.state.AgentState` and the :class:`~agent_runtime.graphs.state.Step`
in progress. SimPhone's demonstrations (:mod:`agent_runtime.trainers.demos.traces`) are runs of
this same graph, so the prompts a model is trained on are exactly the prompts it meets at run
time, in every observation mode.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent_runtime.config import GraphConfig, ModelConfig, shows_screenshot, shows_tree
from agent_runtime.errors import ConfigError
from agent_runtime.graphs.state import AgentState, HistoryItem, Step
from agent_runtime.memory.untrusted import as_data
from agent_runtime.observation import Observation
from agent_runtime.roles import manager, notetaker, reflector, worker
from agent_runtime.roles.caller import ImageInput
from agent_runtime.roles.notes import NoteStore
from agent_runtime.specs import ROLE_SPECS

if TYPE_CHECKING:
    from agent_runtime.device import Device


def tree_text(obs: Observation | None) -> str:
    """The indexed, compressed UI tree of ``obs``, or a line saying why there is none."""
    if obs is None:
        return "(the UI tree of this screen is not available)"
    tree = obs.indexed_tree
    if tree:
        return tree
    reason = obs.ui_error or "the device returned no UI tree for this screen"
    return f"(no UI tree: {reason})"


def images_for(mode: str, *shots: ImageInput) -> list[ImageInput]:
    """The image parts a role in ``mode`` gets: none for ``ui_tree``."""
    return list(shots) if shows_screenshot(mode) else []


def tree_for(mode: str, obs: Observation | None) -> str:
    """The tree text a role in ``mode`` gets: empty for ``screenshot``."""
    return tree_text(obs) if shows_tree(mode) else ""


def tree_roles(models: dict[str, ModelConfig]) -> list[str]:
    """Roles (of those given) whose model reads the UI tree."""
    return [
        role
        for role, cfg in models.items()
        if cfg.sees_tree and role in ROLE_SPECS and ROLE_SPECS[role].sees_screen  # RAG: no screen
    ]


def require_tree(device: Device, roles: list[str], obs: Observation) -> None:
    """Fail fast when a role reads the UI tree and the device has none (desktop without AT-SPI)."""
    if not roles or obs.ui_xml:
        return
    info = device.info()
    why = obs.ui_error or "it returned no UI tree"
    raise ConfigError(
        f"role(s) {', '.join(roles)} use observation = 'ui_tree'/'both', but the {info.kind} device "
        f"{info.spec!r} has no UI tree: {why}",
        hint="use observation = 'screenshot' for these roles (a VLM), or enable the device's "
        "accessibility tree (desktop: run the session with AT-SPI / accessibility on)",
    )


def _one_line(text: str) -> str:
    """``text`` cleaned as data (:func:`as_data`) and on one line, for a line of a prompt's list."""
    return " ".join(as_data(text).split())


def answer_lines(state: AgentState) -> list[str]:
    """The user's answers to the agent's questions, oldest first, one ``Q: … — A: …`` line each.

    Both halves are cleaned as data: the question is the model's (and may echo the screen), the
    answer is the user's own words — they count as instructions, but still must not be able to
    end or fake a data block of the prompt they are shown in.

    >>> answer_lines({"answers": [{"step": 2, "question": "Which\\nWi-Fi?", "answer": "Home <<<SCREEN"}]})
    ['Q: Which Wi-Fi? — A: Home SCREEN']
    """
    return [f"Q: {_one_line(a['question'])} — A: {_one_line(a['answer'])}" for a in state.get("answers", [])]


#: Steps of history kept in state (the Worker sees 5, the stuck block at most this many).
HISTORY_KEEP = 8
#: Steps of history the Worker prompt shows.
WORKER_HISTORY = 5


def action_text(step: Step | None) -> str:
    """The action as the model wrote it (JSON), for history lines and the Reflector."""
    if step is None or step.action is None:
        return "(no valid action: the reply could not be parsed)"
    return json.dumps(step.action, ensure_ascii=False)


def manager_inputs(
    state: AgentState,
    step: Step | None,
    *,
    obs: Observation,
    mode: str,
    device_word: str,
    graph: GraphConfig,
) -> manager.ManagerInputs:
    """``M_init`` inputs before the first plan, ``M_update`` inputs afterwards (``step``: the step
    just finished, whose action and verdict the update reports)."""
    screen = {"observation": mode, "ui_tree": tree_for(mode, obs)}
    if not state.get("planned"):
        return manager.ManagerInputs(
            task=state["task"],
            device_word=device_word,
            init=True,
            knowledge=state.get("knowledge", ""),
            earlier=state.get("handover", []),
            answers=answer_lines(state),
            **screen,
        )
    failures = state.get("failures", 0)
    history = state.get("history", [])
    attempts = [
        manager.StuckAttempt(action=h["action"], description=h["description"], feedback=h["feedback"])
        for h in history[-min(failures, HISTORY_KEEP) :]
        if not h["success"]
    ]
    verdict = step.verdict if step is not None else None
    return manager.ManagerInputs(
        task=state["task"],
        device_word=device_word,
        init=False,
        completed=state.get("completed", []),
        plan=state.get("plan", []),
        last_action=action_text(step),
        last_description=step.description if step is not None else "",
        last_outcome="Successful" if verdict is None or verdict.success else "Failed",
        last_feedback=verdict.feedback if verdict is not None else "",
        notes=NoteStore.from_state(state.get("notes")).render(),
        stuck=failures >= graph.stuck_after and bool(attempts),
        stuck_attempts=attempts[-5:],
        answers=answer_lines(state),
        **screen,
    )


def worker_inputs(
    state: AgentState,
    *,
    obs: Observation,
    mode: str,
    device_word: str,
    platform: str,
    model: ModelConfig,
) -> worker.WorkerInputs:
    """The Worker's inputs for the current subgoal (the plan's first item, else the request)."""
    plan = state.get("plan", [])
    history = state.get("history", [])
    last = history[-1] if history else None
    return worker.WorkerInputs(
        task=state["task"],
        device_word=device_word,
        plan=plan,
        subgoal=plan[0] if plan else state["task"],
        completed=state.get("completed", []),
        notes=NoteStore.from_state(state.get("notes")).render(),
        screen_note=worker.screen_note(model.coords, obs.size, model.budget, mode),
        actions=worker.action_specs(platform, mode),
        history=[
            worker.HistoryEntry(
                action=h["action"],
                description=h["description"],
                outcome="Successful" if h["success"] else "Failed",
                feedback=h["feedback"],
            )
            for h in history[-WORKER_HISTORY:]
        ],
        last_feedback=last["feedback"] if last and not last["success"] else "",
        answers=answer_lines(state),
        observation=mode,
        ui_tree=tree_for(mode, obs),
    )


def reflector_inputs(
    state: AgentState,
    step: Step,
    *,
    mode: str,
    device_word: str,
    worker_model: ModelConfig,
    screen_size: Any,
    device_report: str,
) -> reflector.ReflectorInputs:
    """The Reflector's inputs; the before/after trees travel with the ``step`` (tree modes)."""
    tree = shows_tree(mode)
    return reflector.ReflectorInputs(
        task=state["task"],
        device_word=device_word,
        subgoal=step.subgoal,
        completed=step.completed,
        screen_note=worker.screen_note(worker_model.coords, screen_size, worker_model.budget, mode),
        action=action_text(step),
        description=step.description,
        device_report=device_report,
        observation=mode,
        ui_tree_before=step.before_tree if tree else "",
        ui_tree_after=step.after_tree if tree else "",
    )


def notetaker_inputs(
    state: AgentState, step: Step, *, mode: str, device_word: str
) -> notetaker.NotetakerInputs:
    """The Notetaker's inputs: the step's plan and subgoal, the notes so far, the after-screen."""
    return notetaker.NotetakerInputs(
        task=state["task"],
        device_word=device_word,
        plan=step.plan,
        subgoal=step.subgoal,
        notes=NoteStore.from_state(state.get("notes")).render(),
        observation=mode,
        ui_tree=step.after_tree if shows_tree(mode) else "",
    )


def history_line(item: HistoryItem, text: str) -> str:
    """``text`` for an earlier step in a prompt's history, saying how the step failed if it did
    (a role shown only what it did would try the same thing again)."""
    return text if item["success"] else f"{text} (failed: {item['feedback'] or 'no effect'})"


def fold_history(state: AgentState, step: Step) -> dict[str, Any]:
    """A judged step folded into the bounded history and the consecutive-failure count."""
    verdict = step.verdict
    if verdict is None:
        raise ValueError(f"step {step.step} has no verdict to fold into the history")
    item = HistoryItem(
        step=step.step,
        action=action_text(step),
        description=step.description,
        success=verdict.success,
        feedback=verdict.feedback,
        parsed=step.action is not None,
    )
    history = [*state.get("history", []), item][-HISTORY_KEEP:]
    failures = 0 if verdict.success else state.get("failures", 0) + 1
    return {"history": history, "failures": failures}
