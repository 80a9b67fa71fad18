"""``agent-runtime traces list|show|export`` over runs written by the runtime."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, manager_reply, notetaker_reply, worker_reply
from tests.test_graph import make_config

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    ok = ScriptedChatModel(
        script={
            "manager": [manager_reply(["Open Settings"]), manager_reply("Finished")],
            "worker": ["not an action", worker_reply({"action": "open_app", "text": "Settings"}, "open it")],
            "reflector": "### Outcome ###\nA",
            "notetaker": notetaker_reply("- Settings open"),
        }
    )
    bad = ScriptedChatModel(
        script={
            "manager": manager_reply(["Stop"]),
            "worker": worker_reply({"action": "terminate", "status": "failure"}),
            "reflector": "A",
            "notetaker": "None",
        }
    )
    results = []
    for model, task in ((ok, "Open Settings"), (bad, "Do the impossible")):
        rt = Runtime(
            make_config(),
            models=dict.fromkeys(("manager", "worker", "reflector", "notetaker"), model),
            runs_dir=root,
        )
        results.append(rt.run(task, device=SimPhone(seed=0)))
    return root, results


def test_list_shows_every_run(runs):
    root, results = runs
    res = runner.invoke(app, ["traces", "list", "--runs-dir", str(root)])
    assert res.exit_code == 0, res.output
    for r in results:
        assert r.run_id in res.output
    assert "completed" in res.output and "failed" in res.output
    res = runner.invoke(app, ["traces", "list", "--runs-dir", str(root), "--json"])
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["status"] for r in rows] == ["completed", "failed"] and rows[0]["success"] is True


def test_show_summarises_a_run(runs):
    root, (ok, bad) = runs
    # The shortest prefix that names only `ok` (both runs may start in the same second).
    n = next(n for n in range(1, len(ok.run_id) + 1) if not bad.run_id.startswith(ok.run_id[:n]))
    prefix = ok.run_id[:n]
    res = runner.invoke(app, ["traces", "show", prefix, "--runs-dir", str(root)], terminal_width=200)
    assert res.exit_code == 0, res.output
    out = res.output
    assert ok.run_id in out and "Open Settings" in out and "completed" in out
    assert "pixels_resized" in out and "open_app" in out
    # The worker's first reply did not parse: the roles table counts it.
    worker_row = next(line for line in out.splitlines() if line.strip("│ ").startswith("worker"))
    assert worker_row.split("│")[-2].strip() == "1"


def test_export_writes_one_role_with_resolvable_images(runs, tmp_path):
    root, (ok, failed) = runs
    out = tmp_path / "worker.jsonl"
    res = runner.invoke(
        app, ["traces", "export", "--role", "worker", "--out", str(out), "--runs-dir", str(root)]
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3  # ok run: a bad reply then its re-ask; failed run: one call
    assert {r["run_id"] for r in rows} == {ok.run_id, failed.run_id}
    assert all(r["role"] == "worker" for r in rows)
    bad = [r for r in rows if r["parse_error"]]
    assert len(bad) == 1 and bad[0]["completion"] == "not an action"
    image = rows[0]["messages"][0]["content"][1]
    assert image["type"] == "image_ref" and open(image["path"], "rb").read(4) == b"\x89PNG"
    assert {r["run_success"] for r in rows} == {True, False}

    valid = tmp_path / "valid.jsonl"
    runner.invoke(
        app,
        [
            "traces",
            "export",
            "--role",
            "worker",
            "--out",
            str(valid),
            "--runs-dir",
            str(root),
            "--valid-only",
        ],
    )
    assert len(valid.read_text().splitlines()) == 2


def test_errors_are_messages_not_tracebacks(runs, tmp_path):
    root, _ = runs
    res = runner.invoke(app, ["traces", "show", "nope", "--runs-dir", str(root)])
    assert res.exit_code == 1 and "no run matching" in res.output
    res = runner.invoke(
        app,
        [
            "traces",
            "export",
            "--role",
            "planner",
            "--out",
            str(tmp_path / "x.jsonl"),
            "--runs-dir",
            str(root),
        ],
    )
    assert res.exit_code == 2 and "unknown role" in res.output


def test_torn_last_line_is_skipped(runs):
    root, (ok, _) = runs
    calls = ok.run_dir / "calls.jsonl"
    before = len(load_run(ok.run_dir).calls)
    with calls.open("a") as fh:
        fh.write('{"schema_version": 1, "run_id": "x", "st')
    assert len(load_run(ok.run_dir).calls) == before
    res = runner.invoke(app, ["traces", "show", ok.run_id, "--runs-dir", str(root)])
    assert res.exit_code == 0


def test_show_marks_unparseable_steps_without_leaking_markup(tmp_path):
    garbage = ScriptedChatModel(
        script={
            "manager": manager_reply(["Open Settings"]),
            "worker": "not an action",
            "reflector": "### Outcome ###\nC",
            "notetaker": "None",
        }
    )
    rt = Runtime(
        make_config(),
        models=dict.fromkeys(("manager", "worker", "reflector", "notetaker"), garbage),
        runs_dir=tmp_path,
    )
    run = rt.run("Open Settings", device=SimPhone(seed=0), max_steps=1)
    res = runner.invoke(app, ["traces", "show", run.run_id, "--runs-dir", str(tmp_path)], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "unparseable" in res.output and "[red]" not in res.output and "[/]" not in res.output


# -- records that survive faults -------------------------------------------------------------------
def _copy_run(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_a_newer_schema_version_is_refused_and_older_ones_read(runs, tmp_path):
    from agent_runtime.errors import TraceError

    root, (ok, _) = runs
    run_dir = _copy_run(ok.run_dir, tmp_path / "runs" / ok.run_dir.name)
    lines = (run_dir / "steps.jsonl").read_text(encoding="utf-8").split("\n")
    older = json.loads(lines[0]) | {"schema_version": 0}
    (run_dir / "steps.jsonl").write_text(json.dumps(older) + "\n", encoding="utf-8")
    assert load_run(run_dir).steps[0].schema_version == 0  # older: read
    newer = json.loads(lines[0]) | {"schema_version": 99}
    (run_dir / "steps.jsonl").write_text(json.dumps(newer) + "\n", encoding="utf-8")
    with pytest.raises(TraceError, match="newer agent-runtime .schema_version 99") as refused:
        load_run(run_dir)
    assert "upgrade agent-runtime" in refused.value.hint
    res = runner.invoke(app, ["traces", "show", ok.run_id, "--runs-dir", str(tmp_path / "runs")])
    said = " ".join(res.output.split())  # the message wraps at the terminal's width
    assert res.exit_code == 1 and "schema_version 99" in said and "Traceback" not in res.output
    run_json = json.loads((run_dir / "run.json").read_text()) | {"schema_version": 99}
    (run_dir / "run.json").write_text(json.dumps(run_json))
    res = runner.invoke(app, ["traces", "list", "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 0 and "unreadable" in res.output


def test_separators_and_lone_surrogates_keep_one_record_per_line(tmp_path):
    from agent_runtime.traces import CallRecord, RunRecord, StepRecord, TraceWriter

    nasty = "a\u2028b\u2029c\u0085d\x1ce\x0bf\r\ng \ud83d h \ude00 \U0001f600"
    with TraceWriter(tmp_path, sensitive=["hunter2"]) as w:
        w.write_run(RunRecord(run_id="r", task="t", answer=nasty))
        w.append_call(CallRecord(run_id="r", step=0, role="worker", completion=nasty + " hunter2"))
        w.append_step(StepRecord(step=0, thought=nasty))
        w.append_step(StepRecord(step=1, thought="last"))
        w.sync()
    for name in ("calls.jsonl", "steps.jsonl"):
        raw = (tmp_path / name).read_bytes()
        assert raw.decode("utf-8").splitlines() == raw.decode("utf-8").split("\n")[:-1]  # one per line
    run = load_run(tmp_path)
    assert run.run.answer == nasty and run.steps[0].thought == nasty and [s.step for s in run.steps] == [0, 1]
    assert run.calls[0].completion == nasty + " [REDACTED]"  # the reply is kept, lone surrogate and all


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path):
    from agent_runtime.traces import StepRecord, TraceWriter

    with TraceWriter(tmp_path) as w:
        w.append_step(StepRecord(step=0))
    steps = tmp_path / "steps.jsonl"
    with steps.open("a") as fh:
        fh.write('{"schema_version": 1, "step": 1, "thou')  # killed mid-write
    torn = load_run_dir(tmp_path)
    assert [s.step for s in torn.steps] == [0] and "torn" in torn.problems[0]
    with TraceWriter(tmp_path) as w:  # what a resume opens
        w.append_step(StepRecord(step=1))
    assert [s.step for s in load_run_dir(tmp_path).steps] == [0, 1]
    assert (tmp_path / "steps.jsonl.torn").read_text().startswith('{"schema_version": 1, "step": 1')
    # A whole record that only lost its newline is kept.
    with steps.open("a") as fh:
        fh.write(json.dumps({"schema_version": 1, "step": 2}))
    with TraceWriter(tmp_path) as w:
        w.append_step(StepRecord(step=3))
    assert [s.step for s in load_run_dir(tmp_path).steps] == [0, 1, 2, 3]


def load_run_dir(path):
    from agent_runtime.traces import RunRecord

    if not (path / "run.json").exists():
        (path / "run.json").write_text(RunRecord(run_id="r", task="t").model_dump_json())
    return load_run(path)


def test_binary_calls_and_garbage_lines_are_trace_errors_not_tracebacks(runs, tmp_path):
    root, (ok, _) = runs
    run_dir = _copy_run(ok.run_dir, tmp_path / "runs" / ok.run_dir.name)
    (run_dir / "calls.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary")
    res = runner.invoke(app, ["traces", "show", ok.run_id, "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 1 and "not a trace file" in res.output and "Traceback" not in res.output
    (run_dir / "calls.jsonl").write_text('garbage\n{"run_id": "x", "step": 0, "role": "w"}\n')
    res = runner.invoke(app, ["traces", "show", ok.run_id, "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 1 and "calls.jsonl:1 is not a valid CallRecord" in res.output
