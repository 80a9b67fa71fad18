"""Split a model reply into its named sections, tolerating the ways models write headings.

Mobile-Agent-v3 replies are ``### Heading ###`` blocks. Real models also write ``## Heading``,
``**Heading**``, ``Heading:`` (content on the same line), any letter case, and wrap the whole reply
in a code fence. Only the headings a role expects are recognised, so prose that happens to start
with a common word is never mistaken for a heading: a line counts as a heading when it carries
heading markup (``#`` or ``**``), ends the name with a colon, or holds the name alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_FENCED_REPLY = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


def readable(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD.

    A decoder that lets one through (``"\\ud800"`` in a JSON reply) would otherwise put a
    string in a parsed output that no trace can encode as UTF-8.
    """
    return _SURROGATE.sub("\ufffd", text)


def _heading_pattern(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = "|".join(
        sorted((re.escape(n).replace(r"\ ", r"[\s_-]*") for n in names), key=len, reverse=True)
    )
    # group "marks": leading '#'/'**'; group "name"; then either closing markup, a colon, or end of line.
    # The blanks before the name are possessive (``*+``): a name never starts with a blank, and
    # backtracking through three runs of them made a line of 2,000 spaces take minutes.
    return re.compile(
        rf"^[ \t]*+(?P<marks>(?:\#{{1,6}}|\*\*|__)?)[ \t]*+(?:\*\*)?[ \t]*+(?P<name>{alternatives})[ \t]*"
        rf"(?P<tail>(?:\*\*|__)?[ \t]*\#*[ \t]*(?:\*\*)?[ \t]*:?[ \t]*(?:\*\*)?)",
        re.IGNORECASE | re.MULTILINE,
    )


def _canonical(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.strip().lower())


def split_sections(text: str, names: Iterable[str]) -> dict[str, str]:
    """Return ``{canonical name: content}`` for each recognised heading; the first non-empty
    occurrence of a heading wins.

    ``names`` are the headings a role expects, e.g. ``("Thought", "Action", "Description")``.
    Canonical names are lower-case with single spaces. Content is stripped of surrounding
    blank lines and a wrapping code fence is removed first.

    >>> split_sections("## thought\\nhmm\\nPlan: 1. open", ["Thought", "Plan"])
    {'thought': 'hmm', 'plan': '1. open'}
    """
    text = readable(text)
    fenced = _FENCED_REPLY.match(text)
    if fenced:
        text = fenced.group(1)
    wanted = {_canonical(n) for n in names}
    pattern = _heading_pattern(names)
    hits: list[tuple[int, int, str]] = []
    for m in pattern.finditer(text):
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end == -1 else line_end
        rest_of_line = text[m.end() : line_end].strip()
        marked = bool(m.group("marks")) or any(c in m.group("tail") for c in "#*_")
        colon = ":" in m.group("tail")
        # Heading markup or a colon make it a heading; a bare name must stand alone on its line.
        if not (marked or colon or not rest_of_line):
            continue
        # A marked heading with trailing prose and no colon ("## Plan the trip") is not ours.
        if marked and not colon and rest_of_line and not m.group("tail").strip():
            continue
        name = _canonical(m.group("name"))
        if name in wanted:
            hits.append((m.start(), m.end(), name))
    sections: dict[str, str] = {}
    for i, (_, end, name) in enumerate(hits):
        stop = hits[i + 1][0] if i + 1 < len(hits) else len(text)
        content = text[end:stop].strip("\n").strip()
        if not sections.get(name):  # first non-empty occurrence wins ("### Outcome ###\nOutcome: A")
            sections[name] = content
    return sections


def strip_markup(text: str) -> str:
    """Remove leading list/quote/emphasis markup a model puts around a short value."""
    return text.strip().strip("*_`>\"' \t").strip()


def is_none(text: str) -> bool:
    """True for the ways models say "nothing here": ``None``, ``N/A``, ``-``, empty."""
    return strip_markup(text).rstrip(".").lower() in {"", "none", "n/a", "na", "null", "-", "nothing", "no"}
