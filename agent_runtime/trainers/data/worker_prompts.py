"""Worker prompts and replies for states that no run recorded (expert demos, explored actions).

Expert demonstrations and ReachAgent-style alternatives come from SimPhone, not from traces, so
their prompts are rendered here with the runtime's own Worker template (``worker.j2``) and laid
out exactly as :class:`~agent_runtime.roles.caller.RoleCaller` records a call: one user message,
the prompt text, then the screenshot as an ``image_ref`` with the size the model sees. Trained
models therefore meet at run time the prompts they were trained on. Actions are written in the
model's coordinate space (:class:`PromptSettings`, :func:`to_model_space`), the same space the
runtime maps back from.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.coords import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_MIN_PIXELS,
    CoordMapper,
    CoordSpace,
    ImageBudget,
    Size,
)
from agent_runtime.roles.templates import load_template
from agent_runtime.roles.worker import TEMPLATE, HistoryEntry, WorkerInputs, action_specs, screen_note
from agent_runtime.trainers.critics.step import to_model_space

HISTORY_LENGTH = 5

__all__ = ["HISTORY_LENGTH", "PromptSettings", "format_worker_reply", "to_model_space", "worker_messages"]


class PromptSettings(BaseModel):
    """How the Worker model being trained is called: its coordinate space and image budget."""

    model_config = ConfigDict(frozen=True)

    coords: CoordSpace = Field(CoordSpace.PIXELS_RESIZED, description="the space the model answers in")
    min_pixels: int = Field(DEFAULT_MIN_PIXELS, gt=0, description="image budget: minimum pixels")
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0, description="image budget: maximum pixels")

    @property
    def budget(self) -> ImageBudget:
        return ImageBudget(min_pixels=self.min_pixels, max_pixels=self.max_pixels)

    def mapper(self, screen: Size) -> CoordMapper:
        return CoordMapper(space=self.coords, screen=screen, budget=self.budget)


def worker_messages(
    goal: str,
    screen_ref: str,
    screen: Size,
    settings: PromptSettings,
    *,
    history: list[HistoryEntry] | None = None,
    platform: str = "mobile",
) -> list[dict[str, Any]]:
    """The recorded-call form of a Worker prompt at one state (subgoal = the whole goal)."""
    inputs = WorkerInputs(
        task=goal,
        device_word="phone" if platform == "mobile" else "computer",
        plan=[goal],
        subgoal=goal,
        screen_note=screen_note(settings.coords, screen, settings.budget),
        actions=action_specs(platform),
        history=(history or [])[-HISTORY_LENGTH:],
    )
    text = load_template(TEMPLATE).render(**inputs.model_dump())
    seen = settings.budget.resized(screen)
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image_ref", "ref": screen_ref, "size": [seen.width, seen.height]},
            ],
        }
    ]


def format_worker_reply(thought: str, action: dict[str, Any], description: str) -> str:
    """A Worker reply in the Mobile-Agent-v3 format the runtime's parser reads."""
    return (
        f"### Thought ###\n{thought}\n\n### Action ###\n{json.dumps(action, ensure_ascii=False)}\n\n"
        f"### Description ###\n{description}"
    )
