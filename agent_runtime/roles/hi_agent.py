"""Hi-Agent's two levels as runtime roles (Hi-Agent §3, App. C.3).

The **high** level π_h reads the goal, the screen and the earlier instructions and writes
``<reasoning>…</reasoning> <instruction>Instruction: …</instruction>``; the **low** level π_ℓ
turns (instruction, screen) into one action JSON object. Both prompts are the templates
``hi_agent_high.j2`` / ``hi_agent_low.j2``, which ``distill --method grpo`` renders for its
training rows too (:mod:`agent_runtime.trainers.hi_agent.grpo_data`) — so an adapter GRPO
trained meets at run time exactly the prompt it learnt on (the screenshot before the text, as in
TRL's rows). The low level answers in the extent of its model's coordinate space, named in its
prompt, and its reply is read by the Worker's parser.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agent_runtime.errors import ParseError
from agent_runtime.role_outputs import SubgoalOutput
from agent_runtime.roles.sections import readable
from agent_runtime.roles.templates import load_template
from agent_runtime.specs import prompt_template

HIGH_TEMPLATE = prompt_template("high")
LOW_TEMPLATE = prompt_template("low")
#: Earlier instructions shown to the high level (Hi-Agent's "Previous actions").
HISTORY_STEPS = 5
#: What a re-ask shows each level of its reply format.
HIGH_FORMAT = "<reasoning> reasoning process here </reasoning> <instruction>Instruction: ...</instruction>"
LOW_FORMAT = 'one action as a single JSON object, e.g. {"action": "click", "coordinate": [x, y]}'

_SUBGOAL = re.compile(
    r"<reasoning>(?P<reasoning>.*?)</reasoning>\s*<instruction>\s*(?:Instruction\s*:)?(?P<instruction>.*?)"
    r"</instruction>",
    re.DOTALL | re.IGNORECASE,
)


class HighInputs(BaseModel):
    """Everything ``hi_agent_high.j2`` renders."""

    problem: str
    answers: list[str] = Field(
        default_factory=list, description="the user's answers to the agent's questions, 'Q: … — A: …'"
    )
    history: str = "none"
    observation: str = "screenshot"
    ui_tree: str = ""


class LowInputs(BaseModel):
    """Everything ``hi_agent_low.j2`` renders (``width``/``height``: the coordinate extent)."""

    width: str
    height: str
    instruction: str
    platform: str = "mobile"
    observation: str = "screenshot"
    ui_tree: str = ""


def history_text(previous: Sequence[str]) -> str:
    """The "Previous actions" line: the last :data:`HISTORY_STEPS` instructions, or ``none``.

    >>> history_text(['Tap "Wi-Fi".', 'Tap "Save".'])
    'Tap "Wi-Fi".; Tap "Save".'
    """
    return "; ".join(previous[-HISTORY_STEPS:]) or "none"


def extent(value: float) -> str:
    """A coordinate extent as the low-level prompt writes it (``1092``, ``1000``, ``1``)."""
    return f"{value:g}"


def high_text(
    problem: str, previous: Sequence[str], *, observation: str = "screenshot", ui_tree: str = ""
) -> str:
    """The high level's prompt text."""
    inputs = HighInputs(
        problem=problem, history=history_text(previous), observation=observation, ui_tree=ui_tree
    )
    return load_template(HIGH_TEMPLATE).render(**inputs.model_dump())


def low_text(size: Sequence[float], instruction: str, *, platform: str = "mobile") -> str:
    """The low level's prompt text for ``instruction``, coordinates in the ``size`` extent."""
    inputs = LowInputs(
        width=extent(size[0]), height=extent(size[1]), instruction=instruction, platform=platform
    )
    return load_template(LOW_TEMPLATE).render(**inputs.model_dump())


def parse_high(text: str) -> SubgoalOutput:
    """The subgoal of a high-level reply (the ``Instruction:`` prefix is optional here; GRPO's
    format reward is stricter).

    >>> parse_high("<reasoning>Settings.</reasoning> <instruction>Instruction: tap Wi-Fi</instruction>")
    SubgoalOutput(reasoning='Settings.', instruction='tap Wi-Fi')
    """
    match = _SUBGOAL.search(readable(text))
    if match is None:
        raise ParseError(
            "the reply has no <reasoning>…</reasoning> <instruction>…</instruction>", hint=HIGH_FORMAT
        )
    instruction = match["instruction"].strip()
    if not instruction:
        raise ParseError("the <instruction> is empty", hint=HIGH_FORMAT)
    return SubgoalOutput(reasoning=match["reasoning"].strip(), instruction=instruction)
