"""Experience round trip through the real Runtime: run 1's guidance reaches run 2's first plan."""

from __future__ import annotations

import json

from agent_runtime.config import MemoryConfig, RuntimeConfig
from agent_runtime.memory import MemoryStore, record_run
from agent_runtime.runtime import Runtime
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, notetaker_reply, reflector_reply
from tests.test_graph import phone_with_wifi_off, wifi_manager, wifi_worker

ROLES = ("manager", "worker", "reflector", "notetaker", "rag")


def run_once(tmp_path, memory: MemoryConfig, task: str, seed: int):
    phone = phone_with_wifi_off(seed)
    model = ScriptedChatModel(
        script={
            "manager": wifi_manager(phone),
            "worker": wifi_worker(phone),
            "reflector": reflector_reply("A"),
            "notetaker": notetaker_reply("- Wi-Fi lives under Network & internet"),
            "rag": "turn on wifi android settings",
        }
    )
    runtime = Runtime(
        RuntimeConfig(memory=memory), models=dict.fromkeys(ROLES, model), runs_dir=tmp_path / "runs"
    )
    result = runtime.run(task, device=phone)
    assert result.status == "completed" and result.success, result
    assert phone.app("com.android.settings").state.wifi
    return result, model


def first_manager_prompt(run_dir) -> str:
    calls = [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]
    manager = [c for c in calls if c["role"] == "manager"]
    return "\n".join(
        part["text"] for m in manager[0]["messages"] for part in m["content"] if part.get("type") == "text"
    )


def test_second_run_plans_with_the_first_runs_guidance(tmp_path):
    memory = MemoryConfig(dir=tmp_path / "mem")

    first, model1 = run_once(tmp_path, memory, "Turn on Wi-Fi", seed=0)
    assert model1.calls_for("rag") == []  # empty store, no web: nothing to ask
    assert "Retrieved Knowledge" not in first_manager_prompt(first.run_dir)

    guidance = record_run(load_run(first.run_dir), memory)  # idempotent if the runtime recorded it too
    assert guidance is not None and guidance.outcome == "success"
    assert "Open Settings" in guidance.text and "Open Network & internet" in guidance.text
    assert MemoryStore.from_config(memory).count("experience") == 1

    second, _ = run_once(tmp_path, memory, "Please switch the Wi-Fi on", seed=1)
    prompt = first_manager_prompt(second.run_dir)
    assert "### Retrieved Knowledge ###" in prompt
    assert "Guidance from previous runs of similar tasks:" in prompt
    assert guidance.text in prompt
