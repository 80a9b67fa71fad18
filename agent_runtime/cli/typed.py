"""What a person types at ``agent-runtime run``'s prompts: one line of stdin, bounded and decoded
tolerantly, so no input can crash a run waiting for it.

A terminal, a pipe or a paste can hand over anything: bytes that are not UTF-8, a line of many
megabytes, a line cut inside a multi-byte character (a pipe closed mid-write, a cap reached).
The line is read as bytes, at most :data:`MAX_LINE_BYTES` of it kept (the rest of the line is
read and dropped, never held); invalid bytes become U+FFFD; a torn multi-byte tail, or more than
:data:`~agent_runtime.control.MAX_REPLY_CHARS` characters, makes the line :attr:`TypedLine.refused`
— the prompt says why and asks again, and the trace keeps a bounded prefix of it.
"""

from __future__ import annotations

import codecs
import sys
from dataclasses import dataclass
from typing import BinaryIO

from agent_runtime.control import MAX_REPLY_CHARS, cut_for_trace

#: The most bytes of one typed line that are kept (1 MiB); the rest of the line is dropped.
MAX_LINE_BYTES = 1 << 20
_CHUNK = 1 << 16


@dataclass(frozen=True)
class TypedLine:
    """One line the person typed: its text, or why it is refused (with what the trace keeps)."""

    text: str
    refused: str = ""
    kept: str = ""


def read_line(stream: BinaryIO | None = None) -> TypedLine | None:
    """The next line of ``stream`` (stdin's bytes by default), without its newline; None at the
    end of input — also when there is no stdin, or it is closed or gone (a terminal hung up)."""
    if stream is None:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            return None
    dropped = 0
    try:
        data = stream.readline(MAX_LINE_BYTES + 1)
        if not data:
            return None
        if len(data) > MAX_LINE_BYTES and not data.endswith(b"\n"):
            while True:  # the rest of an overlong line: read and dropped, a chunk at a time
                rest = stream.readline(_CHUNK)
                dropped += len(rest)
                if not rest or rest.endswith(b"\n"):
                    break
            data = data[:MAX_LINE_BYTES]
    except (OSError, ValueError):  # EIO from a vanished terminal; a closed stream
        return None
    return decode_line(data.removesuffix(b"\n").removesuffix(b"\r"), dropped)


def decode_line(data: bytes, dropped: int = 0) -> TypedLine:
    """``data`` (one line, no newline) as text: invalid bytes replaced by U+FFFD; refused when it
    ends inside a multi-byte character, is over the byte cap (``dropped`` bytes were not kept) or
    over :data:`~agent_runtime.control.MAX_REPLY_CHARS` characters.

    >>> decode_line("café".encode()[:-1]).refused
    'it ends inside a multi-byte character (the input was cut)'
    >>> decode_line(b"caf\\xff ok").text
    'caf\\ufffd ok'
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data, final=False)
    torn = decoder.getstate()[0]
    if dropped:
        why = f"{len(data) + dropped:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
    elif torn:
        why = "it ends inside a multi-byte character (the input was cut)"
    elif len(text) > MAX_REPLY_CHARS:
        why = f"{len(text):,} characters, over the {MAX_REPLY_CHARS:,}-character limit"
    else:
        return TypedLine(text)
    return TypedLine(text, refused=why, kept=cut_for_trace(text, why))
