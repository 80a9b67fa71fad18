"""A person in the loop in the two trace readers: ``traces view`` (loaded in a real headless
Chromium, like tests/test_traces_view.py) and ``traces show``, over a run directory written with
:class:`TraceWriter` that holds one intervention of each kind."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.traces import CallRecord, InterventionRecord, RunRecord, StepRecord, TraceWriter, Verdict
from agent_runtime.viewer import write_run_page
from tests.test_traces_view import XSS, Dom, chromium, needs_chromium

runner = CliRunner()
ANSWER = f"{XSS} the work one"
REASONS = ["deletes data", "not part of the task"]
SECRET = b"\x89PNG\r\n\x1a\n" + b"SECRET-IMAGE" * 10


def png(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (20, 120, 200)).save(buf, format="PNG")
    return buf.getvalue()


def record(step: int, kind: str, n: int, decision: str, **fields: Any) -> InterventionRecord:
    return InterventionRecord(
        step=step,
        kind=kind,  # type: ignore[arg-type]
        request_id=f"r/{n}",
        decision=decision,
        asked_at=100.0,
        answered_at=102.5,
        **fields,
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Steps 0-3 of a run that now waits for a person: step 0 asked a question (answered with a
    script tag), step 1's action was rejected, the person took over at step 2 (handed a 40-pixel
    wide screen, handed back a 50-pixel one), step 3 had no one in it; a takeover at step 4 —
    never committed — points its after-screen outside the run directory."""
    root = tmp_path_factory.mktemp("runs")
    (root / "secret.png").write_bytes(SECRET)
    path = root / "20990101-000000-person"
    with TraceWriter(path) as w:
        w.write_run(
            RunRecord(
                run_id=path.name, task="Clean up the inbox", status="waiting", device={"screen": [40, 80]}
            )
        )
        s = [w.save_screen(i, png(40, 80)) for i in range(4)]
        handed_back = w.save_screen(2, png(50, 90), tag="r1")
        tap = {"action": "click", "coordinate": [10, 20]}
        w.append_intervention(record(0, "ask", 1, "answer", question="Which account?", text=ANSWER))
        w.append_step(
            StepRecord(step=0, before_screen=s[0], after_screen=s[1], verdict=Verdict.of("A", "answered"))
        )
        w.append_intervention(
            record(
                1,
                "confirm",
                2,
                "reject",
                action=tap,
                target="tap 'Delete all'",
                reasons=REASONS,
                text="not these",
                before_screen=s[1],
            )
        )
        confirmation = {"decision": "reject", "by": "person", "reasons": REASONS, "text": "not these"}
        w.append_step(
            StepRecord(
                step=1,
                before_screen=s[1],
                after_screen=s[2],
                action=tap,
                confirmation=confirmation,
                verdict=Verdict.of("C", "the person rejected this action"),
            )
        )
        w.append_intervention(
            record(2, "takeover", 3, "resume", before_screen=s[2], after_screen=handed_back)
        )
        w.append_step(StepRecord(step=2, before_screen=handed_back, after_screen=s[3], action=tap))
        w.append_step(StepRecord(step=3, before_screen=s[3], action=tap))
        w.append_intervention(
            record(4, "takeover", 4, "resume", before_screen=s[3], after_screen="../secret.png")
        )
    return path


class Page(Dom):
    """Dom, plus each intervention block (``div.intervention``: its attributes, text, images and
    missing screenshots), each step's own text, and the timeline's markers."""

    def __init__(self, html: str) -> None:
        self.interventions: list[dict[str, Any]] = []
        self.markers: list[dict[str, str]] = []
        self._block: dict[str, Any] | None = None
        self._depth = 0
        super().__init__(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        super().handle_starttag(tag, attrs)
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "section" and "step" in classes:
            self.sections[-1]["text"] = []
        if tag == "a" and "marker" in classes:
            self.markers.append(a)
        if tag == "div" and "intervention" in classes:
            self._block = {"attrs": a, "text": [], "imgs": [], "missing": []}
            self.interventions.append(self._block)
            self._depth = 0
        if self._block is None:
            return
        if tag == "div":
            self._depth += 1
        if tag == "img":
            self._block["imgs"].append(a)
        elif "missing" in classes:
            self._block["missing"].append(a)

    def handle_endtag(self, tag: str) -> None:
        super().handle_endtag(tag)
        if self._block is not None and tag == "div":
            self._depth -= 1
            if self._depth == 0:
                self._block = None

    def handle_data(self, data: str) -> None:
        super().handle_data(data)
        if self._block is not None:
            self._block["text"].append(data)
        if self._section is not None:
            self._section["text"].append(data)


def block_text(block: dict[str, Any]) -> str:
    return " ".join("".join(block["text"]).split())


@needs_chromium
def test_the_page_shows_questions_confirmations_and_takeovers_in_chromium(run_dir, tmp_path):
    page = write_run_page(run_dir, tmp_path / "page.html")
    html = page.read_text(encoding="utf-8")
    dom = Page(chromium(page.as_uri(), "--dump-dom"))

    assert [s["attrs"]["data-step"] for s in dom.sections] == ["0", "1", "2", "3"]
    assert [s["attrs"]["data-person"] for s in dom.sections] == ["1", "1", "1", "0"]
    blocks = {b["attrs"]["id"]: b for b in dom.interventions}
    assert sorted(blocks) == [f"intervention-{i}" for i in (1, 2, 3, 4)]
    kinds = [(b["attrs"]["data-kind"], b["attrs"]["data-decision"]) for b in dom.interventions]
    assert kinds == [("ask", "answer"), ("confirm", "reject"), ("takeover", "resume"), ("takeover", "resume")]

    # The question and its answer, at step 0; the answer's script tag is text, never an element.
    ask = block_text(blocks["intervention-1"])
    assert "Which account?" in ask and ANSWER in ask and "answered by person" in ask
    assert ANSWER in "".join(dom.sections[0]["text"])
    assert dom.scripts == 1

    # The rejected confirmation: the step's badge and line, and the request with its reasons.
    step1 = " ".join("".join(dom.sections[1]["text"]).split())
    assert "rejected by person" in step1
    assert "rejected by person: not these" in step1  # the step's confirmation line
    confirm = block_text(blocks["intervention-2"])
    assert "tap 'Delete all'" in confirm and "not these" in confirm
    assert all(reason in confirm for reason in REASONS)
    assert "confirm rejected by person" in confirm

    # The takeover at step 2: both screens embedded and decoded by the browser, at their sizes.
    takeover = blocks["intervention-3"]
    shots = {img["data-kind"]: img for img in takeover["imgs"]}
    assert shots["handed over"]["data-ref"] == "screens/0002.png"
    assert shots["handed back"]["data-ref"] == "screens/0002-r1.png"
    assert [shots[k]["data-loaded"] for k in ("handed over", "handed back")] == ["1", "1"]
    assert shots["handed over"]["data-natural-width"] == "40"
    assert shots["handed back"]["data-natural-width"] == "50"
    assert not takeover["missing"] and "handed back by person" in block_text(takeover)
    # The ask and the confirm embed no screens of their own (their step shows them).
    assert not blocks["intervention-1"]["imgs"] and not blocks["intervention-2"]["imgs"]

    # The uncommitted step's takeover: its before-screen embedded, the one outside the run never.
    stray = blocks["intervention-4"]
    assert [img["data-kind"] for img in stray["imgs"]] == ["handed over"]
    assert [m["data-kind"] for m in stray["missing"]] == ["handed back"]
    assert "points outside the run directory" in block_text(stray)
    assert base64.b64encode(SECRET).decode()[:40] not in html

    # The timeline marks each at its step, linking to it; the summary counts them.
    assert [(m["href"], m["data-kind"]) for m in dom.markers] == [
        ("#intervention-1", "ask"),
        ("#intervention-2", "confirm"),
        ("#intervention-3", "takeover"),
        ("#intervention-4", "takeover"),
    ]
    text = " ".join(dom.all_text.split())
    assert "4 interventions: 1 ask, 1 confirm, 2 takeover" in text
    assert f"agent-runtime run --resume {run_dir.name}" in text  # the run waits: how to go on


@needs_chromium
def test_the_person_filter_shows_only_steps_a_person_was_in_in_chromium(run_dir, tmp_path):
    page = write_run_page(run_dir, tmp_path / "page.html")
    dom = Page(chromium(page.as_uri() + "?person=1", "--dump-dom"))
    shown = [s["attrs"]["data-step"] for s in dom.sections if "hidden" not in s["attrs"]["class"].split()]
    assert shown == ["0", "1", "2"]
    both = Page(chromium(page.as_uri() + "?person=1&failed=1", "--dump-dom"))
    shown = [s["attrs"]["data-step"] for s in both.sections if "hidden" not in s["attrs"]["class"].split()]
    assert shown == ["1"]  # the rejected step: a person was in it and it failed


def test_show_lists_each_intervention_and_counts_them(run_dir):
    res = runner.invoke(
        app, ["traces", "show", run_dir.name, "--runs-dir", str(run_dir.parent)], env={"COLUMNS": "240"}
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "person:  4 interventions (1 ask, 1 confirm, 2 takeover)" in out
    assert f"continue with: agent-runtime run --resume {run_dir.name}" in out
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("step ")]
    assert lines == [
        f"step 0 · ask · answer by person · Which account? → {ANSWER}",
        "step 1 · confirm · reject by person · tap 'Delete all' (deletes data; not part of the task)"
        " → not these",
        "step 2 · takeover · resume by person · screens/0002.png → screens/0002-r1.png",
        "step 4 · takeover · resume by person · screens/0003.png → ../secret.png",
    ]
    # The rejected step's row says who decided.
    row = next(line for line in out.splitlines() if line.strip("│ ").startswith("1 "))
    assert "[reject by person]" in row


def test_list_shows_a_waiting_run_as_waiting_not_failed(run_dir):
    res = runner.invoke(app, ["traces", "list", "--runs-dir", str(run_dir.parent)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    row = next(line for line in res.output.splitlines() if run_dir.name[:12] in line)
    assert "waiting" in row and "(no)" not in row
    res = runner.invoke(app, ["traces", "list", "--runs-dir", str(run_dir.parent)], env={"FORCE_COLOR": "1"})
    colored = next(line for line in res.output.splitlines() if "waiting" in line)
    assert "\x1b[36mwaiting" in colored  # cyan, like no failure


class Marks(Dom):
    """Dom, plus the timeline's stop/resume rows (``div.session-mark``) as (kind, text)."""

    def __init__(self, html: str) -> None:
        self.marks: list[tuple[str, str]] = []
        self._mark: list[str] | None = None
        super().__init__(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        super().handle_starttag(tag, attrs)
        a = {k: v or "" for k, v in attrs}
        if tag == "div" and "session-mark" in a.get("class", "").split():
            self._mark = [a["data-kind"]]

    def handle_endtag(self, tag: str) -> None:
        super().handle_endtag(tag)
        if tag == "div" and self._mark is not None:
            self.marks.append((self._mark[0], " ".join("".join(self._mark[1:]).split())))
            self._mark = None

    def handle_data(self, data: str) -> None:
        super().handle_data(data)
        if self._mark is not None:
            self._mark.append(data)


def test_a_waiting_run_is_marked_stopped_and_a_takeover_is_no_resume(run_dir):
    marks = Marks(write_run_page(run_dir, run_dir.parent / "marks.html").read_text(encoding="utf-8")).marks
    waits = "stopped to wait for a person's reply; continue with: agent-runtime run --resume"
    assert marks == [("stopped", f"stopped {waits} {run_dir.name}")]


def test_stops_and_resumes_show_on_the_timeline(tmp_path):
    """Interrupted after step 1, resumed (the screen looked at afresh: screens/0002-r1.png), a
    killed session's torn line cut off, and now interrupted again after step 2."""
    path = tmp_path / "20990101-000000-resumed"
    with TraceWriter(path) as w:
        w.write_run(RunRecord(run_id=path.name, task="Open the Clock app", status="interrupted"))
        s = [w.save_screen(i, png(40, 80)) for i in range(3)]
        again = w.save_screen(2, png(50, 90), tag="r1")
        w.append_step(StepRecord(step=0, before_screen=s[0], after_screen=s[1]))
        w.append_step(StepRecord(step=1, before_screen=s[1], after_screen=s[2]))
        w.append_step(StepRecord(step=2, before_screen=again, after_screen=None))
    (path / "steps.jsonl.torn").write_bytes(b'{"step": 3, "subg')
    html = write_run_page(path).read_text(encoding="utf-8")
    marks = Marks(html).marks
    assert [kind for kind, _ in marks] == ["resumed", "stopped", "killed"]
    assert "resumed before step 2: the screen was observed afresh (screens/0002-r1.png)" in marks[0][1]
    assert "interrupted (Ctrl-C or cancel); continue with: agent-runtime run --resume" in marks[1][1]
    assert "steps.jsonl.torn" in marks[2][1]
    # in order on the timeline: the resume between steps 1 and 2, the stop after step 2
    assert html.index('href="#step-1"') < html.index("resumed before step 2") < html.index('href="#step-2"')
    assert html.index('href="#step-2"') < html.index("interrupted (Ctrl-C")


def test_times_read_as_a_person_says_them_and_no_absolute_path_is_shown(tmp_path):
    path = tmp_path / "20990101-000000-times"
    adapter = tmp_path / "home" / "adapters" / "worker-lora"
    with TraceWriter(path) as w:
        w.write_run(
            RunRecord(
                run_id=path.name,
                task="Open the Clock app",
                status="completed",
                device={"spec": f"simphone:3 (state {tmp_path}/state.json)", "screen": [40, 80]},
                models={"worker": {"model_id": f"local:{adapter}"}},
                timings={"total_ms": 295_420.0, "model_ms": 61_000.0, "device_ms": 4_210.0},
            )
        )
        s = [w.save_screen(i, png(40, 80)) for i in range(2)]
        w.append_step(
            StepRecord(
                step=0,
                before_screen=s[0],
                after_screen=s[1],
                timings_ms={"worker": 1234.0, "critical_path": 75_000.0, "model_critical": 75_000.0},
            )
        )
        w.append_call(
            CallRecord(run_id=path.name, step=0, role="worker", model=str(adapter), latency_ms=420.0)
        )
    html = write_run_page(path).read_text(encoding="utf-8")
    text = " ".join(Dom(html).all_text.split())
    assert "4 min 55 s total · 1 min 1 s in models · 4.2 s on the device" in text
    assert "1 min 15 s" in text and "worker 1.2 s" in text and "420 ms" in text
    assert "295420" not in html and "295.4 s" not in text
    assert str(tmp_path) not in html  # neither the adapter's path nor the device's state file
    assert "local:…/adapters/worker-lora" in text and "…/adapters/worker-lora · 420 ms" in text
