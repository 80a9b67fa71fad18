"""TRPO and DGRPO end to end: rollouts on SimPhone, updates on LoRA, policy refresh, resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import pytest

from agent_runtime.trainers.rl_loop import RLOptions, train_online
from tests.rl_helpers import TASKS, lora_weights, runtime_config, scripted_manager, served

pytestmark = pytest.mark.train


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def _opts(tmp_path: Path, **kw: object) -> RLOptions:
    return RLOptions(tasks=TASKS, split="all", iterations=2, rollout_workers=2, **kw)  # type: ignore[arg-type]


def _patch_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from agent_runtime.trainers import rl_loop

    cfg = runtime_config(tmp_path)
    monkeypatch.setattr(rl_loop.OnlineTrainer, "_runtime_config", lambda self: cfg)


def _changed(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _check_iterations(out: Path, n: int) -> list[dict]:
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in metrics] == list(range(1, n + 1))
    for m in metrics:
        assert m["rollouts"] == 8 and m["rollout_errors"] == 0  # 2 templates x G = 4
        manifest = json.loads((out / f"iter_{m['iteration']:04d}" / "manifest.json").read_text())
        assert manifest["kind"] == "lora" and manifest["method"] in ("trpo", "dgrpo")
        assert (out / f"iter_{m['iteration']:04d}" / "adapter_model.safetensors").is_file()
        if m["update"]:
            assert math.isfinite(m["update"]["loss"]) and math.isfinite(m["update"]["grad_norm"])
    # Every trained-role call of every rollout carries token ids + behaviour log-probs.
    calls = [
        json.loads(line)
        for f in (out / "rollouts").glob("iter_*/*/calls.jsonl")
        for line in f.read_text().splitlines()
    ]
    worker = [c for c in calls if c["role"] == "worker"]
    assert worker and all(
        len(c["extra"]["rl"]["token_ids"]) == len(c["extra"]["rl"]["logprobs"]) for c in worker
    )
    return metrics


def test_trpo_two_iterations_in_process_then_resume(
    rl_policy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_runtime.trainers.trpo_config import TRPOConfig

    _patch_config(monkeypatch, tmp_path)
    out = tmp_path / "trpo"
    cfg = TRPOConfig(
        base=str(rl_policy_dir),
        output_dir=out,
        num_generations=4,
        max_new_tokens=32,
        max_turns=2,
        learning_rate=5e-2,
        lora_r=4,
        lora_alpha=8,
    )
    lines: list[str] = []
    data, training, _ = train_online(
        "trpo", cfg, _opts(tmp_path), other_models={"manager": scripted_manager()}, echo=lines.append
    )
    metrics = _check_iterations(out, 2)
    assert [line.split(":")[0] for line in lines] == ["iter 1", "iter 2"] and "success" in lines[0]
    assert any(m["advantage"]["std"] > 0 for m in metrics), "warm-started policy should give mixed groups"
    assert training.steps == 2 and len(training.losses) == 2 and data.samples_before == 16
    assert _changed(lora_weights(out / "iter_0000"), lora_weights(out / "iter_0002")) > 0
    assert (out / "adapter_model.safetensors").is_file()  # the last adapter, at the top
    # The second iteration sampled from the first update's policy, named by version in the traces.
    second = [
        json.loads(x)
        for f in (out / "rollouts/iter_0002").glob("*/calls.jsonl")
        for x in f.read_text().splitlines()
    ]
    assert {c["model"] for c in second if c["role"] == "worker"} == {"policy-v0001"}
    # Resume: one more iteration continues from iteration 2's adapter, optimizer and statistics.
    before = lora_weights(out / "iter_0002")
    resumed = _opts(tmp_path).model_copy(update={"iterations": 3, "resume": True})
    lines.clear()
    train_online("trpo", cfg, resumed, other_models={"manager": scripted_manager()}, echo=lines.append)
    assert lines[0] == "resuming after iteration 2" and lines[1].startswith("iter 3")
    _check_iterations(out, 3)
    assert _changed(before, lora_weights(out / "iter_0002")) == 0  # finished iterations stay as they were
    with pytest.raises(Exception, match="already holds RL iterations"):
        train_online("trpo", cfg, _opts(tmp_path), other_models={"manager": scripted_manager()})


def test_dgrpo_two_iterations_with_policy_refresh_over_http(
    rl_policy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_runtime.trainers.dgrpo_config import DGRPOConfig

    _patch_config(monkeypatch, tmp_path)
    out = tmp_path / "dgrpo"
    cfg = DGRPOConfig(
        base=str(rl_policy_dir),
        output_dir=out,
        num_generations=4,
        max_new_tokens=32,
        max_turns=2,
        learning_rate=5e-2,
        lora_r=4,
        lora_alpha=8,
    )
    with served(rl_policy_dir) as url:
        train_online(
            "dgrpo", cfg, _opts(tmp_path, server_url=url), other_models={"manager": scripted_manager()}
        )
        listed = {m["id"] for m in httpx.get(f"{url}/models").json()["data"]}
    # load (new version) + unload (old) after each iteration: only the latest adapter is served.
    assert "policy-v0002" in listed and not {"policy-v0000", "policy-v0001"} & listed
    metrics = _check_iterations(out, 2)
    calls = [
        json.loads(x)
        for f in (out / "rollouts/iter_0002").glob("*/calls.jsonl")
        for x in f.read_text().splitlines()
    ]
    assert {c["model"] for c in calls if c["role"] == "worker"} == {"policy-v0001"}
    assert _changed(lora_weights(out / "iter_0000"), lora_weights(out / "iter_0002")) > 0
    # FCF: the task the policy cannot solve has failed twice in a row; the history is on disk.
    history = json.loads((out / "fcf_history.json").read_text())
    assert history["epoch"] == 2
    shop = [h for t, h in history["tasks"].items() if t.startswith("ShopCartTotalQuestion")]
    assert shop and shop[0]["failures"] == 2 and shop[0]["cooldown_left"] > 0
    assert any(m["buffer_size"] > 0 for m in metrics) or all(m["successes"] == 0 for m in metrics)
