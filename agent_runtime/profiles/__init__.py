"""Model profiles: each model family gets the request it was trained on (docs/models.md).

A model's ``profile`` setting names one: ``agent-runtime`` (the runtime's own hardened prompts,
what the demo model is trained on), ``gui-owl`` (GUI-Owl 7B/32B, Mobile-Agent-v3),
``gui-owl-1.5`` and ``ui-tars-1.5``; ``auto`` (the default) picks one from the served model's
name. The ``single`` graph renders through an official profile; so do the Mobile-Agent-v3 roles
of a profile that brings its own (:attr:`Profile.roles`: ``gui-owl``'s, :mod:`.mobile_agent_v3`).
"""

from __future__ import annotations

from agent_runtime.profiles.base import PastTurn, Profile, Request
from agent_runtime.profiles.gui_owl import GuiOwl
from agent_runtime.profiles.gui_owl_15 import GuiOwl15
from agent_runtime.profiles.ui_tars import UiTars15

__all__ = ["AGENT_RUNTIME", "PROFILES", "PastTurn", "Profile", "Request", "official", "resolve"]

#: The runtime's own prompts (roles/prompts/*.j2): no official layout to reproduce.
AGENT_RUNTIME = "agent-runtime"
PROFILES: dict[str, Profile] = {p.name: p for p in (GuiOwl(), GuiOwl15(), UiTars15())}
#: Served-name fragments -> profile, most specific first (``gui-owl-1.5`` before ``gui-owl``).
_NAME_RULES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gui-owl-1.5", "gui-owl-1_5", "guiowl-1.5", "gui-owl1.5"), "gui-owl-1.5"),
    (("gui-owl", "guiowl"), "gui-owl"),
    (("ui-tars-1.5", "ui-tars", "uitars"), "ui-tars-1.5"),
)


def resolve(setting: str, served: str) -> tuple[str, str]:
    """The profile a model with ``profile = setting`` serving ``served`` uses, and why.

    >>> resolve("auto", "mPLUG/GUI-Owl-1.5-8B")
    ('gui-owl-1.5', "auto: the served model 'mPLUG/GUI-Owl-1.5-8B' contains 'gui-owl-1.5'")
    >>> resolve("auto", "ByteDance-Seed/UI-TARS-1.5-7B")[0], resolve("auto", "qwen2.5-vl")[0]
    ('ui-tars-1.5', 'agent-runtime')
    >>> resolve("gui-owl", "anything")
    ('gui-owl', 'set in the config')
    """
    if setting != "auto":
        return setting, "set in the config"
    name = served.lower().replace("_", "-")
    for fragments, profile in _NAME_RULES:
        hit = next((f for f in fragments if f in name), None)
        if hit is not None:
            return profile, f"auto: the served model {served!r} contains {hit!r}"
    return AGENT_RUNTIME, f"auto: {served!r} names no known family, so the runtime's own prompts"


def official(setting: str, served: str) -> Profile | None:
    """The official profile to render with, or None for the runtime's own prompts."""
    return PROFILES.get(resolve(setting, served)[0])
