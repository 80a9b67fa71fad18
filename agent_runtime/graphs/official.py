"""The team graph's side of Mobile-Agent-v3's roles under an official profile (``gui-owl``).

A role whose model runs under a profile that names its own template for that role
(:attr:`~agent_runtime.profiles.base.Profile.roles`) is asked with that profile's prompt instead of
the runtime's: one user turn, the prompt text then the screenshots (the current one; the
Reflector the screens before and after), as the official ``predict_mm`` sends them, encoded with
the profile's image rules. The official prompts read the official ``InfoPool``; :func:`pool_of`
builds it from the graph state — the steps' history and the step in progress from the runtime's
own records, the texts the official loop keeps verbatim (the Manager's flattened plan and
historical operations, the progress status, the Notetaker's notes) from ``state["info_pool"]``,
which :func:`after_plan` and :func:`after_notes` keep up to date.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agent_runtime.errors import ConfigError
from agent_runtime.graphs.state import AgentState, HistoryItem, Step
from agent_runtime.profiles import Profile, official
from agent_runtime.profiles.mobile_agent_v3 import (
    INVALID_ACTION,
    INVALID_FEEDBACK,
    PROMPTS,
    REPLY_FORMATS,
    Attempt,
    Pool,
    action_text,
    manager_texts,
)
from agent_runtime.role_outputs import ManagerOutput
from agent_runtime.roles.caller import ImageInput, RoleCaller, RoleResult, Turn
from agent_runtime.roles.notes import NoteStore

if TYPE_CHECKING:
    from agent_runtime.graphs.context import RunContext

T = TypeVar("T", bound=BaseModel)
#: The roles the official Mobile-Agent-v3 prompts are written for.
TEAM_ROLES = tuple(PROMPTS)


def served_model(caller: RoleCaller) -> str:
    """The id of the model the caller talks to: for an endpoint configured with ``model =
    "auto"`` the id it serves (asked once, ``GET /models``), which ``profile = "auto"`` reads."""
    if caller.model_config.base_url is None:  # in process: the configured ref is the model
        return caller.model_id
    resolve = getattr(caller.chat_model, "_model_id", None)  # the runtime's chat models resolve it
    return str(resolve()) if callable(resolve) else caller.model_id


def official_role(ctx: RunContext, role: str) -> Profile | None:
    """The profile whose own prompt ``role`` gets, or None for the runtime's prompts.

    The role's caller takes the profile's image format, size rule and coordinates (the Worker's
    actions are mapped back from the space the model answered in). The official prompts show
    screenshots only, so a role set to read the UI tree is refused with a clear message.
    """
    caller = ctx.callers.get(role)
    if caller is None:
        return None
    profile = official(caller.model_config.profile, served_model(caller))
    if profile is None or role not in profile.roles:
        return None
    profile.check_platform(ctx.platform)
    if ctx.mode(role) != "screenshot":
        raise ConfigError(
            f"the {role} role runs under model profile {profile.name!r}, whose prompts show screenshots "
            f"only, but its observation is {ctx.mode(role)!r}",
            hint=f"set observation = 'screenshot' for [roles.{role}], or profile = 'agent-runtime' "
            "(docs/models.md)",
        )
    caller.model_config = profile.effective(caller.model_config)
    return profile


def tracks_pool(ctx: RunContext) -> bool:
    """Whether some team role runs under an official profile (then the pool texts are kept)."""
    return any(official_role(ctx, role) is not None for role in TEAM_ROLES)


def _attempt(item: HistoryItem) -> Attempt:
    """A history item as the official action history holds it: the Python dict, or the
    official record of a reply that gave no usable action."""
    try:
        action = json.loads(item["action"]) if item.get("parsed", True) else None
    except ValueError:
        action = None
    summary = item["description"]
    if not isinstance(action, dict):
        return Attempt(action=INVALID_ACTION, summary=summary, success=False, error=INVALID_FEEDBACK)
    return Attempt(
        action=action_text(action), summary=summary, success=item["success"], error=item["feedback"]
    )


def pool_of(state: AgentState, step: Step | None = None) -> Pool:
    """The official InfoPool for the next role call (``step``: the step whose action the call
    judges or reports — the Reflector's and the Manager update's "last action")."""
    texts = state.get("info_pool", {})
    notes = texts.get("important_notes")
    return Pool(
        instruction=state["task"],
        knowledge=state.get("knowledge", ""),
        plan=texts.get("plan", ""),
        completed_plan=texts.get("completed_plan", ""),
        progress_status=texts.get("progress_status", ""),
        important_notes=NoteStore.from_state(state.get("notes")).render() if notes is None else notes,
        last_action=action_text(step.action) if step is not None else "",
        last_summary=step.description if step is not None else "",
        history=tuple(_attempt(h) for h in state.get("history", [])),
    )


def request(role: str, pool: Pool, images: Sequence[ImageInput]) -> list[Turn]:
    """What the official ``predict_mm`` sends: one user turn, the prompt then the screenshots."""
    return [Turn("user", (PROMPTS[role](pool), *images))]


def ask(
    ctx: RunContext,
    role: str,
    profile: Profile,
    pool: Pool,
    images: Sequence[ImageInput],
    parse: Callable[[str], T],
    *,
    step: int,
    extra: dict[str, Any] | None = None,
) -> RoleResult[T]:
    """One official role call (:func:`request`), parsed and re-asked like every role call."""
    return ctx.callers[role].call_turns(
        request(role, pool, images),
        parse,
        step=step,
        reply_format=REPLY_FORMATS[role],
        extra={"profile": profile.name, **(extra or {})},
    )


def after_plan(state: AgentState, step: Step | None, result: RoleResult[ManagerOutput]) -> dict[str, str]:
    """The pool texts after a Manager call.

    The official loop sets the progress status to the historical operations once a step has
    been judged, before the next plan; the plan and historical operations are then the Manager's
    own text. A plan that could not be read keeps the previous one (first plan: the request).
    """
    texts = dict(state.get("info_pool", {}))
    if step is not None and step.action is not None and step.verdict is not None:
        texts["progress_status"] = texts.get("completed_plan", "")
    if result.output is not None:
        texts["plan"], texts["completed_plan"] = manager_texts(result.completion, result.output)
    elif not texts.get("plan"):
        texts["plan"] = f"1. {state['task']}"
    return texts


def after_notes(state: AgentState, notes: str) -> dict[str, str]:
    """The pool texts after the Notetaker's notes were kept: they replace the old ones."""
    return {**state.get("info_pool", {}), "important_notes": notes}


def judged_pool(state: AgentState, step: Step) -> Pool:
    """The pool right after ``step`` was judged — the Notetaker's: the official loop has just
    set the progress status to the Manager's historical operations."""
    pool = pool_of(state, step)
    return pool.model_copy(update={"progress_status": pool.completed_plan})
