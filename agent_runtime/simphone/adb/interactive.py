"""``adb shell`` with no command: a prompt and the line discipline a PTY would give.

The client's terminal is in raw mode, so the server echoes keystrokes, handles backspace,
Ctrl-C and Ctrl-D, ignores cursor-key escape sequences, and turns ``\\n`` into ``\\r\\n`` in output.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from agent_runtime.simphone.adb.shell import AndroidShell

_BACKSPACE = (0x08, 0x7F)
_CTRL_C, _CTRL_D, _ESC = 0x03, 0x04, 0x1B


class _LineEditor:
    """Collects one line; ``feed`` returns the echo for a byte and, on Enter, the finished line."""

    def __init__(self) -> None:
        self.line = bytearray()
        self._escape = ""  # "", "esc" after ESC, "seq" inside ESC [ … / ESC O …
        self._last_cr = False

    def feed(self, byte: int) -> tuple[bytes, str | None]:
        if self._escape == "esc":
            self._escape = "seq" if byte in b"[O" else ""
            return b"", None
        if self._escape == "seq":
            if 0x40 <= byte <= 0x7E:  # the final byte of a cursor-key sequence
                self._escape = ""
            return b"", None
        if byte == _ESC:
            self._escape = "esc"
            return b"", None
        if byte == 0x0A and self._last_cr:
            self._last_cr = False
            return b"", None
        self._last_cr = byte == 0x0D
        if byte in (0x0A, 0x0D):
            text = self.line.decode("utf-8", "replace")
            self.line.clear()
            return b"\r\n", text
        if byte in _BACKSPACE:
            if not self.line:
                return b"", None
            del self.line[-1]
            while self.line and (self.line[-1] & 0xC0) == 0x80:  # drop a whole UTF-8 character
                del self.line[-1]
            return b"\b \b", None
        if byte >= 0x20 or byte == 0x09:
            self.line.append(byte)
            return bytes([byte]), None
        return b"", None


def run_interactive(
    shell: AndroidShell, recv: Callable[[], bytes | None], send: Callable[[bytes], None]
) -> int:
    """A prompt-and-echo session over any byte stream; returns ``$?`` of the last line it ran.

    It ends on ``exit``, Ctrl-D on an empty line, or when ``recv`` returns None (the client hung up).
    """
    prompt = f"{shell.props['ro.product.device']}:/ $ ".encode()
    editor = _LineEditor()
    status = 0
    send(prompt)
    while data := recv():
        reply = bytearray()
        for byte in data:
            if byte == _CTRL_C:
                editor.line.clear()
                reply += b"^C\r\n" + prompt
                continue
            if byte == _CTRL_D and not editor.line:
                send(bytes(reply))
                return status
            echo, line = editor.feed(byte)
            reply += echo
            if line is None:
                continue
            if line.strip():
                result = shell.run(line, status=status)
                status = result.status
                reply += result.output.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                if result.exited:
                    send(bytes(reply))
                    return status
            reply += prompt
        send(bytes(reply))
    return status


def serve_interactive(sock: socket.socket, shell: AndroidShell) -> None:
    """``shell:`` with no command (adb shell v1): run a session on the raw socket."""
    run_interactive(shell, lambda: sock.recv(4096) or None, sock.sendall)
