"""The role callers a run plays with: each role's chat model, prompt template and limits.

The chat models themselves are the runtime's (one client per distinct model config, reused
across runs); a run only wraps them in :class:`~agent_runtime.roles.caller.RoleCaller`\\ s that
record its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agent_runtime.config import OPTIONAL_ROLES, GraphKind, Role, RuntimeConfig
from agent_runtime.errors import ConfigError
from agent_runtime.specs import role_spec

if TYPE_CHECKING:
    from agent_runtime.roles.caller import RoleCaller
    from agent_runtime.traces import CallRecord


def build_callers(
    config: RuntimeConfig,
    chat_model: Callable[[Role], Any],
    *,
    run_id: str,
    record: Callable[[CallRecord], None],
    kind: GraphKind,
) -> dict[str, RoleCaller]:
    """A caller per role the ``kind`` graph plays, over the runtime's ``chat_model`` for it;
    ``record`` receives each call's record."""
    from agent_runtime.roles.caller import RoleCaller
    from agent_runtime.roles.templates import load_template, role_template

    config = config.playing(kind)
    callers: dict[str, RoleCaller] = {}
    for role in config.graph_roles():
        if role not in OPTIONAL_ROLES and not config.role(role).enabled:
            raise ConfigError(f"the {role} role cannot be disabled (the {kind} graph needs it)")
        spec = role_spec(role)
        # A role whose prompts exist in the full set only: a model's ``prompts = "compact"`` does not apply.
        prompts = config.model_for(role).prompts if spec.compact else "full"
        override = config.role(role).prompt
        template = role_template(spec.template, prompts, override) if spec.template is not None else None
        callers[role] = RoleCaller(
            role,
            chat_model(role),
            config.model_for(role),
            template,
            run_id=run_id,
            record=record,
            reask=config.graph.reask,
            system_template=load_template(spec.system_template) if spec.system_template else None,
            images_first=spec.images_first,
        )
    return callers


def models_record(callers: Mapping[str, RoleCaller]) -> dict[str, dict[str, Any]]:
    """run.json's ``models``: each role's model config (no secrets), model id and prompt."""
    out: dict[str, dict[str, Any]] = {}
    for role, caller in callers.items():
        entry = caller.model_config.public()
        entry.update(model_id=caller.model_id, prompt=caller.template.source if caller.template else None)
        out[role] = entry
    return out
