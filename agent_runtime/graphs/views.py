"""What each role is shown of the screen: screenshots, the indexed UI tree, or both.

A role's model config says ``observation = "screenshot" | "ui_tree" | "both"``. Text-only models
get the compressed uiautomator tree (MobileRL App. D) with ``[i]`` element indices and **no image
parts at all**; VLMs get screenshots; ``both`` gets the two. The graph and the SimPhone
demonstration writer (:mod:`agent_runtime.trainers.oracle_traces`) both build role inputs through
these functions, so a model trained on demonstrations meets the same prompts at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_runtime.config import ModelConfig, RuntimeConfig
from agent_runtime.errors import ConfigError
from agent_runtime.observation import Observation
from agent_runtime.roles.caller import ImageInput

if TYPE_CHECKING:
    from agent_runtime.device import Device

#: Roles whose prompts show the screen (RAG sees only the request).
SCREEN_ROLES = ("manager", "worker", "reflector", "notetaker")


def tree_text(obs: Observation | None) -> str:
    """The indexed, compressed UI tree of ``obs``, or a line saying why there is none."""
    if obs is None:
        return "(the UI tree of this screen is not available)"
    tree = obs.compressed_tree(with_index=True)
    if tree:
        return tree
    reason = obs.ui_error or "the device returned no UI tree for this screen"
    return f"(no UI tree: {reason})"


def images_for(mode: str, *shots: ImageInput) -> list[ImageInput]:
    """The image parts a role in ``mode`` gets: none for ``ui_tree``."""
    return list(shots) if mode in ("screenshot", "both") else []


def tree_for(mode: str, obs: Observation | None) -> str:
    """The tree text a role in ``mode`` gets: empty for ``screenshot``."""
    return tree_text(obs) if mode in ("ui_tree", "both") else ""


def tree_roles(models: dict[str, ModelConfig]) -> list[str]:
    """Roles (of those given) whose model reads the UI tree."""
    return [role for role, cfg in models.items() if role in SCREEN_ROLES and cfg.sees_tree]


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


def configured_tree_roles(config: RuntimeConfig, enabled: list[str]) -> list[str]:
    """Enabled screen roles whose configured model reads the UI tree."""
    return tree_roles({role: config.model_for(role) for role in enabled if role in SCREEN_ROLES})  # type: ignore[arg-type]
