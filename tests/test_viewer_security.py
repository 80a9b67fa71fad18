"""``traces view`` on hostile run directories and requests: a run folder named like a URL is
never a link, ``--serve`` answers only requests that name it by a loopback host (DNS
rebinding), and a FIFO, an oversized file or anything but a regular file where a screenshot,
a trace file or the page should be never hangs the command."""

from __future__ import annotations

import http.client
import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from PIL import Image

from agent_runtime.errors import TraceError
from agent_runtime.traces import RunRecord, StepRecord, TraceWriter
from agent_runtime.viewer import PAGE_NAME, write_index, write_run_page
from agent_runtime.viewer.files import MAX_SCREEN_BYTES
from agent_runtime.viewer.serve import make_server, page_urls
from tests.test_traces_view import Dom

ROOT = Path(__file__).resolve().parents[1]
#: Long enough for a cold CLI start on a busy machine; a FIFO read blocks for ever.
HANG_S = 60


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (20, 40), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


def make_run(path: Path, task: str = "Open the Clock app") -> Path:
    """A finished two-step run with three screenshots."""
    with TraceWriter(path) as w:
        w.write_run(RunRecord(run_id=path.name, task=task, status="completed", device={"screen": [20, 40]}))
        s = [w.save_screen(i, png()) for i in range(3)]
        for i in range(2):
            w.append_step(StepRecord(step=i, before_screen=s[i], after_screen=s[i + 1]))
    return path


def view(*args: str) -> subprocess.CompletedProcess[str]:
    """``agent-runtime traces view ...`` as a person runs it; a hang fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "agent_runtime.cli", "traces", "view", *args],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=ROOT,
    )


# -- links ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["javascript:alert(document.cookie)", "data:text,hi", "vbscript:x", ".hidden", "a b#c?d"]
)
def test_a_run_folder_named_like_a_url_is_listed_as_text_never_linked(tmp_path, name):
    root = tmp_path / "runs"
    make_run(root / "20990101-000000-good")
    make_run(root / name, task="hostile")
    index, pages = write_index(root)
    html = index.read_text(encoding="utf-8")
    dom = Dom(html)
    assert dom.links == [f"20990101-000000-good/{PAGE_NAME}"]
    assert all(not urlsplit(link).scheme for link in dom.links)
    assert pages == [root / "20990101-000000-good" / PAGE_NAME]
    assert not (root / name / PAGE_NAME).exists()
    text = dom.all_text
    assert name in text and "not linked" in text  # shown, as escaped text
    assert f'href="{name}' not in html


def test_the_index_names_its_runs_dir_not_its_absolute_path(tmp_path):
    root = tmp_path / "my-runs"
    make_run(root / "20990101-000000-good")
    index, _ = write_index(root)
    html = index.read_text(encoding="utf-8")
    assert "my-runs" in html and str(tmp_path) not in html


# -- serve: the Host header -------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    page = write_run_page(make_run(tmp_path / "runs" / "20990101-000000-good"))
    pages, main = page_urls(page, [])
    srv = make_server(pages, main, 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv.server_port, page
    finally:
        srv.shutdown()
        srv.server_close()


def get(port: int, path: str, host: str | None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_S)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_serve_answers_only_requests_for_a_loopback_host_at_its_port(server):
    port, page = server
    path = f"/{page.name}"
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}"):
        status, headers, body = get(port, path, host)
        assert status == 200, host
        assert b"Open the Clock app" in body
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    # A DNS-rebinding page names its own host; a wrong port or no Host at all is refused too.
    for host in (
        f"evil.example:{port}",
        "evil.example",
        f"127.0.0.1.evil.example:{port}",
        "127.0.0.1:1",
        None,
    ):
        status, _, body = get(port, path, host)
        assert status == 403, host
        assert b"Open the Clock app" not in body
        status, _, _ = get(port, "/", host)
        assert status == 403, host


def test_serve_does_not_hang_on_a_page_replaced_by_a_fifo(server):
    port, page = server
    page.unlink()
    os.mkfifo(page)
    status, _, _ = get(port, f"/{page.name}", f"127.0.0.1:{port}")
    assert status == 404


# -- only regular files are read --------------------------------------------------------------------


def test_a_fifo_in_place_of_a_screenshot_is_a_placeholder_not_a_hang(tmp_path):
    run_dir = make_run(tmp_path / "runs" / "20990101-000000-fifo")
    (run_dir / "screens" / "0001.png").unlink()
    os.mkfifo(run_dir / "screens" / "0001.png")
    proc = view(str(run_dir))
    assert proc.returncode == 0, proc.stderr
    dom = Dom((run_dir / PAGE_NAME).read_text(encoding="utf-8"))
    assert [m["data-kind"] for m in dom.sections[0]["missing"]] == ["after"]
    assert [m["data-kind"] for m in dom.sections[1]["missing"]] == ["before"]
    assert "screens/0001.png is a FIFO, not a regular file" in dom.all_text
    assert len(dom.sections[0]["imgs"]) == 1 and len(dom.sections[1]["imgs"]) == 1


def test_an_oversized_screenshot_is_a_placeholder_and_is_not_read(tmp_path):
    run_dir = make_run(tmp_path / "20990101-000000-big")
    big = run_dir / "screens" / "0002.png"
    with big.open("r+b") as fh:  # sparse: the size is what counts, nothing is written
        fh.truncate(MAX_SCREEN_BYTES + 1)
    dom = Dom(write_run_page(run_dir).read_text(encoding="utf-8"))
    assert [m["data-kind"] for m in dom.sections[1]["missing"]] == ["after"]
    assert "screens/0002.png is 32.0 MB, over the viewer's 32.0 MB limit" in dom.all_text


@pytest.mark.parametrize("name", ["steps.jsonl", "calls.jsonl", "interventions.jsonl"])
def test_a_fifo_in_place_of_a_trace_file_is_a_clean_error_not_a_hang(tmp_path, name):
    run_dir = make_run(tmp_path / "20990101-000000-fifo")
    (run_dir / name).unlink()
    os.mkfifo(run_dir / name)
    proc = view(str(run_dir))
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 1, proc.stderr
    assert f"{name} is a FIFO, not a regular file" in said and "Traceback" not in said


def test_a_fifo_where_the_page_goes_is_a_clean_error_not_a_hang(tmp_path):
    run_dir = make_run(tmp_path / "20990101-000000-out")
    os.mkfifo(run_dir / PAGE_NAME)
    proc = view(str(run_dir))  # first in a subprocess: the old code blocked opening the FIFO
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 1 and "Traceback" not in said, said
    assert "cannot write" in said and "view.html: it is a FIFO, not a regular file" in said
    with pytest.raises(TraceError, match="it is a FIFO"):
        write_run_page(run_dir)
