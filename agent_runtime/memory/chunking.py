"""Split Markdown and plain-text documents into retrieval chunks.

Chunks follow the document's own structure: a Markdown heading starts a new section, and each
chunk starts with the heading path it belongs to (``Clock > Alarms``) so that a chunk about
"tap the + button" still says *which* app and screen it is about. Sections longer than the
budget are packed paragraph by paragraph; consecutive chunks of one section share an overlap
(the tail of the previous chunk), so a step list cut in two keeps its context on both sides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Target chunk size: a few paragraphs, well under MiniLM's 256-token window.
MAX_CHARS = 900
#: Characters of the previous chunk repeated at the start of the next one in the same section.
OVERLAP_CHARS = 150

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    heading: str


def _sections(text: str) -> list[tuple[str, str]]:
    """``(heading path, body)`` pairs in document order; fenced code never counts as a heading."""
    path: list[tuple[int, str]] = []
    sections: list[tuple[str, str]] = []
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        joined = "\n".join(body).strip()
        if joined:
            sections.append((" > ".join(title for _, title in path), joined))
        body.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match.group(2))]
        else:
            body.append(line)
    flush()
    if not sections and path:  # headings only: keep them as content rather than dropping the file
        sections.append(("", "\n".join(title for _, title in path)))
    return sections


def _split_long(paragraph: str, limit: int) -> list[str]:
    """Cut an over-long paragraph at sentence ends, else at spaces, else hard."""
    pieces: list[str] = []
    rest = paragraph
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind(". "), window.rfind("\n"))
        if cut < limit // 2:
            cut = window.rfind(" ")
        if cut < limit // 2:
            cut = limit - 1
        pieces.append(rest[: cut + 1].strip())
        rest = rest[cut + 1 :].strip()
    if rest:
        pieces.append(rest)
    return pieces


def _tail(text: str, size: int) -> str:
    """The last ``size`` characters, starting at a word boundary."""
    if len(text) <= size:
        return text
    tail = text[-size:]
    space = tail.find(" ")
    return tail[space + 1 :] if 0 <= space < size // 2 else tail


def chunk_text(text: str, max_chars: int = MAX_CHARS, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    """Chunks of at most about ``max_chars`` characters (plus the heading line)."""
    if overlap >= max_chars:
        raise ValueError("overlap must be smaller than max_chars")
    chunks: list[Chunk] = []
    for heading, body in _sections(text.replace("\r\n", "\n")):
        paragraphs: list[str] = []
        for para in re.split(r"\n\s*\n", body):
            para = para.strip()
            if para:
                paragraphs.extend(_split_long(para, max_chars - overlap))
        current = ""
        for para in paragraphs:
            if current and len(current) + 2 + len(para) > max_chars:
                chunks.append(_make(len(chunks), heading, current))
                current = _tail(current, overlap) + "\n\n" + para
            else:
                current = f"{current}\n\n{para}" if current else para
        if current:
            chunks.append(_make(len(chunks), heading, current))
    return chunks


def _make(index: int, heading: str, body: str) -> Chunk:
    text = f"{heading}\n{body}" if heading else body
    return Chunk(index=index, text=text, heading=heading)
