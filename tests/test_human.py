"""A person in the loop, through every surface: Python events + respond, the on_input callback
(sync and async), resume with a reply, the CLI over stdin; and unattended runs' stated defaults.

The runs play SimPhone task instances with scripted models replaying the oracle, so each run is
checked by SimPhone at its end: ``MessagesSendToNumber`` taps "Send SMS" (sensitive by rule, on
task), ``ClockToggleAlarm`` needs nothing confirmed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig, SafetyConfig
from agent_runtime.control import NO_ANSWER, InputReply, InputRequest
from agent_runtime.events import InputAnswered, InputRequested, RunFinished, StepStarted
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.tasks.messages import sent
from agent_runtime.simphone.tasks.registry import make_task
from agent_runtime.traces import load_run, read_run_record
from tests.doubles import ScriptedChatModel, ScriptedOpenAIServer, gui_owl_reply, manager_reply
from tests.test_graphs import oracle_actions, script_for, write_config
from tests.test_run_cli import CLI, cli

SEND, SEND_SEED = "MessagesSendToNumber", 0
OFF = RoleConfig(enabled=False)


def send_task() -> Any:
    return make_task(SEND, SEND_SEED)


def team(
    tmp_path: Path, script: dict[str, Any], model: ScriptedChatModel | None = None, **safety: Any
) -> tuple[Runtime, ScriptedChatModel]:
    """A Mobile-Agent-v3 runtime on scripted models (``model``: go on with its script)."""
    cfg = RuntimeConfig(
        roles={"rag": OFF, "notetaker": OFF},
        graph=GraphConfig(max_steps=15),
        safety=SafetyConfig(**safety),
    )
    model = model or ScriptedChatModel(script=script)
    roles = ("manager", "worker", "reflector", "single")
    return Runtime(cfg, models={r: model for r in roles}, runs_dir=tmp_path), model


def send_script() -> dict[str, Any]:
    return script_for("mobile_agent_v3", oracle_actions(SEND, SEND_SEED))


def drive(events: Any, runtime: Runtime, replies: list[InputReply]) -> tuple[list[InputRequest], RunFinished]:
    """Consume a stream, answering its requests in order with ``replies`` (none left: leave it)."""
    asked: list[InputRequest] = []
    final = None
    for event in events:
        if isinstance(event, InputRequested):
            asked.append(event.request)
            if replies:
                runtime.respond(event.request.id, replies.pop(0))
        if isinstance(event, RunFinished):
            final = event
    assert final is not None
    return asked, final


# -- confirm ----------------------------------------------------------------------------------
def test_sensitive_tap_waits_for_approval_through_stream_events(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, send_script())
    task = send_task()
    asked, final = drive(
        runtime.stream(task.goal, device=f"simphone:{SEND_SEED}", interactive=True),
        runtime,
        [InputReply.approve()],
    )
    assert [r.kind for r in asked] == ["confirm"]
    request = asked[0]
    assert "Send SMS" in request.target and any("send" in r.lower() for r in request.sensitive)
    assert request.off_task == []  # the task asks to text that number
    assert final.status == "completed"
    loaded = load_run(final.run_dir)
    assert loaded.run.verification is not None and loaded.run.verification.success is True
    confirmed = [s for s in loaded.steps if s.confirmation]
    assert len(confirmed) == 1 and confirmed[0].confirmation["decision"] == "approve"
    assert confirmed[0].confirmation["by"] == "person" and confirmed[0].action_result["ok"]
    [record] = loaded.interventions
    assert (record.kind, record.decision, record.by, record.request_id) == (
        "confirm",
        "approve",
        "person",
        request.id,
    )


def test_rejection_is_not_executed_and_reaches_the_manager(tmp_path: Path) -> None:
    runtime, model = team(tmp_path, send_script())
    phone = SimPhone(seed=SEND_SEED)
    task = send_task()
    task.setup(phone)
    asked, final = drive(
        runtime.stream(task.goal, device=phone, interactive=True),
        runtime,
        [InputReply.reject("only draft it")] * 9,
    )
    assert asked and {r.kind for r in asked} == {"confirm"} and final.status != "waiting"
    assert not sent(phone, task.params["text"], number=task.params["number"])
    loaded = load_run(final.run_dir)
    rejected = next(s for s in loaded.steps if s.confirmation)
    assert rejected.action_result is None and rejected.verdict is not None and not rejected.verdict.success
    assert "rejected this action: only draft it" in rejected.verdict.feedback
    after = [c.prompt for c in model.calls_for("manager") if "only draft it" in c.prompt]
    assert after, "the Manager never read the rejection"
    assert "### Last Action ###" in after[0] and "Failed" in after[0]
    phone.close()


def test_takeover_instead_of_the_action_records_the_segment(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, send_script())
    phone = SimPhone(seed=SEND_SEED)
    task = send_task()
    task.setup(phone)
    final = None
    for event in runtime.stream(task.goal, device=phone, interactive=True):
        if isinstance(event, InputRequested):
            # The person sends it themselves: tap "Send SMS" by its centre.
            button = next(e for e in phone.observe().elements if e.label == "Send SMS")
            from agent_runtime.actions import Click

            assert phone.execute(Click(coordinate=button.bounds.center)).ok
            runtime.respond(event.request.id, InputReply.takeover())
        final = event if isinstance(event, RunFinished) else final
    assert final is not None and sent(phone, task.params["text"], number=task.params["number"])
    loaded = load_run(final.run_dir)
    [segment] = loaded.interventions
    assert segment.kind == "confirm" and segment.decision == "takeover"
    assert segment.before_screen and segment.after_screen and segment.before_screen != segment.after_screen
    assert loaded.screen(segment.before_screen) != loaded.screen(segment.after_screen)
    [step] = [s for s in loaded.steps if s.confirmation]
    assert step.action_result is None and step.after_screen == segment.after_screen
    phone.close()


def test_pause_hands_the_device_over_and_the_agent_looks_again(tmp_path: Path) -> None:
    """``pause()`` during step 0: step 1 starts with a takeover; the person opens Clock; the
    next Worker call sees the new screen, and the trace has the segment."""
    runtime, model = team(tmp_path, send_script())
    phone = SimPhone(seed=SEND_SEED)
    task = send_task()
    task.setup(phone)
    kinds = []
    for event in runtime.stream(task.goal, device=phone, interactive=True):
        if isinstance(event, StepStarted) and event.step == 0:
            runtime.pause()
        if isinstance(event, InputRequested):
            kinds.append(event.request.kind)
            if event.request.kind == "takeover":
                from agent_runtime.actions import SystemButton

                assert phone.execute(SystemButton(button="Home")).ok
                runtime.respond(event.request.id, InputReply.resume())
            else:
                runtime.respond(event.request.id, InputReply.approve())
    assert kinds[0] == "takeover"
    run_dir = next(tmp_path.iterdir())
    loaded = load_run(run_dir)
    pause = loaded.interventions[0]
    assert pause.kind == "takeover" and pause.step == 1 and pause.decision == "resume"
    assert pause.after_screen and pause.after_screen != pause.before_screen
    # The step after the pause was decided on the screen the person left (the home screen).
    assert loaded.steps[1].before_screen == pause.after_screen


# -- resume -----------------------------------------------------------------------------------
def test_pending_confirmation_survives_a_resume(tmp_path: Path) -> None:
    runtime, model = team(tmp_path, send_script())
    task = send_task()
    asked, final = drive(
        runtime.stream(task.goal, device=f"simphone:{SEND_SEED}", interactive=True), runtime, []
    )
    assert final.status == "waiting" and "Send SMS" in final.reason
    assert read_run_record(Path(final.run_dir) / "run.json").status == "waiting"
    # A new runtime (as after a restart): the same request is still pending.
    again, _ = team(tmp_path, {}, model)
    asked_again, done = drive(
        again.stream_resume(final.run_id, interactive=True), again, [InputReply.approve()]
    )
    assert [r.id for r in asked_again] == [asked[0].id]
    assert done.status == "completed"
    run = load_run(done.run_dir)
    assert run.run.verification is not None and run.run.verification.success is True
    assert [i.request_id for i in run.interventions] == [asked[0].id]


def test_resume_with_a_reply_and_async_resume(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, send_script())
    task = send_task()
    _, waiting = drive(
        runtime.stream(task.goal, device=f"simphone:{SEND_SEED}", interactive=True), runtime, []
    )
    result = runtime.resume(waiting.run_id, reply=InputReply.reject("no"))
    assert result.status != "waiting"
    rejected = next(s for s in load_run(result.run_dir).steps if s.confirmation)
    assert rejected.verdict is not None and "rejected this action: no" in rejected.verdict.feedback
    # aresume answers through an async callback.
    runtime2, _ = team(tmp_path / "b", send_script())
    _, waiting2 = drive(
        runtime2.stream(task.goal, device=f"simphone:{SEND_SEED}", interactive=True), runtime2, []
    )
    seen: list[str] = []

    async def on_input(request: InputRequest) -> InputReply:
        seen.append(request.kind)
        await asyncio.sleep(0)
        return InputReply.approve()

    done = asyncio.run(runtime2.aresume(waiting2.run_id, on_input=on_input))
    assert seen == ["confirm"] and done.status == "completed" and done.verified is True


def test_a_reply_the_request_does_not_accept_is_a_clear_error() -> None:
    request = InputRequest(id="r/1", run_id="r", kind="ask", step=0, question="which?")
    with pytest.raises(Exception, match="cannot be answered with 'approve'"):
        InputReply.approve().check(request)


# -- ask --------------------------------------------------------------------------------------
ASK = {"action": "interact", "text": "Which alarm do you mean?"}


def single_runtime(tmp_path: Path, replies: list[str]) -> tuple[Runtime, ScriptedChatModel]:
    cfg = RuntimeConfig(roles={"rag": OFF}, graph=GraphConfig(kind="single", max_steps=6))
    model = ScriptedChatModel(script={"single": lambda call: replies[min(call.index, len(replies) - 1)]})
    return Runtime(cfg, models={"single": model}, runs_dir=tmp_path), model


def test_ask_user_answer_reaches_the_next_prompt_and_the_trace(tmp_path: Path) -> None:
    done = gui_owl_reply({"action": "terminate", "status": "success"}, "done")
    runtime, model = single_runtime(tmp_path, [gui_owl_reply(ASK, "ask"), done])
    result = runtime.run(
        "Toggle my alarm", device="simphone:1", on_input=lambda r: InputReply.answer("the 10:05 PM one")
    )
    assert result.status == "completed"
    second = model.calls_for("single")[1].prompt
    assert "Which alarm do you mean?" in second and "the 10:05 PM one" in second
    loaded = load_run(result.run_dir)
    [ask] = loaded.interventions
    assert (ask.kind, ask.question, ask.text, ask.by) == (
        "ask",
        "Which alarm do you mean?",
        "the 10:05 PM one",
        "person",
    )
    assert loaded.steps[0].verdict is not None and loaded.steps[0].verdict.success


def test_unattended_ask_gets_the_stated_default(tmp_path: Path) -> None:
    done = gui_owl_reply({"action": "terminate", "status": "failure"}, "cannot")
    runtime, model = single_runtime(tmp_path, [gui_owl_reply(ASK, "ask"), done])
    result = runtime.run("Toggle my alarm", device="simphone:1")
    assert result.status == "failed"
    assert NO_ANSWER in model.calls_for("single")[1].prompt
    [ask] = load_run(result.run_dir).interventions
    assert ask.by == "default" and ask.text == NO_ANSWER


def test_worker_ask_user_alias_in_the_team(tmp_path: Path) -> None:
    from tests.doubles import reflector_reply, worker_reply

    script = {
        "manager": lambda c: (
            manager_reply(["Ask which alarm"]) if c.index == 0 else manager_reply("Finished")
        ),
        "worker": worker_reply({"action": "ask_user", "text": "Which one?"}, "ask"),
        "reflector": reflector_reply("A"),
    }
    runtime, model = team(tmp_path, script)
    result = runtime.run("Toggle my alarm", device="simphone:1", on_input=lambda r: InputReply.answer("7 AM"))
    assert result.status == "completed"
    assert "7 AM" in model.calls_for("manager")[1].prompt


# -- unattended -------------------------------------------------------------------------------
def test_unattended_on_task_sensitive_action_is_approved_by_the_guard(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, send_script())
    result = runtime.run(send_task().goal, device=f"simphone:{SEND_SEED}")
    assert result.status == "completed" and result.verified is True
    [step] = [s for s in load_run(result.run_dir).steps if s.confirmation]
    assert step.confirmation == {
        "decision": "approve",
        "by": "guard",
        "reasons": step.confirmation["reasons"],
    }


def off_task_script() -> dict[str, Any]:
    """A compromised Worker: in a Clock task it leaves for the Shop."""
    from tests.doubles import reflector_reply, worker_reply

    return {
        "manager": lambda c: (
            manager_reply(["Turn off the alarm"]) if c.index == 0 else manager_reply("Finished")
        ),
        "worker": worker_reply({"action": "open_app", "text": "Shop"}, "open the shop"),
        "reflector": reflector_reply("A"),
    }


def test_unattended_off_task_action_is_denied_and_recorded(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, off_task_script())
    phone = SimPhone(seed=1)
    events = list(runtime.stream("Turn off the 10:05 PM alarm", device=phone))
    answered = [e for e in events if isinstance(e, InputAnswered)]
    assert [(a.decision, a.by) for a in answered] == [("reject", "default")]
    assert "shop" not in (phone.observe().app or "").lower()
    final = events[-1]
    assert isinstance(final, RunFinished)
    [step] = [s for s in load_run(final.run_dir).steps if s.confirmation]
    assert step.action_result is None and step.confirmation["by"] == "default"
    assert any("Shop" in r for r in step.confirmation["reasons"])
    phone.close()


def test_yes_approves_even_off_task_actions(tmp_path: Path) -> None:
    runtime, _ = team(tmp_path, off_task_script(), unattended="approve")
    phone = SimPhone(seed=1)
    result = runtime.run("Turn off the 10:05 PM alarm", device=phone)
    [step] = [s for s in load_run(result.run_dir).steps if s.confirmation]
    assert step.confirmation["by"] == "yes" and step.action_result["ok"]
    assert "shop" in (phone.observe().app or "").lower()
    phone.close()


# -- the CLI over stdin -----------------------------------------------------------------------
def start_cli(cwd: Path, args: list[str]) -> subprocess.Popen[bytes]:
    """``agent-runtime ARGS`` with pipes for stdin (the person's answers), stdout and stderr."""
    pipe = subprocess.PIPE
    return subprocess.Popen([*CLI, *args], cwd=cwd, stdin=pipe, stderr=pipe, stdout=pipe)


def read_until(
    proc: subprocess.Popen[bytes], marker: bytes, seen: bytes = b"", timeout: float = 120
) -> bytes:
    """``proc``'s stderr so far (``seen`` plus what follows), read until ``marker`` shows up, the
    stream ends or ``timeout`` passes."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    return seen


def test_cli_asks_on_stdin_and_a_killed_prompt_is_still_pending_after_resume(tmp_path: Path) -> None:
    """``run`` prompts for the Send tap on stdin; killed at the prompt (SIGKILL), ``--resume``
    asks again, and "y" completes the checked task."""
    with ScriptedOpenAIServer(send_script()) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        args = ["run", "--task-id", f"{SEND}/{SEND_SEED}", "--config", str(cfg), "--runs-dir", "runs"]
        proc = start_cli(tmp_path, args)
        seen = read_until(proc, b"approve?")
        assert b"approve?" in seen and b"Send SMS" in seen, seen.decode(errors="replace")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        [run_dir] = (tmp_path / "runs").iterdir()
        p = subprocess.run(
            [*CLI, "run", "--resume", run_dir.name, "--config", str(cfg), "--runs-dir", "runs"],
            cwd=tmp_path,
            input="y\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert p.returncode == 0, p.stderr
    assert "approve?" in p.stderr and "verified" in p.stderr
    [record] = load_run(run_dir).interventions
    assert record.decision == "approve" and record.by == "person"


def test_cli_json_is_unattended_and_no_prompt_is_shown(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(send_script()) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        p = cli(
            "run",
            "--task-id",
            f"{SEND}/{SEND_SEED}",
            "--config",
            str(cfg),
            "--runs-dir",
            "runs",
            "--json",
            cwd=tmp_path,
        )
    assert p.returncode == 0, p.stderr
    assert "approve?" not in p.stderr
    out = json.loads(p.stdout)
    [record] = load_run(tmp_path / out["run_dir"]).interventions
    assert (record.decision, record.by) == ("approve", "guard")


# -- the roles' own flags ---------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["worker", "manager"])
def test_the_worker_or_the_manager_can_ask_for_a_confirmation(tmp_path: Path, flag: str) -> None:
    """An action no rule finds sensitive (opening Clock in a Clock task) waits for the person when
    the Worker writes "confirm": true, or the Manager's subgoal starts with [confirm]."""
    from tests.doubles import reflector_reply, worker_reply

    subgoal = "[confirm] Open Clock" if flag == "manager" else "Open Clock"
    action = {"action": "open_app", "text": "Clock", **({"confirm": True} if flag == "worker" else {})}
    script = {
        "manager": lambda c: manager_reply([subgoal]) if c.index == 0 else manager_reply("Finished"),
        "worker": worker_reply(action, "open Clock"),
        "reflector": reflector_reply("A"),
    }
    runtime, _ = team(tmp_path, script)
    asked: list[InputRequest] = []

    def decide(request: InputRequest) -> InputReply:
        asked.append(request)
        return InputReply.approve()

    result = runtime.run("Turn off the 10:05 PM alarm", device="simphone:1", on_input=decide)
    assert [r.kind for r in asked] == ["confirm"] and asked[0].off_task == []
    who = "Worker" if flag == "worker" else "Manager"
    assert asked[0].sensitive == [f"flagged by the {who}"]
    step = next(s for s in load_run(result.run_dir).steps if s.confirmation)
    assert step.action_result is not None and step.action_result["ok"]


def test_cli_ctrl_backslash_pauses_for_a_takeover(tmp_path: Path) -> None:
    """Ctrl-\\ (SIGQUIT) once the first plan is shown: step 0 starts with the device handed over;
    Enter on stdin hands it back and the checked task completes."""
    with ScriptedOpenAIServer(script_for("mobile_agent_v3", oracle_actions())) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url)
        args = ["run", "--task-id", "ClockToggleAlarm/1", "--config", str(cfg), "--runs-dir", "runs"]
        proc = start_cli(tmp_path, args)
        seen = read_until(proc, b"plan ")
        os.kill(proc.pid, signal.SIGQUIT)
        seen = read_until(proc, b"hand the device back", seen)
        assert proc.stdin is not None
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        _, rest = proc.communicate(timeout=120)
        err = (seen + rest).decode(errors="replace")
    assert proc.returncode == 0, err
    [run_dir] = (tmp_path / "runs").iterdir()
    loaded = load_run(run_dir)
    [pause] = loaded.interventions
    assert (pause.kind, pause.decision, pause.by, pause.step) == ("takeover", "resume", "person", 0), err
    assert loaded.steps[0].before_screen == pause.after_screen


def test_a_bad_reply_from_on_input_is_a_clear_error_and_the_request_stays_pending(tmp_path: Path) -> None:
    runtime, model = team(tmp_path, send_script())
    task = send_task()
    result = runtime.run(task.goal, device=f"simphone:{SEND_SEED}", on_input=lambda r: "yes")  # type: ignore[arg-type,return-value]
    # Refused, not an error: the request is still pending and the run waits for a proper reply.
    assert result.status == "waiting" and result.error is not None
    assert read_run_record(Path(result.run_dir) / "run.json").status == "waiting"
    assert "not a reply to the run's request: 'yes'" in result.error["message"]
    assert "InputReply.approve()" in result.error["hint"]
    again, _ = team(tmp_path, {}, model)
    done = again.resume(result.run_id, on_input=lambda r: {"decision": "approve"})  # type: ignore[arg-type,return-value]
    assert done.status == "completed" and done.verified is True


def test_a_time_budget_does_not_count_the_persons_time(tmp_path: Path) -> None:
    """The person takes longer than the whole time budget to answer; the run goes on after the
    answer (the budget is checked between steps) and ends as the model says."""
    from agent_runtime.config import BudgetConfig

    done = gui_owl_reply({"action": "terminate", "status": "success"}, "done")
    runtime, _ = single_runtime(tmp_path, [gui_owl_reply(ASK, "ask"), done])
    runtime.config.budget = BudgetConfig(time_s=3)

    def slow_person(request: InputRequest) -> InputReply:
        time.sleep(3.5)
        return InputReply.answer("the 10:05 PM one")

    result = runtime.run("Toggle my alarm", device="simphone:1", on_input=slow_person)
    assert result.status == "completed", result.reason
