"""No input from a person can crash a run, and a reply that cannot be taken leaves the request
pending and the run ``waiting`` — never ``running``, never ``error``.

Through the CLI (real subprocesses, stdin as bytes): the confirm prompt shows ``[y]es / [n]o
[reason] / [t]ake over`` literally; an unexpected answer, invalid UTF-8, a line over 10,000
characters or over the 1 MiB cap, a line cut inside a character — each is asked again, and the
trace keeps a bounded prefix of the refused lines, marked as cut. Through Python: a reply of the
wrong kind is refused with the run still waiting; a failure while the reply is applied leaves the
request pending, asked again on the next resume (not answered by the failed reply).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.cli.typed import MAX_LINE_BYTES, decode_line
from agent_runtime.control import InputReply, InputRequest
from agent_runtime.errors import ConfigError, DeviceError
from agent_runtime.events import RunFinished
from agent_runtime.observation import Observation
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run, read_run_record
from tests.doubles import ScriptedOpenAIServer, gui_owl_reply
from tests.test_graphs import write_config
from tests.test_human import SEND, SEND_SEED, drive, send_script, send_task, team
from tests.test_run_cli import CLI

ASK = {"action": "interact", "text": "Which alarm do you mean?"}


def cli_with_stdin(tmp_path: Path, args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], cwd=tmp_path, input=stdin, capture_output=True, timeout=180)


def the_run(tmp_path: Path) -> Any:
    [run_dir] = (tmp_path / "runs").iterdir()
    return load_run(run_dir)


def test_cli_confirm_prompt_is_literal_and_bad_answers_are_asked_again(tmp_path: Path) -> None:
    """Before: the prompt read ``approve? es / o  / ake over:``; 12,000 characters or invalid
    UTF-8 ended in a traceback with the run left ``running``; "maybe" silently rejected."""
    typed = b"maybe\n" + b"\xff\xfe\xc0\n" + b"x" * 12_000 + b"\n" + b"y\n"
    with ScriptedOpenAIServer(send_script()) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        args = ["run", "--task-id", f"{SEND}/{SEND_SEED}", "--config", str(cfg), "--runs-dir", "runs"]
        p = cli_with_stdin(tmp_path, args, typed)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0, err
    assert "Traceback" not in err
    assert err.count("approve? [y]es / [n]o [reason] / [t]ake over: ") == 4, err
    assert err.count("please answer y (run it), n [reason] (do not run it) or t (take over") == 2, err
    assert "that reply was not taken: 12,000 characters, over the 10,000-character limit" in " ".join(
        err.split()
    )
    run = the_run(tmp_path)
    assert run.run.status == "completed" and run.run.verification.success is True
    [record] = run.interventions
    assert (record.decision, record.by) == ("approve", "person")
    [cut] = record.refused
    assert cut == "x" * 200 + "… [cut: 12,000 characters, over the 10,000-character limit]"


def test_cli_answer_over_the_cap_or_torn_is_asked_again_and_kept_cut_in_the_trace(tmp_path: Path) -> None:
    """Before: a reply cut inside a multi-byte character ended the run in error; one over the
    1 MiB cap left nothing of it in the trace."""
    huge = "é".encode() * (MAX_LINE_BYTES // 2 + 1000)  # ~1 MiB + 2 KB, no newline until the end
    torn = "the 10:05 PM café".encode()[:-1]  # ends inside "é"
    typed = huge + b"\n" + torn + b"\n" + "the 10:05 PM one ✓".encode() + b"\n"
    script = {
        "single": [
            gui_owl_reply(ASK, "ask"),
            gui_owl_reply({"action": "terminate", "status": "success"}, "ok"),
        ]
    }
    with ScriptedOpenAIServer(script) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, '[graph]\nkind = "single"\n')
        args = [
            "run",
            "Toggle my alarm",
            "--device",
            "simphone:1",
            "--config",
            str(cfg),
            "--runs-dir",
            "runs",
        ]
        p = cli_with_stdin(tmp_path, args, typed)
    err = p.stderr.decode(errors="replace")
    assert "Traceback" not in err
    run = the_run(tmp_path)
    assert run.run.status == "completed", err  # (no template's check: exit code 1 is the check's)
    [record] = run.interventions
    assert (record.decision, record.text) == ("answer", "the 10:05 PM one ✓")
    over, cut = record.refused
    assert over.startswith("é" * 200 + "… [cut: 1,050,") and over.endswith(
        "bytes, over the 1,048,576-byte limit]"
    )
    assert cut == "the 10:05 PM caf… [cut: it ends inside a multi-byte character (the input was cut)]"


def test_typed_lines_are_decoded_tolerantly() -> None:
    assert decode_line(b"caf\xc3\xa9").text == "café"
    assert decode_line(b"\xff y").text == "\ufffd y" and not decode_line(b"\xff y").refused
    assert decode_line(b"caf\xc3").refused and decode_line(b"caf\xc3").text == "caf"
    assert decode_line(b"a" * 10_000).refused == ""
    assert "10,001 characters" in decode_line(b"a" * 10_001).refused


# -- Python: replies of the wrong kind --------------------------------------------------------
def waiting_send_run(tmp_path: Path) -> tuple[Any, Any]:
    runtime, model = team(tmp_path, send_script())
    _, final = drive(
        runtime.stream(send_task().goal, device=f"simphone:{SEND_SEED}", interactive=True), runtime, []
    )
    assert final.status == "waiting"
    return final, model


def test_resume_with_the_wrong_kind_of_reply_is_refused_and_the_run_still_waits(tmp_path: Path) -> None:
    """Before: ``resume(reply=InputReply.answer(...))`` to a confirmation made the run ``error``."""
    waiting, model = waiting_send_run(tmp_path)
    run_json = Path(waiting.run_dir) / "run.json"
    before = run_json.read_bytes()
    again, _ = team(tmp_path, {}, model)
    with pytest.raises(ConfigError, match="a confirm request cannot be answered with 'answer'"):
        again.resume(waiting.run_id, reply=InputReply.answer("the 7 AM one"))
    assert run_json.read_bytes() == before  # refused before anything was written
    assert read_run_record(run_json).status == "waiting"
    done = again.resume(waiting.run_id, reply=InputReply.approve())
    assert done.status == "completed" and done.verified is True


def test_respond_with_the_wrong_kind_of_reply_leaves_the_run_waiting(tmp_path: Path) -> None:
    runtime, model = team(tmp_path, send_script())
    asked, final = drive(
        runtime.stream(send_task().goal, device=f"simphone:{SEND_SEED}", interactive=True),
        runtime,
        [InputReply.resume()],
    )
    assert [r.kind for r in asked] == ["confirm"]
    assert final.status == "waiting", final
    assert "cannot be answered with 'resume'" in final.reason
    assert read_run_record(Path(final.run_dir) / "run.json").status == "waiting"
    again, _ = team(tmp_path, {}, model)
    asked_again, done = drive(
        again.stream_resume(final.run_id, interactive=True), again, [InputReply.approve()]
    )
    assert [r.id for r in asked_again] == [asked[0].id] and done.status == "completed"


# -- Python: a failure while the reply is applied ---------------------------------------------
class LosesItsScreen(SimPhone):
    """A SimPhone whose next look fails once ``lose`` is set (the device went away as the person
    handed it back)."""

    lose = False

    def observe(self) -> Observation:
        if self.lose:
            self.lose = False
            raise DeviceError("the phone stopped answering")
        return super().observe()


def test_a_failure_applying_the_reply_leaves_the_request_pending_and_asked_again(tmp_path: Path) -> None:
    """The person takes over; looking at the phone afterwards fails. The run waits (not error,
    not running) and the next resume asks again — it does not replay the failed takeover."""
    runtime, model = team(tmp_path, send_script())
    phone = LosesItsScreen(seed=SEND_SEED)
    send_task().setup(phone)

    def take_over(request: InputRequest) -> InputReply:
        phone.lose = True
        return InputReply.takeover()

    result = runtime.run(send_task().goal, device=phone, on_input=take_over)
    assert result.status == "waiting", result.reason
    assert "the last reply could not be taken: the phone stopped answering" in result.reason
    assert read_run_record(Path(result.run_dir) / "run.json").status == "waiting"
    assert load_run(result.run_dir).interventions == []
    seen: list[str] = []

    def approve(request: InputRequest) -> InputReply:
        seen.append(request.kind)
        return InputReply.approve()

    again, _ = team(tmp_path, {}, model)
    done = again.resume(result.run_id, device=phone, on_input=approve)
    assert seen == ["confirm"] and done.status == "completed", done.reason
    [record] = load_run(done.run_dir).interventions
    assert record.decision == "approve"
    phone.close()


def test_a_stream_left_at_its_question_waits(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, send_script())
    events = runtime.stream(send_task().goal, device=f"simphone:{SEND_SEED}", interactive=True)
    for event in events:
        assert not isinstance(event, RunFinished)
        if event.type == "input_requested":
            break
    events.close()
    [run_dir] = tmp_path.iterdir()
    assert read_run_record(run_dir / "run.json").status == "waiting"


def test_mcp_reply_over_the_limit_is_asked_again_not_a_tool_error(tmp_path: Path) -> None:
    """Before: a reason over 10,000 characters gave the client only "Error executing tool
    run_task" and left the run ``running``."""
    pytest.importorskip("mcp", reason="needs the 'mcp' extra")
    import mcp_types

    from tests.test_graphs import oracle_actions, script_for
    from tests.test_mcp import with_client

    asked: list[str] = []

    async def elicitation(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        content = (
            {"approve": False, "reason": "z" * 12_000} if len(asked) == 1 else {"approve": True, "reason": ""}
        )
        return mcp_types.ElicitResult(action="accept", content=content)

    seen: dict[str, Any] = {}

    async def body(session: Any) -> None:
        goal = send_task().goal
        seen["run"] = await session.call_tool("run_task", {"task": goal, "device": f"simphone:{SEND_SEED}"})

    with ScriptedOpenAIServer(script_for("single", oracle_actions(SEND, SEND_SEED))) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, '[graph]\nkind = "single"\n')
        with_client(tmp_path, ["--config", str(cfg), "--runs-dir", "runs"], body, elicitation=elicitation)

    assert not seen["run"].is_error, seen["run"].content
    summary = seen["run"].structured_content
    assert summary["status"] == "completed", summary
    assert len(asked) == 2 and asked[1].startswith("Your reply was not taken: the reply is 12,000 characters")
    [record] = load_run(tmp_path / summary["run_dir"]).interventions
    assert record.decision == "approve"
    assert record.refused == [
        "z" * 200 + "… [cut: the reply is 12,000 characters, over the 10,000-character limit]"
    ]
