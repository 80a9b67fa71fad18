"""The step-level critic (Mobile-Agent-v3 §6.3): was this one action GOOD, NEUTRAL or HARMFUL?

It reads the pre-action state (request, history, screenshot), the action and the post-action
screenshot, and replies with ``### Analysis ###``, ``### Summary ###`` (at most 30 words) and
``### Annotation ###`` (GOOD / NEUTRAL / HARMFUL). As in the paper, the critical interaction
region is marked on the pre-action screenshot (:func:`mark_action`) so the model looks where the
action touched. The action is shown in the *critic model's* coordinate space, matching the
resized image it sees.
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.coords import CoordMapper, CoordSpace, Size
from agent_runtime.errors import ParseError
from agent_runtime.roles.sections import split_sections, strip_markup
from agent_runtime.trainers.critics.labels import StepAnnotation

TEMPLATE = "critic_step.j2"
SECTIONS = ("Analysis", "Summary", "Annotation")
SUMMARY_WORDS = 30
_LABEL = re.compile(r"\b(GOOD|NEUTRAL|HARMFUL)\b", re.IGNORECASE)
_LEADING_LABEL = re.compile(r"^[\s*_`>\"'\[\(-]*(?:GOOD|NEUTRAL|HARMFUL)\b", re.IGNORECASE)


class StepCriticOutput(BaseModel):
    model_config = ConfigDict(frozen=True)

    analysis: str = ""
    summary: str = Field("", description=f"at most {SUMMARY_WORDS} words")
    annotation: StepAnnotation


class StepCriticInputs(BaseModel):
    """Everything ``critic_step.j2`` renders."""

    task: str
    device_word: str = "phone"
    history: list[str] = Field(default_factory=list, description="summaries of the earlier steps")
    action: str
    description: str = ""
    screen_note: str = ""


def parse_step_critic(text: str) -> StepCriticOutput:
    """Parse a step-critic reply; the annotation must start with a label and name only that one
    (so "not GOOD" or "GOOD or NEUTRAL" is a format error, never a GOOD).

    A summary longer than 30 words is cut to 30 (the limit is for the trajectory critic's
    prompt length, not a reason to throw the judgement away).

    >>> parse_step_critic("### Analysis ###\\nOpened Wi-Fi.\\n### Summary ###\\nTapped Wi-Fi.\\n"
    ...                   "### Annotation ###\\n**GOOD**").annotation
    'GOOD'
    """
    sections = split_sections(text, SECTIONS)
    if "annotation" not in sections:
        raise ParseError(
            "the reply has no '### Annotation ###' section", hint="end with ### Annotation ### GOOD"
        )
    annotation = sections["annotation"]
    labels = {m.upper() for m in _LABEL.findall(annotation)}
    if len(labels) != 1 or not _LEADING_LABEL.match(annotation):
        found = ", ".join(sorted(labels)) or "none"
        raise ParseError(
            f"the Annotation section must start with exactly one of GOOD, NEUTRAL, HARMFUL, naming no other "
            f"(found: {found})",
            hint="write only GOOD, NEUTRAL or HARMFUL under ### Annotation ###",
        )
    summary = " ".join(strip_markup(sections.get("summary", "")).split()[:SUMMARY_WORDS])
    return StepCriticOutput(
        analysis=sections.get("analysis", "").strip(),
        summary=summary,
        annotation=labels.pop(),  # type: ignore[arg-type]
    )


def _point(value: Any) -> tuple[float, float] | None:
    """A recorded ``[x, y]`` as floats; None for anything else (a missing or malformed point)."""
    if not (isinstance(value, list | tuple) and len(value) == 2):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    return float(value[0]), float(value[1])


def mark_action(png: bytes, action_screen: dict[str, Any] | None) -> bytes:
    """The screenshot with the action's screen point circled in red (a swipe gets an arrow).

    Actions without coordinates (type, back, open_app…) leave the screenshot unchanged.
    """
    points = [p for p in (_point((action_screen or {}).get(k)) for k in ("coordinate", "coordinate2")) if p]
    if not points:
        return png
    from PIL import Image, ImageDraw

    with Image.open(io.BytesIO(png)) as img:
        canvas = img.convert("RGB")
    draw = ImageDraw.Draw(canvas)
    radius = max(6, min(canvas.size) // 30)
    width = max(2, radius // 4)
    x, y = points[0]
    draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=(255, 0, 0), width=width)
    if len(points) == 2:
        x2, y2 = points[1]
        draw.line((x, y, x2, y2), fill=(255, 0, 0), width=width)
        draw.ellipse((x2 - width * 2, y2 - width * 2, x2 + width * 2, y2 + width * 2), fill=(255, 0, 0))
    out = io.BytesIO()
    canvas.save(out, format="PNG")
    return out.getvalue()


def to_model_space(action: dict[str, Any], mapper: CoordMapper) -> dict[str, Any]:
    """A screen-pixel action (JSON form) with its points mapped into a model's coordinate space."""
    out = dict(action)
    for key in ("coordinate", "coordinate2"):
        point = _point(out.get(key))
        if point is not None:
            x, y = mapper.from_screen(*point)
            out[key] = (
                [round(x, 4), round(y, 4)] if mapper.space is CoordSpace.NORMALIZED else [round(x), round(y)]
            )
    return out


def action_json(action_screen: dict[str, Any], mapper: CoordMapper) -> str:
    """The executed action as JSON, its coordinates in the critic model's space."""
    return json.dumps(to_model_space(action_screen, mapper), ensure_ascii=False)


def image_size(png: bytes) -> Size:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        return Size(*img.size)
