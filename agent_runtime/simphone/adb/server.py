"""``AdbServer``: SimPhones behind the adb host protocol, for unmodified adb clients.

Clients (adbutils, the ``adb`` binary) talk to it as to ``adb start-server`` on port 5037:
``host:version``, ``host:devices[-l]``, ``host:features``, transport selection (``host:transport:*``,
``host:tport:*`` which answers an 8-byte transport id), then one device service per connection —
``shell:``/``exec:`` (:class:`~.shell.AndroidShell`) or ``sync:`` (:mod:`.sync`). Every
connection is served by its own thread; commands hold the phone's lock.

The feature list has ``shell_v2``: the ``adb`` binary then runs commands over ``shell,v2``
(:mod:`.shellv2`: exit codes, stdin, separate stderr), while clients that send ``shell:`` (adbutils,
most agent frameworks) keep the plain stream. It leaves out the ``*_v2`` sync features (clients use
the v1 sync requests) and ``cmd``/``abb`` (``adb install`` pushes the file and runs ``pm install``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import socketserver
import struct
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

from agent_runtime.errors import ConfigError, DeviceError
from agent_runtime.simphone.adb.context import SH
from agent_runtime.simphone.adb.interactive import serve_interactive
from agent_runtime.simphone.adb.shell import AndroidShell
from agent_runtime.simphone.adb.shellv2 import serve_shell_v2
from agent_runtime.simphone.adb.sync import serve_sync
from agent_runtime.simphone.adb.wire import (
    ADB_SERVER_VERSION,
    OKAY,
    ProtocolError,
    fail,
    okay_block,
    read_request,
)

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

log = logging.getLogger(__name__)

#: How often the accept loop checks for stop(): bounds how long stop() takes.
POLL_S = 0.05
#: What ``features`` answers: shell_v2, without stat_v2 / ls_v2 / cmd / abb.
FEATURES = "shell_v2,fixed_push_mkdir,fixed_push_symlink_timestamp,apex,remount_shell,track_app"
_QUALIFIED = re.compile(
    r"(?:host-serial:(?P<serial>.+?)|host-transport-id:(?P<tid>\d+)|(?P<kind>host-local|host-usb|host)):"
    r"(?P<query>features|get-state|get-serialno|get-devpath|list-forward|killforward-all"
    r"|wait-for-[a-z]+-[a-z]+)$"
)


class _Refused(Exception):
    """A request the server answers with FAIL + this message."""


class AdbServer:
    """Serve ``phones`` over the adb host protocol on ``host:port`` (``port=0``: an ephemeral port).

    Each phone keeps one :class:`AndroidShell` (files, settings, IMEs) across servers, as a phone
    keeps its files when adb restarts. ``adb_keyboard=False`` serves the phones with ADB Keyboard
    uninstalled.
    Use as a context manager, or ``start()``/``stop()``; ``serve_forever()`` blocks (for the CLI).
    """

    def __init__(
        self,
        phones: Sequence[SimPhone],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        adb_keyboard: bool = True,
    ) -> None:
        serials = [p.serial for p in phones]
        duplicates = sorted({s for s in serials if serials.count(s) > 1})
        if duplicates:
            raise ConfigError(
                f"two phones share the serial {duplicates[0]!r}", hint="give each phone its own serial"
            )
        #: serial -> the phone's shell (one per phone: it outlives this server, like files on a phone).
        self.shells = {p.serial: AndroidShell.of(p, adb_keyboard=adb_keyboard) for p in phones}
        self._transport_ids = {serial: index + 1 for index, serial in enumerate(self.shells)}
        self.host = host
        self._requested_port = port
        self._tcp: _TCPServer | None = None
        self._thread: threading.Thread | None = None
        self._serving = False
        self._stopped = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def _bind(self) -> _TCPServer:
        if self._tcp is None:
            try:
                self._tcp = _TCPServer((self.host, self._requested_port), self)
            except OSError as exc:
                raise DeviceError(
                    f"cannot listen on {self.host}:{self._requested_port}: {exc.strerror or exc}",
                    hint="another adb server (or simphone serve) uses that port: pick another with --port "
                    "or stop it (adb kill-server)",
                ) from None
        return self._tcp

    @property
    def port(self) -> int:
        """The port clients connect to (known once started)."""
        return self._bind().server_address[1]

    def start(self) -> Self:
        """Serve in a daemon thread and return at once."""
        tcp = self._bind()
        if self._thread is None:
            self._serving = True
            self._thread = threading.Thread(
                target=tcp.serve_forever, args=(POLL_S,), name=f"adb-server:{self.port}", daemon=True
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` (or a client's ``adb kill-server``)."""
        tcp = self._bind()
        self._serving = True
        tcp.serve_forever(POLL_S)

    def stop(self) -> None:
        """Stop accepting, drop open connections, release the port. Safe to call twice."""
        if self._stopped.is_set() or self._tcp is None:
            return
        self._stopped.set()
        if self._serving:
            self._tcp.shutdown()
        self._tcp.close_connections()
        self._tcp.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- host services -----------------------------------------------------------------------
    def devices_text(self, long: bool) -> str:
        lines = []
        for serial, shell in self.shells.items():
            if long:
                p = shell.props
                lines.append(
                    f"{serial:<22}device product:{p['ro.product.name']} model:{p['ro.product.model']} "
                    f"device:{p['ro.product.device']} transport_id:{self._transport_ids[serial]}"
                )
            else:
                lines.append(f"{serial}\tdevice")
        return "".join(line + "\n" for line in lines)

    def select(self, spec: str) -> AndroidShell:
        """The phone a transport spec names: ``any``, ``local``, ``usb``, ``id:N`` or a serial."""
        if spec in ("any", "local"):
            if not self.shells:
                raise _Refused("no devices/emulators found")
            if len(self.shells) > 1:
                raise _Refused("more than one device/emulator")
            return next(iter(self.shells.values()))
        if spec == "usb":
            raise _Refused("no devices found")
        if spec.startswith("id:"):
            for serial, tid in self._transport_ids.items():
                if str(tid) == spec[3:]:
                    return self.shells[serial]
            raise _Refused(f"no device with transport id '{spec[3:]}'")
        if spec not in self.shells:
            raise _Refused(f"device '{spec}' not found")
        return self.shells[spec]

    def transport_id(self, shell: AndroidShell) -> int:
        return self._transport_ids[shell.serial]


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], owner: AdbServer) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def track(self, sock: socket.socket, alive: bool) -> None:
        with self._open_lock:
            (self._open.add if alive else self._open.discard)(sock)

    def close_connections(self) -> None:
        with self._open_lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):  # already closed by the client
                    sock.shutdown(socket.SHUT_RDWR)


class _Handler(socketserver.BaseRequestHandler):
    """One client connection: host requests until a transport is chosen, then one device service."""

    request: socket.socket
    server: _TCPServer

    def handle(self) -> None:
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(sock, True)
        try:
            self._serve(sock)
        except (ProtocolError, ConnectionError, TimeoutError) as exc:
            log.debug("adb connection dropped: %s", exc)
        except OSError as exc:
            log.debug("adb connection error: %s", exc)
        finally:
            self.server.track(sock, False)

    def _serve(self, sock: socket.socket) -> None:
        owner = self.server.owner
        shell: AndroidShell | None = None
        while True:
            request = read_request(sock)
            if request is None:
                return
            log.debug("adb request %r", request)
            try:
                if shell is None:
                    shell = self._host(sock, owner, request)
                    if shell is None:  # a host query is answered and the connection closed, as adb does
                        return
                else:
                    self._device(sock, shell, request)
                    return
            except _Refused as exc:
                sock.sendall(fail(str(exc)))
                return

    def _host(self, sock: socket.socket, owner: AdbServer, request: str) -> AndroidShell | None:
        """Answer a host request; return the phone if it selected a transport."""
        if request == "host:version":
            sock.sendall(okay_block(f"{ADB_SERVER_VERSION:04x}"))
        elif request in ("host:devices", "host:devices-l"):
            sock.sendall(okay_block(owner.devices_text(request.endswith("-l"))))
        elif request in ("host:track-devices", "host:track-devices-l"):
            sock.sendall(okay_block(owner.devices_text(request.endswith("-l"))))
            while sock.recv(1024):  # the device list never changes: hold the line until the client hangs up
                continue
        elif request == "host:kill":
            sock.sendall(OKAY)
            threading.Thread(target=owner.stop, name="adb-server-kill", daemon=True).start()
        elif request == "host:host-features":  # the server's own features: no device involved
            sock.sendall(okay_block(FEATURES))
        elif request in ("host:list-forward", "host:reverse-list-forward"):
            sock.sendall(okay_block(""))
        elif request.startswith("host:transport"):
            spec = request.removeprefix("host:transport").lstrip(":-")
            shell = owner.select(spec)
            sock.sendall(OKAY)
            return shell
        elif request.startswith("host:tport:"):
            spec = request.removeprefix("host:tport:")
            shell = owner.select(spec.removeprefix("serial:"))
            sock.sendall(OKAY + struct.pack("<Q", owner.transport_id(shell)))
            return shell
        elif match := _QUALIFIED.match(request):
            self._qualified(sock, owner, match)
        else:
            log.warning("unsupported adb host service %r", request)
            raise _Refused(f"unknown host service '{request}'")
        return None

    def _qualified(self, sock: socket.socket, owner: AdbServer, match: re.Match[str]) -> None:
        """``host-serial:S:QUERY`` and friends: a question about one device, answered by the server."""
        if match["serial"]:
            shell = owner.select(match["serial"])
        elif match["tid"]:
            shell = owner.select(f"id:{match['tid']}")
        else:
            shell = owner.select("usb" if match["kind"] == "host-usb" else "any")
        query = match["query"]
        if query == "features":
            sock.sendall(okay_block(FEATURES))
        elif query == "get-state":
            sock.sendall(okay_block("device"))
        elif query == "get-serialno":
            sock.sendall(okay_block(shell.serial))
        elif query == "get-devpath":
            sock.sendall(okay_block(f"emulator:{shell.serial}"))
        elif query == "list-forward":  # SimPhone forwards no ports
            sock.sendall(okay_block(""))
        elif query == "killforward-all":
            sock.sendall(OKAY + OKAY)
        else:  # wait-for-*: every phone is always ready
            sock.sendall(OKAY + OKAY)

    def _device(self, sock: socket.socket, shell: AndroidShell, request: str) -> None:
        """A device service on a chosen transport; it owns the connection until it closes."""
        service, _, argument = request.partition(":")
        options = service.split(",")
        if options[0] in ("shell", "exec") and "v2" not in options:
            sock.sendall(OKAY)
            if options[0] == "shell" and not argument:
                serve_interactive(sock, shell)
                return
            try:
                result = shell.run(argument)
                output = result.output
            except Exception as exc:  # a bug must reach the client as text, not a silently closed stream
                log.exception("shell command %r failed", argument)
                output = f"{SH}: internal error: {type(exc).__name__}: {exc}\n".encode()
            sock.sendall(output)
        elif options[0] == "shell":
            sock.sendall(OKAY)
            serve_shell_v2(sock, shell, options[1:], argument)
        elif service == "sync":
            serve_sync(sock, shell)
        else:
            log.warning("unsupported adb device service %r", request)
            raise _Refused(f"SimPhone does not support the '{service}' service")
