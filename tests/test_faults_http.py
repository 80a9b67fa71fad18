"""A dying or hostile model server ends a run cleanly, in bounded time, losing nothing.

Each case points every role of a real ``agent-runtime run "Open the Clock app" --device simphone``
at a raw-socket HTTP server this test controls (``FaultServer``), which misbehaves in one way:
nothing listening, 500, 429 with ``Retry-After``, accepting and never answering, closing
mid-body, invalid JSON, one byte every 2 s, a 50 MB body (announced, and chunked unannounced).

The bound: with ``timeout_s = T`` (a wall-clock deadline for one attempt), ``retries = R`` and
the client's default backoff (0.5 s doubling, every wait capped at ``max_backoff_s`` = 8 s), one
model call ends within ``(R + 1) * T + R * 8`` s, here ``3 * 2.5 + 2 * 8 = 23.5`` s; each case also
asserts its own, much tighter expected time. Every run must end with exit code 1, a message
naming the cause and no traceback, and a trace that loads with status ``error`` and nothing huge
in it. Most cases run the CLI in-process (``CliRunner``) to keep the suite fast; one runs it as a
real subprocess.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.traces import load_run

TIMEOUT_S = 2.5  # above the trickle's 2 s gap: only a deadline for the whole reply catches it
RETRIES = 2
BOUND_S = (RETRIES + 1) * TIMEOUT_S + RETRIES * 8.0  # the client's stated bound for one call
#: Run set-up (SimPhone, graph) and teardown around the one failing model call.
SLACK_S = 6.0
SERVER_LIFETIME_S = 40.0  # every thread of a FaultServer ends by then whatever the client does


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _response(status: str, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class FaultServer:
    """A raw-socket HTTP/1.1 server that answers every request with ``behave(conn, stop)``.

    It reads each request (headers + ``Content-Length`` body), counts it in :attr:`requests`,
    then hands the connection to ``behave``. Its accept loop and every handler stop by
    themselves within :data:`SERVER_LIFETIME_S`, or at once on ``__exit__``.
    """

    def __init__(self, behave: Callable[[socket.socket, threading.Event], None]) -> None:
        self.behave = behave
        self.requests = 0
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.born = time.monotonic()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, name="fault-server", daemon=True)

    def alive(self) -> bool:
        return not self.stop.is_set() and time.monotonic() - self.born < SERVER_LIFETIME_S

    def _serve(self) -> None:
        while self.alive():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(1.0)
        try:
            data = b""
            while b"\r\n\r\n" not in data and self.alive():
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(v)
                    for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
                    if k.lower() == b"content-length"
                ),
                0,
            )
            while len(rest) < length and self.alive():
                rest += conn.recv(65536)
            self.requests += 1
            self.behave(conn, self.stop)
        except OSError:
            pass  # the client hung up (as it should when it gives up)
        finally:
            conn.close()

    def __enter__(self) -> FaultServer:
        self._accept.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()
        self._accept.join(2)
        for t in self._threads:
            t.join(2)


# --- behaviours ----------------------------------------------------------------------------------


def _reply(status: str, body: bytes, headers: dict[str, str] | None = None) -> Callable[..., None]:
    def behave(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(_response(status, body, headers))

    return behave


def _hang(conn: socket.socket, stop: threading.Event) -> None:
    """Accept the request, never answer (a server stuck for "120 s" or forever)."""
    stop.wait(SERVER_LIFETIME_S)


def _close_mid_body(conn: socket.socket, stop: threading.Event) -> None:
    body = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "half'
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + body)
    conn.shutdown(socket.SHUT_RDWR)


def _trickle(conn: socket.socket, stop: threading.Event) -> None:
    """Headers, then one byte of a 1000-byte body every 2 s: each read is quick, the reply endless."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    conn.sendall(b" ")
    while not stop.wait(2.0):
        conn.sendall(b" ")


def _huge_announced(conn: socket.socket, stop: threading.Event) -> None:
    """A 50 MB reply with its Content-Length: the client must refuse it without reading it."""
    size = 50 * 1024 * 1024
    conn.sendall(
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode()
    )
    _stream_junk(conn, stop, size, chunked=False)


def _huge_chunked(conn: socket.socket, stop: threading.Event) -> None:
    """A 50 MB valid-looking completion, chunked (no length announced): found while reading."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    _stream_junk(conn, stop, 50 * 1024 * 1024, chunked=True)


def _stream_junk(conn: socket.socket, stop: threading.Event, size: int, *, chunked: bool) -> None:
    piece = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    piece += b"A" * (65536 - len(piece))
    sent = 0
    while sent < size and not stop.is_set():
        block = piece if sent == 0 else b"A" * 65536
        conn.sendall(f"{len(block):x}\r\n".encode() + block + b"\r\n" if chunked else block)
        sent += len(block)


def _error_json(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "server_error"}}).encode()


# --- the runs ------------------------------------------------------------------------------------


def _config(path: Path, base_url: str) -> Path:
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "faulty"\nretries = {RETRIES}\n'
        f"timeout_s = {TIMEOUT_S}\nmax_tokens = 64\n[roles.rag]\nenabled = false\n",
        encoding="utf-8",
    )
    return path


ARGS = ["run", "Open the Clock app", "--device", "simphone", "--max-steps", "3", "--json"]


def _run_in_process(cfg: Path, runs: Path) -> tuple[int, str, str, float]:
    start = time.monotonic()
    res = CliRunner().invoke(app, [*ARGS, "--config", str(cfg), "--runs-dir", str(runs)])
    elapsed = time.monotonic() - start
    # An uncaught exception would also be exit code 1: only a deliberate exit counts.
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.stdout, res.stderr, elapsed


def _check_run(code: int, stdout: str, stderr: str, runs: Path, needles: tuple[str, ...]) -> None:
    assert code == 1, stderr
    assert "Traceback" not in stderr and "Traceback" not in stdout
    message = " ".join(stderr.split())
    assert "error:" in message
    for needle in needles:
        assert needle in message, (needle, message)
    # One paragraph: the message, its hint and the resume line, not a dump.
    assert len(stderr) < 2000 and len([ln for ln in stderr.splitlines() if ln.strip()]) <= 12, stderr
    out = json.loads(stdout)
    assert out["success"] is False and out["status"] == "error"
    trace = load_run(out["run_dir"])
    assert trace.run.status == "error" and trace.run.error["type"] == "ModelError"
    assert trace.run.finished_at is not None
    run_dir = Path(out["run_dir"])
    assert (run_dir / "calls.jsonl").stat().st_size < 64 * 1024
    total = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    assert total < 5 * 1024 * 1024, f"{total} bytes written"


#: name -> (behaviour or None for nothing listening, phrases of the message, expected upper time).
CASES: dict[str, tuple[Callable[..., None] | None, tuple[str, ...], float]] = {
    "refused": (None, ("failed after 3 attempts", "Connection refused", "is the server running"), 1.5),
    "500": (
        _reply("500 Internal Server Error", _error_json("CUDA out of memory")),
        ("HTTP 500", "CUDA out of memory"),
        1.5,
    ),
    "429": (
        _reply("429 Too Many Requests", _error_json("slow down"), {"Retry-After": "1"}),
        ("HTTP 429", "slow down"),
        2.0,
    ),
    "hang": (_hang, ("no complete reply within 2.5 s", "raise timeout_s"), TIMEOUT_S),
    "closed_mid_body": (_close_mid_body, ("failed after 3 attempts", "RemoteProtocolError"), 1.5),
    "invalid_json": (_reply("200 OK", b'{"choices": [ not json'), ("not JSON", "not json"), 0.0),
    "wrong_shape": (
        _reply("200 OK", b'{"choices": "none", "usage": 3}'),
        ("not an OpenAI chat completion", "'choices' is str"),
        0.0,
    ),
    "trickle": (_trickle, ("no complete reply within 2.5 s", "bytes of it had arrived"), TIMEOUT_S),
    "huge_announced": (_huge_announced, ("larger than max_reply_bytes", "announced 52428800 bytes"), 0.0),
    "huge_chunked": (_huge_chunked, ("larger than max_reply_bytes", "max_reply_bytes"), 0.0),
}


@pytest.fixture
def server_for() -> Iterator[Callable[[Callable[..., None] | None], tuple[str, FaultServer | None]]]:
    servers: list[FaultServer] = []

    def make(behave: Callable[..., None] | None) -> tuple[str, FaultServer | None]:
        if behave is None:
            return f"http://127.0.0.1:{_free_port()}/v1", None
        srv = FaultServer(behave).__enter__()
        servers.append(srv)
        return srv.url, srv

    yield make
    for srv in servers:
        srv.__exit__()


@pytest.mark.parametrize("case", list(CASES))
def test_faulty_server_ends_the_run_cleanly_in_bounded_time(case: str, tmp_path: Path, server_for) -> None:
    behave, needles, expected_s = CASES[case]
    url, srv = server_for(behave)
    code, stdout, stderr, elapsed = _run_in_process(_config(tmp_path / "c.toml", url), tmp_path / "runs")
    _check_run(code, stdout, stderr, tmp_path / "runs", needles)
    assert elapsed < min(BOUND_S, expected_s) + SLACK_S, f"{case} took {elapsed:.1f} s"
    if case in ("500", "429", "closed_mid_body"):
        assert srv is not None and srv.requests == RETRIES + 1  # retried, and no more
    if case == "429":
        assert elapsed >= 2.0  # Retry-After: 1 was honoured before each of the 2 retries
    if case in ("hang", "trickle", "invalid_json", "huge_announced", "huge_chunked"):
        assert srv is not None and srv.requests == 1  # not retried: repeating would only multiply it


def test_trickle_through_the_real_cli_subprocess(tmp_path: Path) -> None:
    """The same as the in-process cases, as a user runs it: a real process, its real stderr."""
    with FaultServer(_trickle) as srv:
        cfg = _config(tmp_path / "c.toml", srv.url)
        start = time.monotonic()
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "agent_runtime.cli",
                *ARGS,
                "--config",
                str(cfg),
                "--runs-dir",
                str(tmp_path / "runs"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        elapsed = time.monotonic() - start
    _check_run(p.returncode, p.stdout, p.stderr, tmp_path / "runs", ("no complete reply within 2.5 s",))
    assert elapsed < TIMEOUT_S + SLACK_S + 6.0, f"took {elapsed:.1f} s"  # + the process's imports
