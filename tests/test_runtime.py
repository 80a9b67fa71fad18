"""The Python API: resume after a crash, isolation between runtimes, redaction, async, errors."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from agent_runtime.actions import Action, ActionResult
from agent_runtime.config import MemoryConfig, RoleConfig, RuntimeConfig
from agent_runtime.coords import Size
from agent_runtime.device import Device, DeviceInfo
from agent_runtime.errors import ConfigError, DeviceError, TraceError
from agent_runtime.events import Notice, RunFinished, RunStarted
from agent_runtime.observation import Observation
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, notetaker_reply, worker_reply
from tests.test_graph import SETTINGS, make_config, phone_with_wifi_off, wifi_manager, wifi_worker

ROLES = ("manager", "worker", "reflector", "notetaker")


class FlakyDevice(Device):
    """Test double: a SimPhone that dies (like a killed process) or errors on one execute call."""

    kind = "simphone"
    platform = "mobile"

    def __init__(self, phone: SimPhone, *, fail_on: int, exc: BaseException) -> None:
        self.phone = phone
        self.fail_on = fail_on
        self.exc = exc
        self.executed = 0

    @property
    def screen_size(self) -> Size:
        return self.phone.screen_size

    def observe(self) -> Observation:
        return self.phone.observe()

    def execute(self, action: Action) -> ActionResult:
        self.executed += 1
        if self.executed == self.fail_on:
            raise self.exc
        return self.phone.execute(action)

    def info(self) -> DeviceInfo:
        return self.phone.info()


def wifi_script(phone):
    return {
        "manager": wifi_manager(phone),
        "worker": wifi_worker(phone),
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("- nothing special"),
    }


def runtime_for(script, tmp_path, config=None, **model_kw):
    model = ScriptedChatModel(script=script, **model_kw)
    return Runtime(config or make_config(), models=dict.fromkeys(ROLES, model), runs_dir=tmp_path), model


def test_resume_after_a_kill_mid_execute(tmp_path):
    phone = phone_with_wifi_off()
    rt, _ = runtime_for(wifi_script(phone), tmp_path)
    with pytest.raises(KeyboardInterrupt):
        rt.run("Turn on Wi-Fi", device=FlakyDevice(phone, fail_on=2, exc=KeyboardInterrupt()))
    (run_dir,) = list(tmp_path.iterdir())
    killed = load_run(run_dir)
    assert killed.run.status == "running" and [s.step for s in killed.steps] == [0]

    # A new process would see a fresh phone: resume there (the SimPhone died with the process).
    fresh = phone_with_wifi_off()
    rt2, _ = runtime_for(wifi_script(fresh), tmp_path)
    events = list(rt2.stream_resume(run_dir.name, device=fresh))
    assert isinstance(events[0], RunStarted) and events[0].resumed
    assert any(isinstance(e, Notice) and "decides again" in e.message for e in events)
    end = events[-1]
    assert isinstance(end, RunFinished) and end.status == "completed" and end.success
    assert fresh.app(SETTINGS).state.wifi
    done = load_run(run_dir)
    steps = [s.step for s in done.steps]
    assert steps == sorted(set(steps)) and steps[0] == 0  # no step written twice
    assert done.run.status == "completed" and done.run.run_id == run_dir.name
    # The resumed run re-observed the (new) device instead of trusting the stale screen.
    assert any("-r" in (s.before_screen or "") for s in done.steps)


def test_resume_after_a_kill_in_the_reflector_rejudges_from_saved_screens(tmp_path):
    phone = phone_with_wifi_off()
    crashed = {"n": 0}

    def reflect(call):
        crashed["n"] += 1
        if crashed["n"] == 2:
            raise KeyboardInterrupt
        return "### Outcome ###\nA"

    script = wifi_script(phone) | {"reflector": reflect}
    rt, _ = runtime_for(script, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        rt.run("Turn on Wi-Fi", device=phone)
    (run_dir,) = list(tmp_path.iterdir())
    # Same phone (think: a real device that outlived the runtime process).
    rt2, model2 = runtime_for(wifi_script(phone), tmp_path)
    result = rt2.resume(run_dir.name, device=phone)
    assert result.status == "completed" and result.success and phone.app(SETTINGS).state.wifi
    first = model2.calls_for("reflector")[0]
    assert first.n_images == 2  # before/after read back from screens/ in the run directory
    assert [s.step for s in load_run(run_dir).steps] == [0, 1, 2]


def test_a_checkpoint_from_before_the_typed_step_is_refused_with_a_hint(tmp_path):
    import sqlite3

    from agent_runtime.graphs.build import build_graph, sqlite_checkpointer

    def killed(call):
        raise KeyboardInterrupt

    phone = phone_with_wifi_off()
    rt, _ = runtime_for(wifi_script(phone) | {"reflector": killed}, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        rt.run("Turn on Wi-Fi", device=phone)
    (run_dir,) = list(tmp_path.iterdir())
    # What an older agent-runtime left: the step in progress as a plain dict.
    config = {"configurable": {"thread_id": run_dir.name}}
    with sqlite3.connect(run_dir / "checkpoint.sqlite", check_same_thread=False) as conn:
        app = build_graph(sqlite_checkpointer(conn))
        step = app.get_state(config).values["pending"]
        app.update_state(config, {"pending": step.model_dump(mode="json")}, as_node="execute")
    conn.close()
    rt2, _ = runtime_for(wifi_script(phone), tmp_path)
    with pytest.raises(TraceError, match="older agent-runtime") as refused:
        rt2.resume(run_dir.name, device=phone)
    assert "start the task again" in refused.value.hint
    assert load_run(run_dir).run.status == "running"  # nothing was written


def test_infrastructure_error_then_resume(tmp_path):
    phone = phone_with_wifi_off()
    rt, _ = runtime_for(wifi_script(phone), tmp_path)
    result = rt.run("Turn on Wi-Fi", device=FlakyDevice(phone, fail_on=1, exc=DeviceError("device offline")))
    assert result.status == "error" and result.error["type"] == "DeviceError"
    assert load_run(result.run_dir).run.error["message"] == "device offline"
    again = rt.resume(result.run_id, device=phone)
    assert again.status == "completed" and again.success
    with pytest.raises(ConfigError, match="already ended"):
        rt.resume(result.run_id, device=phone)


def test_two_runtimes_in_two_threads_share_nothing(tmp_path):
    phones = [phone_with_wifi_off(seed=1), phone_with_wifi_off(seed=2)]
    results = {}
    models = {}

    def go(i):
        rt, models[i] = runtime_for(wifi_script(phones[i]), tmp_path / f"r{i}", delay_s=0.002)
        results[i] = rt.run("Turn on Wi-Fi", device=phones[i])

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(results[i].success and phones[i].app(SETTINGS).state.wifi for i in range(2))
    for i in range(2):
        loaded = load_run(results[i].run_dir)
        assert {c.run_id for c in loaded.calls} == {results[i].run_id}
        assert loaded.run.device["spec"] == f"simphone:{i + 1}"
        assert [s.step for s in loaded.steps] == [0, 1, 2]
    assert results[0].run_id != results[1].run_id


def test_sensitive_values_are_redacted_from_traces(tmp_path):
    phone = SimPhone(seed=0)
    script = {
        "manager": "### Plan ###\n1. Type the password hunter2",
        "worker": [
            worker_reply({"action": "type", "text": "hunter2"}, "type hunter2"),
            worker_reply({"action": "terminate", "status": "success"}),
        ],
        "reflector": "### Outcome ###\nA",
        "notetaker": notetaker_reply("- password is hunter2"),
    }
    cfg = RuntimeConfig(roles={"rag": RoleConfig(enabled=False)}, memory=MemoryConfig(sensitive=["hunter2"]))
    rt, model = runtime_for(script, tmp_path, config=cfg)
    result = rt.run("Log in with password hunter2", device=phone)
    assert result.success
    # The model still saw the value (it must type it) …
    assert "hunter2" in model.calls_for("worker")[0].prompt
    # … but nothing written to disk holds it.
    for name in ("run.json", "steps.jsonl", "calls.jsonl"):
        text = (result.run_dir / name).read_text()
        assert "hunter2" not in text, name
    loaded = load_run(result.run_dir)
    assert loaded.steps[0].action == {"action": "type", "text": "[REDACTED]"}
    assert "sensitive" not in loaded.run.config["memory"]  # the secrets are not recorded either


def test_arun_and_device_spec_strings(tmp_path):
    script = {
        "manager": "### Plan ###\n1. Stop",
        "worker": worker_reply({"action": "terminate", "status": "success"}),
        "reflector": "### Outcome ###\nA",
        "notetaker": "### Important Notes ###\nNone",
    }
    rt, _ = runtime_for(script, tmp_path)
    result = asyncio.run(rt.arun("Stop", device="simphone:5"))
    assert result.success and load_run(result.run_dir).run.device["spec"] == "simphone:5"
    assert result.summary() == {
        "run_id": result.run_id,
        "success": True,
        "status": "completed",
        "answer": None,
        "steps": 1,
        "run_dir": str(result.run_dir),
        "verified": False,  # "Stop" names no template: judged by what changed on the phone (nothing)
        "outcome": "failed_check",
        "verification": result.verification.model_dump() if result.verification else None,
    }


def test_bad_arguments_are_config_errors(tmp_path):
    rt, _ = runtime_for({"manager": "x"}, tmp_path)
    with pytest.raises(ConfigError, match="empty"):
        rt.run("  ", device=SimPhone(seed=0))
    with pytest.raises(ConfigError, match="unknown device spec"):
        rt.run("x", device="toaster")
    with pytest.raises(ConfigError, match="unknown roles"):
        Runtime(models={"planner": object()})
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_stopping_the_stream_early_leaves_a_resumable_run(tmp_path):
    phone = phone_with_wifi_off()
    rt, _ = runtime_for(wifi_script(phone), tmp_path)
    stream = rt.stream("Turn on Wi-Fi", device=phone)
    for event in stream:
        if getattr(event, "type", "") == "verdict":
            break
    stream.close()
    (run_dir,) = list(tmp_path.iterdir())
    assert load_run(run_dir).run.status == "running"
    assert rt.resume(run_dir.name, device=phone).success


def test_import_agent_runtime_exports_runtime_lazily():
    import subprocess
    import sys

    code = (
        "import sys, agent_runtime; assert 'langgraph' not in sys.modules, 'eager';"
        "from agent_runtime import Runtime, RunResult; print(Runtime.__name__, RunResult.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Runtime", "RunResult"]


# -- resume: the device where the trace says, totals, foreign checkpoints ------------------------------
LOOK_AROUND = [
    {"action": "open_app", "text": "Settings"},
    {"action": "wait", "time": 30},
    {"action": "system_button", "button": "Home"},
    {"action": "open_app", "text": "Clock"},
]


def killed_simphone_run(tmp_path, spec="simphone:2"):
    """A run on an owned SimPhone killed in step 2's Reflector (its action ran and was checkpointed)."""
    from tests.doubles import manager_reply

    def reflect(call):
        if call.index == 2:
            raise KeyboardInterrupt
        return "### Outcome ###\nA"

    script = {
        "manager": manager_reply(["Look around Settings and the Clock"]),
        "worker": [worker_reply(a) for a in LOOK_AROUND],
        "reflector": reflect,
        "notetaker": notetaker_reply("- ok"),
    }
    rt, _ = runtime_for(script, tmp_path, make_config(max_steps=4))
    with pytest.raises(KeyboardInterrupt):
        rt.run("Look around Settings and the Clock", device=spec)
    (run_dir,) = list(tmp_path.iterdir())
    return run_dir, script


def test_resume_on_simphone_replays_the_trace_and_refuses_another_phone(tmp_path):
    run_dir, script = killed_simphone_run(tmp_path)
    killed = load_run(run_dir)
    assert [s.step for s in killed.steps] == [0, 1]
    rt, _ = runtime_for(script | {"reflector": "### Outcome ###\nA"}, tmp_path, make_config(max_steps=4))
    with pytest.raises(TraceError, match="does not reproduce the last recorded screen") as refused:
        rt.resume(run_dir.name, device="simphone:5")  # another seed: another phone
    assert "simphone:2" in refused.value.hint
    events = list(rt.stream_resume(run_dir.name))
    assert any(isinstance(e, Notice) and "SimPhone restored" in e.message for e in events)
    done = load_run(run_dir)
    assert done.run.status == "max_steps" and [s.step for s in done.steps] == [0, 1, 2, 3]
    # The phone continued where the trace left it: each step starts on the screen the last one left.
    for prev, step in zip(done.steps, done.steps[1:], strict=False):
        assert done.screen(step.before_screen) == done.screen(prev.after_screen)
    assert done.run.tokens.total_tokens == sum(c.usage.total_tokens for c in done.calls)
    assert done.run.timings["calls"] == len(done.calls)


def test_resume_on_a_device_that_differs_from_the_trace_warns_and_continues(tmp_path):
    run_dir, script = killed_simphone_run(tmp_path)
    rt, _ = runtime_for(script | {"reflector": "### Outcome ###\nA"}, tmp_path, make_config(max_steps=4))
    phone = SimPhone(seed=2)  # a phone that outlived the run, and someone opened Contacts on it since
    phone.launch("com.android.contacts")
    events = list(rt.stream_resume(run_dir.name, device=phone))
    warnings = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert warnings and "differs from the last screen" in warnings[0]
    assert load_run(run_dir).run.status == "max_steps"


@pytest.mark.parametrize("damage", ["not sqlite", "foreign db", "another run"])
def test_a_foreign_or_corrupt_checkpoint_is_a_trace_error(tmp_path, damage):
    import sqlite3

    run_dir, script = killed_simphone_run(tmp_path)
    path = run_dir / "checkpoint.sqlite"
    for extra in (run_dir / "checkpoint.sqlite-wal", run_dir / "checkpoint.sqlite-shm"):
        extra.unlink(missing_ok=True)
    if damage == "not sqlite":
        path.write_bytes(b"\x00\x01garbage" * 100)
    elif damage == "foreign db":
        path.unlink()
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE songs (title TEXT)")
        conn.close()
    else:
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE checkpoints SET thread_id = 'someone-else'")
            conn.execute("UPDATE writes SET thread_id = 'someone-else'")
        conn.close()
    rt, _ = runtime_for(script, tmp_path)
    with pytest.raises(TraceError, match="checkpoint") as refused:
        rt.resume(run_dir.name, device="simphone:2")
    assert "start the task again" in refused.value.hint


def test_recorded_config_keeps_the_runs_models_and_takes_secrets_from_the_current_one():
    from agent_runtime.config import ModelConfig
    from agent_runtime.resume import recorded_config
    from agent_runtime.traces import RunRecord

    started = RuntimeConfig(models={"default": ModelConfig(base_url="http://a/v1", api_key="k1")})
    record = RunRecord(run_id="r", task="t", config=started.public())
    assert "k1" not in json.dumps(record.config)
    now = RuntimeConfig(
        models={"default": ModelConfig(base_url="http://a/v1", api_key="k2")},
        memory=MemoryConfig(sensitive=["pin"]),
    )
    cfg = recorded_config(record, now)
    assert cfg.models["default"].api_key == "k2" and cfg.memory.sensitive == ["pin"]
    moved = RuntimeConfig(models={"default": ModelConfig(base_url="http://127.0.0.1:8000/v1", api_key="x")})
    cfg = recorded_config(record, moved)
    assert cfg.models["default"].base_url == "http://a/v1" and cfg.models["default"].api_key == "EMPTY"
