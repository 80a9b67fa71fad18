"""The adb connection under :class:`~agent_runtime.devices.android.device.AndroidDevice`.

Built on adbutils with two deliberate changes to its client:

* no implicit ``adb start-server``: adbutils starts its bundled adb server whenever a connection
  is refused — in the middle of a run that would occupy the port of the server that just went
  away (a restarting SimPhone endpoint, a user's own adb). The server is started only on the
  first connect, only for a local address, and only when ``start_server`` is on;
* the server version is asked once, not before every command (adbutils opens an extra TCP
  connection per shell call for it).

Every call goes through :meth:`AdbLink.call`, which turns ``AdbError``/``OSError`` into
:class:`DeviceError` and, when the connection drops, reconnects with bounded exponential backoff.
Commands that change the device (taps, typing) are retried only when the connection could not be
opened at all — a command that may have reached the device is never sent twice.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from adbutils import AdbClient, AdbConnection, AdbDevice, AdbError, adb_path
from adbutils.errors import AdbConnectionError, AdbTimeout

from agent_runtime.errors import DeviceError, DeviceNotFoundError

T = TypeVar("T")

SETUP_HINT = (
    "connect the phone by USB, enable Developer options > USB debugging, and check that "
    "'adb devices' lists it as 'device'; for SimPhone run 'agent-runtime simphone serve --port PORT' "
    "and set ANDROID_ADB_SERVER_PORT=PORT"
)


class _Connection(AdbConnection):
    """An adbutils connection that reports a refused connection instead of starting a server."""

    def _safe_connect(self) -> Any:
        return self._create_socket()


class _Client(AdbClient):
    def __init__(self, host: str, port: int, socket_timeout: float | None = None) -> None:
        super().__init__(host=host, port=port, socket_timeout=socket_timeout)
        self._socket_timeout = socket_timeout
        self._version: int | None = None

    def make_connection(self, timeout: float | None = None) -> AdbConnection:
        try:
            conn = _Connection(self.host, self.port)
        except TimeoutError:
            raise AdbTimeout("connect to adb server timeout") from None
        timeout = timeout or self._socket_timeout
        if timeout:
            conn.conn.settimeout(timeout)
        return conn

    def forget_version(self) -> None:
        """After a reconnect the server may be a different adb version."""
        self._version = None

    def server_version(self) -> int:
        if self._version is None:
            self._version = super().server_version()
        return self._version


def server_address(host: str | None, port: int | None) -> tuple[str, int]:
    """Explicit options win, then ``ANDROID_ADB_SERVER_HOST``/``PORT``, then 127.0.0.1:5037."""
    host = host or os.environ.get("ANDROID_ADB_SERVER_HOST") or "127.0.0.1"
    if port is None:
        env = os.environ.get("ANDROID_ADB_SERVER_PORT")
        try:
            port = int(env) if env else 5037
        except ValueError:
            raise DeviceError(f"ANDROID_ADB_SERVER_PORT={env!r} is not a port number") from None
    return host, port


def listed_devices(timeout_s: float) -> list[tuple[str, str]]:
    """``(serial, state)`` of the phones the adb server (:func:`server_address`) lists; empty when
    no server answers within ``timeout_s``. Never starts a server (a run that asks for a phone does)."""
    host, port = server_address(None, None)
    try:
        return [(info.serial, info.state) for info in _Client(host, port, socket_timeout=timeout_s).list()]
    except (AdbError, OSError):
        return []


class AdbLink:
    """One device on one adb server, with reconnection. ``serial`` None = the only/first device."""

    def __init__(
        self,
        serial: str | None,
        *,
        host: str | None = None,
        port: int | None = None,
        start_server: bool = True,
        timeout_s: float = 30.0,
        reconnect_attempts: int = 5,
        reconnect_backoff_s: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.host, self.port = server_address(host, port)
        self.client = _Client(self.host, self.port, socket_timeout=timeout_s)
        self.timeout_s = timeout_s
        self.reconnect_attempts = reconnect_attempts
        self.reconnect_backoff_s = reconnect_backoff_s
        self.reconnects = 0
        self._generation = 0  # bumped by each successful reconnect
        self._reconnect_lock = threading.Lock()
        self._sleep = sleep
        self._wanted = serial
        self.serial = self._select(serial, start_server=start_server)
        self.device = AdbDevice(self.client, serial=self.serial)

    # -- connecting ------------------------------------------------------------------------

    def _where(self) -> str:
        return f"{self.host}:{self.port}"

    def _list(self, start_server: bool) -> list[Any]:
        try:
            return self.client.list()
        except (AdbError, OSError) as first:
            if not (start_server and self.host in ("127.0.0.1", "localhost")):
                raise DeviceNotFoundError(
                    f"no adb server at {self._where()}: {first}", hint=SETUP_HINT
                ) from None
        try:
            subprocess.run(
                [adb_path(), "-P", str(self.port), "start-server"],
                capture_output=True,
                timeout=30,
                check=False,
            )
            return self.client.list()
        except (AdbError, OSError, subprocess.TimeoutExpired) as exc:
            # no server means no phone: the same named error as an empty device list
            raise DeviceNotFoundError(
                f"no adb server at {self._where()} and starting one failed: {exc}", hint=SETUP_HINT
            ) from None

    def _select(self, serial: str | None, *, start_server: bool) -> str:
        infos = self._list(start_server)
        states = {info.serial: info.state for info in infos}
        listing = ", ".join(f"{s} ({st})" for s, st in states.items()) or "none"
        if serial is not None:
            state = states.get(serial)
            if state is None:
                raise DeviceNotFoundError(
                    f"no Android device {serial!r} on the adb server at {self._where()} (devices: {listing})",
                    hint=SETUP_HINT,
                )
            _check_state(serial, state)
            return serial
        ready = [s for s, st in states.items() if st == "device"]
        if ready:
            return ready[0]
        if states:
            s, st = next(iter(states.items()))
            _check_state(s, st)
        raise DeviceNotFoundError(f"no Android device on the adb server at {self._where()}", hint=SETUP_HINT)

    def _reconnect(self, seen: int) -> None:
        """Wait for the server and this device to come back; raise when the budget is spent.

        Parallel calls (an observation runs three) that fail together reconnect once: whoever
        gets the lock first reconnects, the others see the bumped generation and just retry.
        """
        with self._reconnect_lock:
            if self._generation != seen:
                return
            delay = self.reconnect_backoff_s
            last: Exception | None = None
            for _ in range(self.reconnect_attempts):
                self._sleep(delay)
                delay = min(delay * 2, 5.0)
                try:
                    self.client.forget_version()
                    states = {info.serial: info.state for info in self.client.list()}
                except (AdbError, OSError) as exc:
                    last = exc
                    continue
                if states.get(self.serial) == "device":
                    self.reconnects += 1
                    self._generation += 1
                    return
                last = DeviceError(f"device state: {states.get(self.serial, 'absent')}")
        raise DeviceError(
            f"lost the connection to Android device {self.serial} at {self._where()} "
            f"and could not reconnect after {self.reconnect_attempts} attempts: {last}",
            hint=SETUP_HINT,
            serial=self.serial,
        )

    # -- calls -----------------------------------------------------------------------------

    def call(self, fn: Callable[[AdbDevice], T], *, idempotent: bool) -> T:
        """Run ``fn(device)``; reconnect and retry on connection loss (see module docstring)."""
        retried = False
        while True:
            seen = self._generation
            try:
                return fn(self.device)
            except AdbTimeout as exc:
                raise DeviceError(
                    f"adb command timed out on {self.serial} after {self.timeout_s:g} s: {exc}",
                    serial=self.serial,
                ) from None
            except (AdbError, OSError, EOFError) as exc:
                refused = isinstance(exc, AdbConnectionError | ConnectionRefusedError)
                if retried or not (idempotent or refused):
                    raise DeviceError(
                        f"adb command failed on {self.serial}: {exc}", hint=SETUP_HINT, serial=self.serial
                    ) from None
                self._reconnect(seen)
                retried = True

    def shell(self, command: str, *, idempotent: bool = True) -> str:
        return self.call(lambda d: d.shell(command, timeout=self.timeout_s), idempotent=idempotent)

    def exec_out(self, command: str) -> bytes:
        """Raw stdout of ``exec:`` (no pty, no CR/LF mangling); falls back to ``shell:``."""

        def run(d: AdbDevice) -> bytes:
            conn = d.open_transport(timeout=self.timeout_s)
            try:
                conn.send_command("exec:" + command)
                status = conn.read(4)
                if status == b"OKAY":
                    return conn.read_until_close(encoding=None)
                if status != b"FAIL":
                    raise AdbError(f"connection closed before the reply to exec:{command} (got {status!r})")
            finally:
                conn.close()
            # FAIL: this adbd has no exec service (very old Android); shell: works everywhere.
            return d.shell(command, encoding=None, timeout=self.timeout_s)

        return self.call(run, idempotent=True)


def _check_state(serial: str, state: str) -> None:
    if state == "device":
        return
    if state == "unauthorized":
        raise DeviceError(
            f"Android device {serial} is unauthorized",
            hint="unlock the phone and accept the 'Allow USB debugging?' prompt, then retry",
        )
    if state == "offline":
        raise DeviceError(
            f"Android device {serial} is offline",
            hint="reconnect the USB cable or run 'adb reconnect'; restart the phone if it stays offline",
        )
    raise DeviceError(f"Android device {serial} is in state {state!r}, not 'device'", hint=SETUP_HINT)


__all__ = ["SETUP_HINT", "AdbLink", "server_address"]
