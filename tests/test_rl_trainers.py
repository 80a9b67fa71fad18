"""TRPO and DGRPO end to end: rollouts on SimPhone, updates on LoRA, policy refresh, resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import pytest

from agent_runtime.trainers.online.loop import RLOptions, train_online
from tests.rl_helpers import TASKS, lora_weights, runtime_config, scripted_manager, served

pytestmark = pytest.mark.train


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def _opts(tmp_path: Path, **kw: object) -> RLOptions:
    return RLOptions(tasks=TASKS, split="all", iterations=2, rollout_workers=2, **kw)  # type: ignore[arg-type]


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


def test_trpo_two_iterations_in_process_then_resume(rl_policy_dir: Path, tmp_path: Path) -> None:
    from agent_runtime.trainers.online.trpo_config import TRPOConfig

    runtime = runtime_config(tmp_path)
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
        "trpo",
        cfg,
        _opts(tmp_path),
        other_models={"manager": scripted_manager()},
        runtime=runtime,
        echo=lines.append,
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
    train_online(
        "trpo", cfg, resumed, other_models={"manager": scripted_manager()}, runtime=runtime, echo=lines.append
    )
    assert lines[0] == "resuming after iteration 2" and lines[1].startswith("iter 3")
    _check_iterations(out, 3)
    assert _changed(before, lora_weights(out / "iter_0002")) == 0  # finished iterations stay as they were
    with pytest.raises(Exception, match="already holds RL iterations"):
        train_online(
            "trpo", cfg, _opts(tmp_path), other_models={"manager": scripted_manager()}, runtime=runtime
        )


def test_dgrpo_two_iterations_with_policy_refresh_over_http(rl_policy_dir: Path, tmp_path: Path) -> None:
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig

    runtime = runtime_config(tmp_path)
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
            "dgrpo",
            cfg,
            _opts(tmp_path, server_url=url),
            other_models={"manager": scripted_manager()},
            runtime=runtime,
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


def test_rl_from_an_sft_adapter_keeps_it_as_the_kl_reference(rl_policy_dir: Path, tmp_path: Path) -> None:
    """Starting from ``DIR?adapter=SFT`` with β > 0: the SFT adapter is iteration 0 and, frozen
    under a second name, the KL reference; only the trained adapter is saved per iteration."""
    import torch

    from agent_runtime.models.hf import load_model
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.loop import OnlineTrainer
    from agent_runtime.trainers.online.policy_gradient import add_lora

    torch.manual_seed(0)
    lora_cfg = DGRPOConfig(base=str(rl_policy_dir), output_dir=tmp_path, lora_r=4, lora_alpha=8)
    sft = add_lora(load_model(rl_policy_dir, device_map="cpu", dtype="float32"), lora_cfg)
    with torch.no_grad():
        for name, param in sft.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.01)  # an adapter that changes the policy, as SFT leaves it
    sft.save_pretrained(str(tmp_path / "sft"))

    out = tmp_path / "dgrpo"
    cfg = DGRPOConfig(
        base=f"transformers:{rl_policy_dir}?adapter={tmp_path / 'sft'}", output_dir=out, beta=0.01
    )
    trainer = OnlineTrainer("dgrpo", cfg, _opts(tmp_path), runtime=runtime_config(tmp_path))
    trainer._load()
    assert trainer.ref_adapter == "reference" and trainer.model.active_adapter == "default"
    assert set(trainer.model.peft_config) == {"default", "reference"}
    trained = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trained and all(".default." in n for n in trained)
    start = lora_weights(tmp_path / "sft")
    assert _changed(start, lora_weights(out / "iter_0000")) == 0
    trainer._save_iteration(1, {"iteration": 1}, [])
    assert not (out / "iter_0001" / "reference").exists()
    assert set(lora_weights(out / "iter_0001")) == set(start)
    # β = 0: no reference copy is loaded (the KL term is off)
    no_kl = cfg.model_copy(update={"beta": 0.0, "output_dir": tmp_path / "plain"})
    plain = OnlineTrainer("dgrpo", no_kl, _opts(tmp_path), runtime=runtime_config(tmp_path))
    plain._load()
    assert plain.ref_adapter is None and set(plain.model.peft_config) == {"default"}
