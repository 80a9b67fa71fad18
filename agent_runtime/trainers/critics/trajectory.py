"""The trajectory-level critic (Mobile-Agent-v3 §6.3): did the whole run accomplish the request?

Two channels judge independently and the run is Correct only if both say Correct (paper eq. 4):

* the **text channel** reads a caption of each screen (``critic_caption.j2``, written by the
  multimodal model) and each step's summary — a language model can judge it without pixels;
* the **multimodal channel** reads the step summaries and up to ``max_images`` screenshots
  (evenly spaced, always including the final screen).

Step summaries come from the step critic when it ran (its ≤30-word summaries), else from the
Worker's own description of each action.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.errors import ParseError
from agent_runtime.roles.sections import readable, split_sections, strip_markup
from agent_runtime.trainers.critics.labels import TrajectoryVerdict

TEXT_TEMPLATE = "critic_trajectory_text.j2"
MULTIMODAL_TEMPLATE = "critic_trajectory_mm.j2"
CAPTION_TEMPLATE = "critic_caption.j2"
SECTIONS = ("Reasoning", "Verdict")
_VERDICT = re.compile(r"^[\s*_`>\"'\[\(-]*(?P<word>incorrect|correct)\b", re.IGNORECASE)
_EITHER = re.compile(r"\b(?:in)?correct\b", re.IGNORECASE)


class TrajectoryChannelOutput(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: TrajectoryVerdict
    reasoning: str = ""


class TrajectoryStep(BaseModel):
    """One step as both channels' prompts show it."""

    index: int
    action: str
    summary: str = ""
    annotation: str = ""
    caption: str = Field("", description="text channel only")


def parse_trajectory_verdict(text: str) -> TrajectoryChannelOutput:
    """Parse either channel's reply: the Verdict section must start with Correct or Incorrect,
    and its first line must not name the other one too ("Correct or Incorrect" is no verdict).

    >>> parse_trajectory_verdict("### Reasoning ###\\nAlarm set.\\n### Verdict ###\\n**Correct**").verdict
    'Correct'
    >>> parse_trajectory_verdict("### Verdict ###\\nIncorrect - it stopped early").verdict
    'Incorrect'
    """
    sections = split_sections(text, SECTIONS)
    if "verdict" not in sections:
        raise ParseError(
            "the reply has no '### Verdict ###' section", hint="end with ### Verdict ### Correct"
        )
    m = _VERDICT.match(sections["verdict"])
    if m is None:
        raise ParseError(
            f"the Verdict section does not start with Correct or Incorrect: {sections['verdict'][:60]!r}",
            hint="write only Correct or Incorrect under ### Verdict ###",
        )
    verdict = "Incorrect" if m.group("word").lower() == "incorrect" else "Correct"
    first_line = sections["verdict"][m.end() :].split("\n", 1)[0]
    if any(w.lower() != verdict.lower() for w in _EITHER.findall(first_line)):
        raise ParseError(
            f"the Verdict section names both Correct and Incorrect: {sections['verdict'][:60]!r}",
            hint="write only Correct or Incorrect under ### Verdict ###",
        )
    return TrajectoryChannelOutput(verdict=verdict, reasoning=sections.get("reasoning", "").strip())  # type: ignore[arg-type]


class Caption(BaseModel):
    """One screenshot described in words (the text-only trajectory critic reads these)."""

    model_config = ConfigDict(frozen=True)

    text: str


def parse_caption(text: str) -> Caption:
    """A caption reply: the text under ``### Caption ###`` if present, else the whole reply.

    >>> parse_caption("The Clock app,   Alarms tab.").text
    'The Clock app, Alarms tab.'
    """
    caption = strip_markup(split_sections(text, ("Caption",)).get("caption") or readable(text))
    if not caption:
        raise ParseError("the caption is empty", hint="describe the screenshot in one or two sentences")
    return Caption(text=" ".join(caption.split()))


def pick_images(n_screens: int, max_images: int) -> list[int]:
    """Indices of up to ``max_images`` screens, evenly spaced, first and last included.

    >>> pick_images(10, 4)
    [0, 3, 6, 9]
    >>> pick_images(3, 8)
    [0, 1, 2]
    """
    if n_screens <= max_images:
        return list(range(n_screens))
    if max_images == 1:
        return [n_screens - 1]
    step = (n_screens - 1) / (max_images - 1)
    return sorted({round(i * step) for i in range(max_images)})
