"""Serve written viewer pages over HTTP on 127.0.0.1 (``traces view --serve``).

Only the pages themselves are served, each under its path relative to a common root — never
the rest of a run directory (calls.jsonl, the checkpoint): the pages are self-contained, so
nothing else is needed, and a request for any other path is a 404.

Binding to loopback keeps other machines out, but not other web pages in the person's own
browser: a page on any site can make its host name resolve to 127.0.0.1 (DNS rebinding) and
then read the traces as if they were its own. Such a request still names the attacker's host
in its ``Host`` header, so only requests for ``localhost``, ``127.0.0.1`` or ``[::1]`` at the
bound port are answered; any other gets 403. A page is only read when it is a regular file
(a FIFO put in its place cannot hang the server), and it is sent with headers that keep it
from loading anything or being framed.
"""

from __future__ import annotations

import os
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from agent_runtime.errors import ConfigError, TraceError
from agent_runtime.viewer.files import open_regular

#: The address ``--serve`` binds: loopback only.
BIND_HOST = "127.0.0.1"
#: Host names a request may name (with the bound port): the loopback names, nothing a DNS
#: record elsewhere could point at.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})

#: Sent with every page: it may run its own inline script and show its inline images, and
#: load, submit or be framed by nothing.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def host_allowed(host: str | None, port: int) -> bool:
    """Whether a request's ``Host`` header names this server by a loopback name and its port
    (a browser names the port whenever it is not 80, and the viewer never binds port 80).

    >>> host_allowed("127.0.0.1:8765", 8765), host_allowed("LOCALHOST:8765", 8765)
    (True, True)
    >>> host_allowed("[::1]:8765", 8765), host_allowed("evil.example:8765", 8765)
    (True, False)
    >>> host_allowed("localhost", 8765), host_allowed(None, 8765), host_allowed("localhost:80", 8765)
    (False, False, False)
    """
    if not host:
        return False
    name, sep, given = host.strip().lower().rpartition(":")
    if not sep or name.endswith("["):  # no port (``localhost``), or a bare IPv6 address
        return False
    return name in LOOPBACK_NAMES and given == str(port)


def page_urls(main: Path, others: list[Path]) -> tuple[dict[str, Path], str]:
    """URL paths for ``main`` and ``others`` (relative to their common directory, so the index's
    relative links keep working), and the main page's path."""
    files = [main.resolve(), *(p.resolve() for p in others)]
    root = Path(os.path.commonpath([str(f.parent) for f in files]))
    urls = {"/" + f.relative_to(root).as_posix(): f for f in files}
    return urls, "/" + files[0].relative_to(root).as_posix()


def make_server(pages: dict[str, Path], main: str, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:``port`` (0: a free one) for ``pages``; ``/`` redirects to ``main``."""

    class Handler(BaseHTTPRequestHandler):
        #: The port the server bound (``port`` may be 0): the one a request's Host must name.
        bound_port = 0

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            """Quiet: the command prints the URL once; per-request lines would drown it."""

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            if not host_allowed(self.headers.get("Host"), self.bound_port):
                self.send_error(HTTPStatus.FORBIDDEN, "unknown Host: use http://127.0.0.1:PORT/")
                return
            path = unquote(urlsplit(self.path).path)
            if path == "/":
                self.send_response(HTTPStatus.FOUND)
                self.send_header("Location", main)
                self.end_headers()
                return
            file = pages.get(path)
            if file is None:
                self.send_error(HTTPStatus.NOT_FOUND, "not a viewer page")
                return
            try:
                fh, size = open_regular(file, name=path)
            except TraceError:  # gone, or no longer a regular file
                self.send_error(HTTPStatus.NOT_FOUND, "not a viewer page")
                return
            with fh:
                body = fh.read(size)
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for name, value in PAGE_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    try:
        server = ThreadingHTTPServer((BIND_HOST, port), Handler)
    except OSError as exc:
        raise ConfigError(
            f"cannot serve on {BIND_HOST}:{port}: {exc.strerror or exc}",
            hint="pick another --port (0 picks a free one)",
        ) from None
    Handler.bound_port = server.server_port
    return server
