"""The Manager (planner): the first plan from the request, then plan updates after every step.

Reply format (GUI-Owl / Mobile-Agent-v3): ``### Thought ###``, ``### Historical Operations ###``
(later calls only: completed subgoals, newest first) and ``### Plan ###`` — a numbered list, or
the word ``Finished`` once the request is done. The plan is Finished only when the Manager says
so: a Plan section that is missing, empty or "None" is a format error (the caller re-asks, then
the graph keeps the previous plan), never a finished run — junk must not read as success.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from agent_runtime.errors import ParseError
from agent_runtime.role_outputs import ManagerOutput
from agent_runtime.roles.lists import split_items
from agent_runtime.roles.sections import split_sections, strip_markup
from agent_runtime.specs import prompt_template

TEMPLATE = prompt_template("manager")
SECTIONS_INIT = ("Thought", "Plan")
SECTIONS_UPDATE = ("Thought", "Historical Operations", "Plan")
_HEADINGS = ("Thought", "Historical Operations", "Completed Subgoals", "Plan")
#: The whole single plan item, after markup: "Finished", "Done.", "The task is finished!" —
#: not a subgoal that merely starts with the word ("Completed X; now open Y").
_FINISHED = re.compile(
    r"(?:the\s+)?(?:task\s+|request\s+)?(?:is\s+)?(?:finished|done|completed)[\s.!]*", re.IGNORECASE
)


class StuckAttempt(BaseModel):
    """One failed attempt listed in the Potentially Stuck block."""

    action: str
    description: str = ""
    feedback: str = ""


class ManagerInputs(BaseModel):
    """Everything ``manager.j2`` renders. ``init`` selects the first-plan form."""

    task: str
    device_word: str = "phone"
    init: bool = True
    knowledge: str = ""
    earlier: list[str] = Field(
        default_factory=list, description="steps another agent played earlier in the run (auto's handover)"
    )
    completed: list[str] = Field(default_factory=list)
    plan: list[str] = Field(default_factory=list)
    last_action: str = ""
    last_description: str = ""
    last_outcome: str = ""
    last_feedback: str = ""
    notes: str = ""
    stuck: bool = False
    stuck_attempts: list[StuckAttempt] = Field(default_factory=list)
    answers: list[str] = Field(
        default_factory=list, description="the user's answers to the agent's questions, 'Q: … — A: …'"
    )
    observation: str = Field("screenshot", description="screenshot | ui_tree | both")
    ui_tree: str = Field("", description="the indexed UI tree (ui_tree/both modes)")


def parse_manager(text: str) -> ManagerOutput:
    """Parse a Manager reply; raise :class:`ParseError` when it has no plan (no Plan section,
    or one with no subgoals and no Finished).

    >>> parse_manager("### Thought ###\\nok\\n### Plan ###\\n1. Open Settings\\n2. Tap Wi-Fi").plan
    ['Open Settings', 'Tap Wi-Fi']
    >>> parse_manager("## Plan\\n**Finished**").finished
    True
    """
    sections = split_sections(text, _HEADINGS)
    if "plan" not in sections:
        raise ParseError(
            "the reply has no '### Plan ###' section",
            hint="answer with ### Thought ###, ### Historical Operations ### and ### Plan ###",
        )
    items = split_items(sections["plan"])
    if not items:
        raise ParseError(
            "the '### Plan ###' section is empty",
            hint="list the remaining subgoals as 1. 2. 3., or write Finished if the request is done",
        )
    finished = len(items) == 1 and bool(_FINISHED.fullmatch(strip_markup(items[0])))
    completed_text = sections.get("historical operations", sections.get("completed subgoals", ""))
    return ManagerOutput(
        thought=sections.get("thought", ""),
        completed=split_items(completed_text),
        plan=[] if finished else items,
        finished=finished,
    )
