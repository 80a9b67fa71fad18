"""Document chunking: headings give structure, long sections are packed with overlap."""

import pytest

from agent_runtime.memory.chunking import chunk_text

DOC = """\
# Clock

Intro about the clock app.

## Alarms

Tap the Alarm tab.

Tap + and pick a time.

```
# not a heading inside code
```

## Stopwatch
Tap Start.
"""


def test_headings_start_chunks_and_prefix_their_path():
    chunks = chunk_text(DOC)
    assert [c.heading for c in chunks] == ["Clock", "Clock > Alarms", "Clock > Stopwatch"]
    assert chunks[1].text.startswith("Clock > Alarms\n")
    assert "Tap + and pick a time." in chunks[1].text
    assert "# not a heading inside code" in chunks[1].text
    assert [c.index for c in chunks] == [0, 1, 2]


def test_deeper_heading_resets_siblings():
    chunks = chunk_text("# A\n## B\nb text\n### C\nc text\n## D\nd text\n")
    assert [c.heading for c in chunks] == ["A > B", "A > B > C", "A > D"]


def test_long_sections_are_packed_with_overlap_and_bounded():
    paragraphs = [f"Paragraph {n} " + " ".join(f"word{n}x{i}" for i in range(30)) for n in range(12)]
    chunks = chunk_text("# Guide\n\n" + "\n\n".join(paragraphs), max_chars=600, overlap=100)
    assert len(chunks) > 3
    for c in chunks:
        body = c.text.split("\n", 1)[1]
        assert len(body) <= 600 + 2
    # every paragraph survives somewhere, and consecutive chunks share text
    joined = "\n".join(c.text for c in chunks)
    for p in paragraphs:
        assert p in joined
    for a, b in zip(chunks, chunks[1:], strict=False):
        tail_words = a.text.split()[-3:]
        assert " ".join(tail_words) in b.text


def test_a_single_huge_paragraph_is_cut():
    text = "x" * 5000
    chunks = chunk_text(text, max_chars=1000, overlap=100)
    assert all(len(c.text) <= 1002 for c in chunks)
    assert sum(c.text.count("x") for c in chunks) >= 5000


def test_plain_text_without_headings_and_empty_input():
    chunks = chunk_text("just one line of notes")
    assert len(chunks) == 1 and chunks[0].heading == "" and chunks[0].text == "just one line of notes"
    assert chunk_text("") == []
    assert chunk_text("\n\n  \n") == []


def test_overlap_must_be_smaller_than_size():
    with pytest.raises(ValueError):
        chunk_text("abc", max_chars=100, overlap=100)
