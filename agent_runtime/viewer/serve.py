"""Serve written viewer pages over HTTP on 127.0.0.1 (``traces view --serve``).

Only the pages themselves are served, each under its path relative to a common root — never
the rest of a run directory (calls.jsonl, the checkpoint): the pages are self-contained, so
nothing else is needed, and a request for any other path is a 404.
"""

from __future__ import annotations

import os
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from agent_runtime.errors import ConfigError


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
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            """Quiet: the command prints the URL once; per-request lines would drown it."""

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            path = unquote(urlsplit(self.path).path)
            if path == "/":
                self.send_response(HTTPStatus.FOUND)
                self.send_header("Location", main)
                self.end_headers()
                return
            file = pages.get(path)
            if file is None or not file.is_file():
                self.send_error(HTTPStatus.NOT_FOUND, "not a viewer page")
                return
            body = file.read_bytes()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    try:
        return ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as exc:
        raise ConfigError(
            f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}",
            hint="pick another --port (0 picks a free one)",
        ) from None
