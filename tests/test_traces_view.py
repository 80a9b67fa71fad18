"""``agent-runtime traces view``: real SimPhone runs rendered to HTML and loaded in a real
headless Chromium (``--dump-dom`` gives the DOM after the page's own script ran; the page marks
each screenshot ``data-loaded`` once the browser decoded it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.simphone.tasks.registry import make_task
from agent_runtime.traces import load_run
from agent_runtime.viewer import action_overlay, write_run_page
from tests.doubles import ScriptCall, notetaker_reply, reflector_reply
from tests.test_graph import phone_with_wifi_off, run, wifi_manager, wifi_worker
from tests.test_graphs import SEED, TASK, in_process, oracle_actions, script_for

runner = CliRunner()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium binary (apt-get install chromium); the page is tested in a real browser",
)
XSS = "<script>alert(1)</script>"
NOTE = "- the <b>Wi-Fi</b> row is second"


class Dom(HTMLParser):
    """The parts of a page the tests look at: step sections, images, calls, scripts, text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.sections: list[dict[str, Any]] = []
        self.scripts = 0
        self.options: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._section: dict[str, Any] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "section" and "step" in classes:
            self._section = {"attrs": a, "imgs": [], "missing": [], "calls": [], "circles": [], "arrows": 0}
            self.sections.append(self._section)
        elif tag == "script":
            self.scripts += 1
        elif tag == "option":
            self.options.append(a.get("value", ""))
        elif tag == "a":
            self.links.append(a.get("href", ""))
        elif self._section is not None:
            if tag == "img":
                self._section["imgs"].append(a)
            elif "missing" in classes:
                self._section["missing"].append(a)
            elif tag == "details" and "call" in classes:
                self._section["calls"].append(a)
            elif tag == "circle" and a.get("fill", "").startswith("rgba"):
                self._section["circles"].append((float(a["cx"]), float(a["cy"])))
            elif tag == "line":
                self._section["arrows"] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._section = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def chromium(url: str, *args: str) -> str:
    """The DOM of ``url`` after its scripts ran, from a real headless Chromium."""
    assert CHROMIUM is not None
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two real SimPhone runs: Wi-Fi on in 3 steps (a junk Worker reply with a script tag that is
    re-asked, a B verdict at step 1), and a verified ClockToggleAlarm run of the hi_agent graph."""
    root = tmp_path_factory.mktemp("runs")
    phone = phone_with_wifi_off()
    worker = wifi_worker(phone)

    def junk_then_worker(call: ScriptCall) -> str:
        return f"not an action {XSS}" if call.index == 0 else worker(call)

    script = {
        "manager": wifi_manager(phone),
        "worker": junk_then_worker,
        "reflector": lambda call: reflector_reply("B" if call.step == 1 else "A"),
        "notetaker": notetaker_reply(NOTE),
    }
    _, events = run(phone, script, tmp_path=root)
    wifi = Path(events[-1].run_dir)
    actions = oracle_actions()
    result = in_process("hi_agent", script_for("hi_agent", actions), root).run(
        make_task(TASK, SEED).goal, device=f"simphone:{SEED}"
    )
    assert result.verified is True
    return root, wifi


@needs_chromium
def test_a_run_page_shows_every_step_with_loaded_screenshots_in_chromium(runs, tmp_path):
    root, wifi = runs
    loaded = load_run(wifi)
    assert len(loaded.steps) >= 3 and any(c.parse_error for c in loaded.calls)
    out = tmp_path / "page.html"
    res = runner.invoke(app, ["traces", "view", wifi.name, "--runs-dir", str(root), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.resolve().as_uri() in res.stdout

    dom = Dom(chromium(out.as_uri(), "--dump-dom"))
    assert len(dom.sections) == len(loaded.steps)
    for section, step in zip(dom.sections, loaded.steps, strict=True):
        assert section["attrs"]["data-step"] == str(step.step)
        assert not section["missing"], section["missing"]
        shots = {img["data-kind"]: img for img in section["imgs"]}
        assert shots["before"]["data-ref"] == step.before_screen
        assert shots["after"]["data-ref"] == step.after_screen
        for img in shots.values():  # decoded by the browser, at the screenshot's size
            assert img["data-loaded"] == "1" and img["data-natural-width"] == "1080", img.get("data-ref")
        # The tap is drawn where it landed on the screen.
        assert step.action_screen is not None
        assert section["circles"] == [tuple(float(v) for v in step.action_screen["coordinate"])]
        roles = {c["data-role"] for c in section["calls"]}
        assert {"worker", "reflector", "manager"} <= roles
    assert [s["attrs"]["data-failed"] for s in dom.sections] == ["0", "1", "0"]
    assert set(dom.options) == {"", "manager", "worker", "reflector", "notetaker"}
    text = dom.all_text
    parse_error = next(c.parse_error for c in loaded.calls if c.parse_error)
    assert parse_error in text and "re-ask 1" in text
    for step in loaded.steps:
        assert step.subgoal in text
    assert NOTE in text  # notes and replies are text, not markup
    # The model's script tag is text on the page, never an element: the page has its one script.
    assert f"not an action {XSS}" in text and dom.scripts == 1
    # Every reply is on the page.
    assert all(c.completion in text for c in loaded.calls)
    # Cost and latency per role: one row per role that was called, with its number of calls.
    html = out.read_text(encoding="utf-8")
    for role in {c.role for c in loaded.calls}:
        calls = len(loaded.calls_for(role))
        assert f'<tr class="cost-row" data-role="{role}"><td>{role}</td><td>{calls}</td>' in html, role
    assert f'data-role="total"><td>total</td><td>{len(loaded.calls)}</td>' in html

    shot = tmp_path / "page.png"
    chromium(out.as_uri(), "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,4000")
    assert shot.read_bytes().startswith(b"\x89PNG")
    print(f"page screenshot: {shot}")


@needs_chromium
def test_the_filters_hide_passed_steps_and_other_roles_in_chromium(runs, tmp_path):
    _, wifi = runs
    page = write_run_page(wifi, tmp_path / "page.html")
    dom = Dom(chromium(page.as_uri() + "?failed=1&role=reflector", "--dump-dom"))
    shown = [s for s in dom.sections if "hidden" not in s["attrs"]["class"].split()]
    assert [s["attrs"]["data-step"] for s in shown] == ["1"]
    calls = shown[0]["calls"]
    visible = [c["data-role"] for c in calls if "hidden" not in c.get("class", "").split()]
    assert visible == ["reflector"] and len(calls) > 1


@pytest.mark.parametrize("graph", ["hi_agent", "single"])
def test_every_graph_kind_renders_its_own_roles(runs, tmp_path, graph):
    root, _ = runs
    if graph == "single":
        result = in_process("single", script_for("single", oracle_actions()), tmp_path).run(
            make_task(TASK, SEED).goal, device=f"simphone:{SEED}"
        )
        run_dir = Path(result.run_dir)
    else:
        run_dir = next(
            d for d in root.iterdir() if (d / "run.json").is_file() and load_run(d).steps[0].actor == "low"
        )
    loaded = load_run(run_dir)
    dom = Dom(write_run_page(run_dir).read_text(encoding="utf-8"))
    assert len(dom.sections) == len(loaded.steps)
    for section, step in zip(dom.sections, loaded.steps, strict=True):
        refs = [ref for ref in (step.before_screen, step.after_screen) if ref]
        assert [img["data-ref"] for img in section["imgs"]] == refs and not section["missing"]
    assert (
        set(dom.options) - {""}
        == {c.role for c in loaded.calls}
        == ({"high", "low"} if graph == "hi_agent" else {"single"})
    )
    assert "verified" in dom.all_text


def test_the_index_lists_and_links_every_run(runs, tmp_path):
    root, wifi = runs
    copy = tmp_path / "runs"
    shutil.copytree(root, copy)
    broken = copy / "20990101-000000-broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json", encoding="utf-8")
    res = runner.invoke(app, ["traces", "view", "--runs-dir", str(copy)])
    assert res.exit_code == 0, res.output
    index = copy / "index.html"
    dom = Dom(index.read_text(encoding="utf-8"))
    good = sorted(d.name for d in copy.iterdir() if d != broken and (d / "run.json").is_file())
    assert len(good) == 2
    assert sorted(dom.links) == [f"{name}/view.html" for name in good]
    for link in dom.links:  # each link is a written page with its run's steps
        page = Dom((index.parent / link).read_text(encoding="utf-8"))
        assert len(page.sections) == len(load_run((index.parent / link).parent).steps)
    text = dom.all_text
    assert "Turn on Wi-Fi" in text and "verified" in text and "unverified" in text
    assert "20990101-000000-broken" in text and "unreadable" in text


def test_a_missing_run_or_runs_dir_is_a_clean_error(runs, tmp_path):
    root, _ = runs
    res = runner.invoke(app, ["traces", "view", "nope", "--runs-dir", str(root)])
    assert res.exit_code == 1 and "no run matching 'nope'" in res.output and "hint:" in res.output
    assert isinstance(res.exception, SystemExit) and "Traceback" not in res.output
    res = runner.invoke(app, ["traces", "view", "--runs-dir", str(tmp_path / "absent")])
    assert res.exit_code == 1 and "is not a directory" in " ".join(res.output.split())
    assert isinstance(res.exception, SystemExit) and "Traceback" not in res.output


def test_a_screen_ref_outside_the_run_dir_is_never_embedded(runs, tmp_path):
    _, wifi = runs
    run_dir = tmp_path / "runs" / wifi.name
    shutil.copytree(wifi, run_dir)
    secret = b"\x89PNG\r\n\x1a\n" + b"SECRET-IMAGE" * 10
    (tmp_path / "secret.png").write_bytes(secret)
    lines = (run_dir / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    steps = [json.loads(line) for line in lines]
    steps[0]["before_screen"] = "../../secret.png"
    steps[1]["after_screen"] = "screens/9999.png"
    (run_dir / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps), encoding="utf-8")
    html = write_run_page(run_dir).read_text(encoding="utf-8")
    import base64

    assert base64.b64encode(secret).decode()[:40] not in html
    dom = Dom(html)
    assert [m["data-kind"] for m in dom.sections[0]["missing"]] == ["before"]
    assert [m["data-kind"] for m in dom.sections[1]["missing"]] == ["after"]
    assert "points outside the run directory" in dom.all_text


def test_overlays_draw_taps_swipes_and_typed_text_in_image_pixels():
    tap = action_overlay({"action": "double_click", "coordinate": [100, 50]}, (2000, 1000), (1000, 500))
    assert tap.circles == [(200.0, 100.0)] and not tap.arrows and tap.banner == ""
    drag = action_overlay(
        {"action": "drag", "coordinate": [0, 0], "coordinate2": [10, 0]}, (100, 100), (100, 100)
    )
    ((x1, y1, x2, y2, head),) = drag.arrows
    assert (x1, y1, x2, y2) == (0.0, 0.0, 10.0, 0.0) and head.startswith("10.0,0.0 ")
    typed = action_overlay({"action": "type", "text": XSS}, (100, 100), (100, 100))
    assert typed.banner == f"type: {XSS}" and not typed.circles
    assert (
        action_overlay({"action": "system_button", "button": "Back"}, (1, 1), (1, 1)).banner
        == "system_button: Back"
    )
    assert action_overlay(None, (1, 1), (1, 1)).banner == ""


def test_serve_serves_only_the_pages_and_stops_cleanly_on_ctrl_c(runs):
    root, wifi = runs
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_runtime.cli",
            "traces",
            "view",
            "--runs-dir",
            str(root),
            "--serve",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/index.html"), url
        base = url.rsplit("/", 1)[0]
        with urllib.request.urlopen(base + "/") as resp:  # / redirects to the index
            assert resp.url == url and "Turn on Wi-Fi" in resp.read().decode()
        with urllib.request.urlopen(f"{base}/{wifi.name}/view.html") as resp:
            assert len(Dom(resp.read().decode()).sections) == len(load_run(wifi).steps)
        for path in (f"/{wifi.name}/calls.jsonl", f"/{wifi.name}/screens/0000.png", "/../run.json"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(base + path)
            assert err.value.code == 404
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "stopped" in stderr and "Traceback" not in stderr
