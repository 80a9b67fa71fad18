"""The ``shell,v2`` service: adb's shell protocol, with separate stdout/stderr, stdin and exit codes.

Every message either side sends is a packet: an id byte, a 4-byte little-endian length, then the
data. The client sends ``STDIN`` data, ``CLOSE_STDIN`` at the end of its input, and
``WINDOW_SIZE`` changes (ignored: SimPhone's shell has no terminal); SimPhone answers ``STDOUT``
and ``STDERR`` data and one ``EXIT`` packet (one byte: the status), then closes the stream.

Service options (``shell,v2,TERM=xterm-256color,raw:CMD``) pick the mode:

* a command, ``raw`` (what ``adb shell CMD`` sends when the output is not a terminal, or with
  ``-T``): run it; the client's stdin reaches the first command that reads stdin (``cat``).
* no command, ``raw`` (``printf 'echo hi\\n' | adb shell``): a non-interactive ``sh`` reading lines
  from stdin, ending at ``exit`` or at close-stdin — so piped scripts always return.
* ``pty`` (``adb shell`` at a terminal, ``-t``): the prompt-and-echo session of
  :mod:`.interactive`, or the command's output with a terminal's ``\\r\\n`` line ends.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import time

from agent_runtime.simphone.adb.context import SH, ShellResult
from agent_runtime.simphone.adb.interactive import run_interactive
from agent_runtime.simphone.adb.shell import AndroidShell
from agent_runtime.simphone.adb.wire import ProtocolError, recv_exact

log = logging.getLogger(__name__)

STDIN, STDOUT, STDERR, EXIT, CLOSE_STDIN, WINDOW_SIZE = range(6)
#: The largest packet a client may send (adb's own buffers are far smaller).
MAX_PACKET = 1024 * 1024
#: How long to wait for the client to hang up after the exit packet.
LINGER_S = 2.0


def packet(kind: int, data: bytes = b"") -> bytes:
    """One shell-protocol packet.

    >>> packet(EXIT, bytes([1]))
    b'\\x03\\x01\\x00\\x00\\x00\\x01'
    """
    return bytes([kind]) + struct.pack("<I", len(data)) + data


class ClientStdin:
    """The client's stdin packets, read on demand, up to close-stdin (or the client hanging up)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.closed = False

    def next_data(self) -> bytes | None:
        """The next chunk of stdin, or None once stdin is closed."""
        while not self.closed:
            header = recv_exact(self._sock, 5)
            if header is None:
                self.closed = True
                break
            kind, length = header[0], struct.unpack("<I", header[1:])[0]
            if length > MAX_PACKET:
                raise ProtocolError(f"shell packet of {length} bytes")
            data = recv_exact(self._sock, length) if length else b""
            if data is None:
                raise ProtocolError("connection closed inside a shell packet")
            if kind == CLOSE_STDIN:
                self.closed = True
            elif kind == STDIN and data:
                return data
        return None

    def read_all(self) -> bytes:
        """Everything left until close-stdin (what ``cat`` with no file reads)."""
        data = bytearray()
        while (chunk := self.next_data()) is not None:
            data += chunk
        return bytes(data)


class _Stream:
    """Sends a session's output as STDOUT/STDERR packets (a PTY merges both into STDOUT)."""

    def __init__(self, sock: socket.socket, pty: bool) -> None:
        self.sock = sock
        self.pty = pty

    def result(self, result: ShellResult) -> None:
        out = bytearray()
        for fd, data in result.chunks:
            if self.pty:
                out += packet(STDOUT, data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
            else:
                out += packet(STDOUT if fd == 1 else STDERR, data)
        if out:
            self.sock.sendall(bytes(out))

    def stdout(self, data: bytes) -> None:
        if data:
            self.sock.sendall(packet(STDOUT, data))


def _run(shell: AndroidShell, line: str, stdin: ClientStdin | None, status: int) -> ShellResult:
    try:
        return shell.run(line, stdin=stdin, status=status)
    except Exception as exc:  # a bug must reach the client as text and a failed status
        log.exception("shell command %r failed", line)
        message = f"{SH}: internal error: {type(exc).__name__}: {exc}\n".encode()
        return ShellResult(message, 1, ((2, message),))


def _script(shell: AndroidShell, stdin: ClientStdin, stream: _Stream) -> int:
    """``sh`` reading lines from stdin: run each complete line; the last partial one at close-stdin."""
    pending = bytearray()
    status = 0
    while True:
        chunk = stdin.next_data()
        if chunk is None:
            lines, pending = [bytes(pending)] if pending.strip() else [], bytearray()
        else:
            pending += chunk
            *complete, rest = bytes(pending).split(b"\n")
            lines, pending = complete, bytearray(rest)
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            if not line.strip():
                continue
            result = _run(shell, line, None, status)
            status = result.status
            stream.result(result)
            if result.exited:
                return status
        if chunk is None:
            return status


def serve_shell_v2(sock: socket.socket, shell: AndroidShell, options: list[str], command: str) -> None:
    """Run one ``shell,v2`` service to its exit packet, then close the stream as adbd does."""
    pty = "pty" in options or ("raw" not in options and not command)
    stdin = ClientStdin(sock)
    stream = _Stream(sock, pty)
    if command:
        result = _run(shell, command, stdin, 0)
        stream.result(result)
        status = result.status
    elif pty:
        status = run_interactive(shell, stdin.next_data, stream.stdout)
    else:
        status = _script(shell, stdin, stream)
    sock.sendall(packet(EXIT, bytes([status & 0xFF])))
    _linger(sock)


def _linger(sock: socket.socket) -> None:
    """Half-close and drain until the client hangs up, so unread stdin never turns the close into a
    reset that could drop the exit packet on its way."""
    deadline = time.monotonic() + LINGER_S
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                break
