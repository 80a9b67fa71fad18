"""The Notetaker: content on screen that later steps will need (codes, numbers, names).

Reply format: ``### Important Notes ###`` — the full updated notes. It runs concurrently with
the Reflector (speculatively); the graph keeps its notes only when the Reflector says SUCCESS
(Algorithm 1). The per-run :class:`~agent_runtime.roles.notes.NoteStore` merges and de-duplicates.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_runtime.errors import ParseError
from agent_runtime.role_outputs import NotetakerOutput
from agent_runtime.roles.sections import is_none, split_sections
from agent_runtime.specs import prompt_template

TEMPLATE = prompt_template("notetaker")
SECTIONS = ("Important Notes",)
_HEADINGS = ("Important Notes", "Notes")


class NotetakerInputs(BaseModel):
    """Everything ``notetaker.j2`` renders."""

    task: str
    device_word: str = "phone"
    plan: list[str] = Field(default_factory=list)
    subgoal: str = ""
    notes: str = ""
    observation: str = Field("screenshot", description="screenshot | ui_tree | both")
    ui_tree: str = Field("", description="the indexed UI tree after the action (ui_tree/both modes)")


def parse_notetaker(text: str) -> NotetakerOutput:
    """Parse a Notetaker reply.

    >>> parse_notetaker("### Important Notes ###\\n- Order code: 7731").notes
    '- Order code: 7731'
    """
    sections = split_sections(text, _HEADINGS)
    body = sections.get("important notes", sections.get("notes"))
    if body is None:
        raise ParseError(
            "the reply has no '### Important Notes ###' section", hint="write the notes under that heading"
        )
    return NotetakerOutput(notes="" if is_none(body) else body.strip())
