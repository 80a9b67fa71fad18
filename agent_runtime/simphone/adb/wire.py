"""Framing of the adb host protocol ("smart sockets"): 4-hex-digit length prefixes, OKAY/FAIL."""

from __future__ import annotations

import socket

OKAY = b"OKAY"
FAIL = b"FAIL"
#: The adb server protocol version we speak (adb 1.0.41); clients restart a server that differs.
ADB_SERVER_VERSION = 41


class ProtocolError(Exception):
    """The client sent something that is not the adb protocol; the connection is dropped."""


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """Exactly ``n`` bytes, or None if the peer closed before sending any; ProtocolError if cut short."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            if chunks:
                raise ProtocolError(f"connection closed after {len(chunks)} of {n} bytes")
            return None
        chunks += chunk
    return bytes(chunks)


def read_request(sock: socket.socket) -> str | None:
    """One request (4 hex digits of length, then the payload), or None when the client hung up."""
    header = recv_exact(sock, 4)
    if header is None:
        return None
    try:
        length = int(header, 16)
    except ValueError:
        raise ProtocolError(f"bad request length {header!r}") from None
    payload = recv_exact(sock, length) if length else b""
    if payload is None:
        raise ProtocolError("connection closed inside a request")
    return payload.decode("utf-8", "replace")


def block(data: str | bytes) -> bytes:
    """A length-prefixed payload, as ``host:version`` and ``host:devices`` answer."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return f"{len(raw):04x}".encode() + raw


def okay_block(data: str | bytes) -> bytes:
    return OKAY + block(data)


def fail(message: str) -> bytes:
    return FAIL + block(message)
