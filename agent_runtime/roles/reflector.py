"""The Reflector: did the last action do what the Worker expected?

Reply format: ``### Outcome ###`` — A (successful or partially), B (failed: wrong page, go back),
C (failed: no change) — and ``### Error Description ###``. The verdict is read from the *leading*
letter of the Outcome section only ("A", "(B)", "Outcome: C.", "**A**: Successful"); the
reference implementation's substring test (any capital A anywhere wins) is exactly the bug this
avoids. A reply with no Outcome section or no leading verdict is malformed, never guessed; so is
one that names two verdicts ("A, B or C", "A/B") or starts with the article "A" ("A new page
opened…"): success is read only where the Reflector clearly says A.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from agent_runtime.errors import ParseError
from agent_runtime.role_outputs import Outcome, ReflectorOutput
from agent_runtime.roles.sections import is_none, split_sections
from agent_runtime.specs import prompt_template

TEMPLATE = prompt_template("reflector")
SECTIONS = ("Outcome", "Error Description")
_HEADINGS = ("Outcome", "Error Description", "Screenshot Difference", "Progress Status")
# Runs of markup are possessive (``*+``): no verdict starts with markup, and backtracking through
# two adjacent runs made a reply of 4,000 "[" take a quarter of a second.
_LEADING_VERDICT = re.compile(
    r"^[\s*_`>\"'\[\(-]*+(?:(?i:outcome)\s*+[:\-]?\s*+)?(?:(?i:option)\s*+)?[\s*_`\[\(\"']*+"
    r"(?:(?P<letter>[ABC])(?![A-Za-z0-9])|(?P<lower>[abc])(?=\s*(?:[:).\]*]|$)))"
)
_WORD_VERDICT = re.compile(r"^[\s*_`>\"'\[\(-]*+(?P<word>successful|success|failed|failure)\b", re.IGNORECASE)
#: Right after a verdict: a second one offered as an alternative ("A, B or C", "A/B", "Success or failure").
_ALTERNATIVE = re.compile(
    r"^[\s*_`\)\]\"']*+(?:,|/|\||\bor\b|\band\b)[\s*_`\(\[\"']*+"
    r"(?:[ABC](?![A-Za-z0-9])|(?i:successful|success|failed|failure|partial))",
)
#: The letter A followed by prose is the article ("A dialog opened…"), not a verdict — unless the
#: word is the verdict's own ("A successful", "A partially successful").
_ARTICLE = re.compile(r"^[ \t]+(?!(?i:successful|success|succeeded|partial))[A-Za-z]")


class ReflectorInputs(BaseModel):
    """Everything ``reflector.j2`` renders."""

    task: str
    device_word: str = "phone"
    subgoal: str = ""
    completed: list[str] = Field(default_factory=list)
    screen_note: str
    action: str
    description: str = ""
    device_report: str = ""
    observation: str = Field("screenshot", description="screenshot | ui_tree | both")
    ui_tree_before: str = Field("", description="the UI tree before the action (ui_tree/both modes)")
    ui_tree_after: str = Field("", description="the UI tree after the action (ui_tree/both modes)")


def parse_reflector(text: str) -> ReflectorOutput:
    """Parse a Reflector reply.

    >>> parse_reflector("### Outcome ###\\nB: Failed.\\n### Error Description ###\\nOpened Clock").outcome
    <Outcome.B: 'B'>
    >>> parse_reflector("### Outcome ###\\nC\\n### Error Description ###\\nNone").error_description
    ''
    """
    sections = split_sections(text, _HEADINGS)
    if "outcome" not in sections:
        raise ParseError(
            "the reply has no '### Outcome ###' section", hint="answer with A, B or C under ### Outcome ###"
        )
    body = sections["outcome"]
    m = _LEADING_VERDICT.match(body)
    if m:
        outcome = Outcome((m.group("letter") or m.group("lower")).upper())
        rest = body[m.end() :]
        if outcome is Outcome.A and _ARTICLE.match(rest):
            raise ParseError(
                f"the Outcome section starts with prose, not a verdict: {body[:80]!r}",
                hint="start the Outcome section with the letter A, B or C alone, e.g. 'A: Successful'",
            )
    else:
        w = _WORD_VERDICT.match(body)
        if w is None:
            raise ParseError(
                f"the Outcome section does not start with A, B or C: {body[:80]!r}",
                hint="start the Outcome section with the letter A, B or C",
            )
        rest = body[w.end() :]
        # "Failed" alone cannot tell B from C; C (no change) is the conservative reading.
        outcome = Outcome.A if w.group("word").lower().startswith("success") else Outcome.C
    if _ALTERNATIVE.match(rest):
        raise ParseError(
            f"the Outcome section names more than one verdict: {body[:80]!r}",
            hint="choose one: write only A, B or C under ### Outcome ###",
        )
    error = sections.get("error description", "")
    error = "" if is_none(error) else error.strip()
    if outcome is not Outcome.A and not error:
        rest = body[m.end() if m else 0 :].lstrip(" .:-*)]\n").strip()
        error = rest
    return ReflectorOutput(outcome=outcome, error_description=error)
