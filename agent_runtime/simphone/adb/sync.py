"""The ``sync:`` service: STAT, LIST, RECV, SEND and QUIT on the phone's virtual file system.

Requests are an ID and a little-endian length, then that many bytes of path. We advertise no
``stat_v2``/``ls_v2``/``sendrecv_v2`` feature, so clients use these v1 forms. ``SEND`` creates
missing parent folders (the ``fixed_push_mkdir`` feature).
"""

from __future__ import annotations

import socket
import struct

from agent_runtime.simphone.adb.fs import FsError
from agent_runtime.simphone.adb.shell import AndroidShell
from agent_runtime.simphone.adb.wire import OKAY, ProtocolError, recv_exact

#: SYNC_DATA_MAX: the largest DATA chunk either side may send.
CHUNK = 64 * 1024


def _fail(message: str) -> bytes:
    raw = message.encode("utf-8")
    return b"FAIL" + struct.pack("<I", len(raw)) + raw


def _receive_file(sock: socket.socket) -> bytes:
    """Read DATA chunks until DONE (whose length field is the mtime)."""
    data = bytearray()
    while True:
        header = recv_exact(sock, 8)
        if header is None:
            raise ProtocolError("connection closed during SEND")
        kind, length = header[:4], struct.unpack("<I", header[4:])[0]
        if kind == b"DONE":
            return bytes(data)
        if kind != b"DATA" or length > CHUNK:
            raise ProtocolError(f"bad SEND chunk {kind!r} ({length} bytes)")
        chunk = recv_exact(sock, length) if length else b""
        if chunk is None:
            raise ProtocolError("connection closed inside a DATA chunk")
        data += chunk


def serve_sync(sock: socket.socket, shell: AndroidShell) -> None:
    """Answer sync requests until QUIT or the client closes the connection."""
    fs, lock = shell.fs, shell.phone.lock
    sock.sendall(OKAY)
    while True:
        header = recv_exact(sock, 8)
        if header is None:
            return
        kind, length = header[:4], struct.unpack("<I", header[4:])[0]
        if kind == b"QUIT":
            return
        raw_path = recv_exact(sock, length) if length else b""
        if raw_path is None:
            raise ProtocolError("connection closed inside a sync request")
        path = raw_path.decode("utf-8", "replace")
        if kind == b"STAT":
            with lock:
                node = fs.stat(path)
            fields = (node.mode, node.size, node.mtime) if node is not None else (0, 0, 0)
            sock.sendall(b"STAT" + struct.pack("<III", *fields))
        elif kind == b"LIST":
            with lock:
                try:
                    entries = fs.listdir(path) if fs.is_dir(path) else []
                except FsError:
                    entries = []
            reply = bytearray()
            for name, node in entries:
                encoded = name.encode("utf-8")
                reply += (
                    b"DENT" + struct.pack("<IIII", node.mode, node.size, node.mtime, len(encoded)) + encoded
                )
            sock.sendall(bytes(reply) + b"DONE" + bytes(16))
        elif kind == b"RECV":
            with lock:
                try:
                    data = fs.read(path)
                except FsError as exc:
                    sock.sendall(_fail(str(exc)))
                    continue
            reply = bytearray()
            for start in range(0, len(data), CHUNK):
                chunk = data[start : start + CHUNK]
                reply += b"DATA" + struct.pack("<I", len(chunk)) + chunk
            sock.sendall(bytes(reply) + b"DONE" + bytes(4))
        elif kind == b"SEND":
            target, _, mode_text = path.rpartition(",")
            if not target:
                target, mode_text = path, "420"
            data = _receive_file(sock)
            try:
                mode = int(mode_text) & 0o7777
            except ValueError:
                mode = 0o644
            with lock:
                try:
                    fs.write(target, data, mode=mode, parents=True)
                except FsError as exc:
                    sock.sendall(_fail(f"couldn't create file: {exc}"))
                    continue
            sock.sendall(OKAY + bytes(4))
        else:
            sock.sendall(_fail(f"unknown sync request {kind!r}"))
            return
