"""``agent-runtime distill`` end to end: from a runs directory (and SimPhone) to an adapter + manifest."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.models.refs import resolve_model_ref
from agent_runtime.trainers.artifacts import read_manifest
from agent_runtime.trainers.critics.labels import StepCriticLabel, append_step_labels
from tests.test_filters import write_run
from tests.test_trainers import one_torch_thread  # noqa: F401  (autouse)

runner = CliRunner()
SMALL = "--min-pixels 3136 --max-pixels 12544"


@pytest.fixture()
def runs(tmp_path):
    root = tmp_path / "runs"
    ok = write_run(root, "r1-ok", [{"thought": "Tap Wi-Fi."}, {"thought": "Tap Wi-Fi again."}])
    labels = [StepCriticLabel(step=0, annotation="GOOD"), StepCriticLabel(step=1, annotation="HARMFUL")]
    append_step_labels(ok, labels)
    write_run(root, "r2-failed", [{}], status="failed", success=False)
    write_run(root, "r3-ok", [{"screen": 3, "thought": "Tap the Wi-Fi row."}])
    return root


def distill(args: str):
    """Run ``agent-runtime distill`` with space-separated ``args`` (test paths have no spaces)."""
    return runner.invoke(app, ["distill", *args.split()], terminal_width=200)


def said(res) -> str:
    """The command's output with rich's line wrapping undone."""
    return " ".join(res.output.split())


@pytest.mark.train
def test_sft_from_a_runs_directory_writes_adapter_and_complete_manifest(runs, tiny_vlm_dir, tmp_path):
    out = tmp_path / "worker-sft"
    res = distill(
        f"--role worker --method sft --runs-dir {runs} --base {tiny_vlm_dir} --out {out} "
        "--max-steps 2 --lr 1e-3 --lora-r 4"
    )
    assert res.exit_code == 0, res.output
    assert "outcome: 4 -> 2" in said(res) and "vllm serve" in said(res)
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()

    m = read_manifest(out)
    assert (m.kind, m.method, m.role) == ("lora", "sft", "worker")
    assert m.base_model == str(tiny_vlm_dir.resolve()) and m.output == str(out.resolve())
    assert m.init_adapter is None
    assert m.data.source_runs == ["r1-ok", "r2-failed", "r3-ok"]
    assert m.data.samples_before == 4 and m.data.samples_after == m.data.train_rows == 2
    assert [f.name for f in m.data.filters] == ["validity", "outcome", "consistency", "dedup", "reweight"]
    assert m.data.filters[1].dropped == {"run outcome failure": 1, "critic score < 0.5": 1}
    assert m.hyperparameters["learning_rate"] == 1e-3 and m.hyperparameters["lora_r"] == 4
    assert m.hyperparameters["lora_alpha"] == 8 and m.hyperparameters["filters"]["critic_threshold"] == 0.5
    assert m.training.steps == 2 and [p.step for p in m.training.losses] == [1, 2]
    lora = f"--enable-lora --lora-modules worker-distilled={m.output} --max-lora-rank 8"
    assert m.serve.vllm == f"vllm serve {m.base_model} {lora}"
    assert m.serve.server.startswith(f"agent-runtime serve --model {m.base_model}")
    assert m.serve.model == f"transformers:{m.base_model}?adapter={m.output}"
    assert '[roles.worker]\nmodel = "worker_distilled"' in m.serve.config_toml
    raw = json.loads((out / "manifest.json").read_text())
    assert raw["data"]["filters"][1]["kept"] == {"critic score >= 0.5": 1, "no critic label": 1}

    # the output is a model reference: base + adapter
    resolved = resolve_model_ref(f"transformers:{out}")
    assert resolved.base == tiny_vlm_dir.resolve() and resolved.adapter == out.resolve()

    # ... that the runtime's in-process backend loads and answers with (base + adapter)
    from langchain_core.messages import HumanMessage

    from agent_runtime.config import ModelConfig
    from agent_runtime.models import make_chat_model

    def first_logprob(model_ref: str) -> tuple[str, float]:
        cfg = ModelConfig(base_url=None, model=model_ref, max_tokens=3)
        reply = make_chat_model(cfg, logprobs=True).invoke([HumanMessage("### Thought ###")])
        return reply.response_metadata["model_name"], reply.response_metadata["logprobs"][0]["logprob"]

    base_name, base_lp = first_logprob(f"transformers:{tiny_vlm_dir}")
    for ref in (m.serve.model, f"transformers:{out}"):
        name, lp = first_logprob(ref)
        assert name.startswith("adapter:") and name != base_name
        assert lp != base_lp  # the adapter's trained weights change the distribution

    # an existing output is not overwritten by accident; continuing from it keeps one adapter
    again = distill(f"--role worker --method sft --runs-dir {runs} --base {tiny_vlm_dir} --out {out}")
    assert again.exit_code == 2 and "already holds a distill output" in said(again)
    more = tmp_path / "worker-sft-2"
    res = distill(
        f"--role worker --method sft --runs-dir {runs} --base {out} --out {more} --max-steps 1 "
        "--skip-filter reweight"
    )
    assert res.exit_code == 0, res.output
    m2 = read_manifest(more)
    assert m2.init_adapter == str(out.resolve()) and m2.base_model == str(tiny_vlm_dir.resolve())
    assert [f.name for f in m2.data.filters] == ["validity", "outcome", "consistency", "dedup"]


@pytest.mark.train
def test_full_fine_tune_writes_a_model_directory(runs, tiny_vlm_dir, tmp_path):
    out = tmp_path / "manager-full"
    res = distill(
        f"--role manager --method sft --runs-dir {runs} --base {tiny_vlm_dir} --out {out} "
        "--full --max-steps 1 --any-outcome"
    )
    assert res.exit_code == 0, res.output
    m = read_manifest(out)
    # 4 manager calls: the HARMFUL step goes (critic), the failed run's copy of r1's first call (dedup)
    assert m.kind == "full" and m.data.train_rows == 2
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    assert (out / "processor_config.json").is_file()
    assert resolve_model_ref(out).model_dump() == {"base": out.resolve(), "adapter": None}
    assert m.serve.vllm == f"vllm serve {m.output} --served-model-name manager-distilled"


@pytest.mark.train
def test_dpo_from_an_sft_output_uses_it_as_reference(runs, tiny_vlm_dir, tmp_path):
    sft = tmp_path / "worker-sft"
    res = distill(
        f"--role worker --method sft --runs-dir {runs} --base {tiny_vlm_dir} --out {sft} "
        "--max-steps 3 --lr 5e-2"
    )
    assert res.exit_code == 0, res.output
    for mode in ("--lora", "--full"):
        out = tmp_path / f"worker-dpo{mode}"
        source = f"--tasks ClockReachTab --runs-dir {runs} --base {sft} --out {out}"
        res = distill(
            f"--role worker --method dpo {source} {mode} --max-steps 1 --max-candidates 1 "
            f"--max-samples 2 --batch-size 2 --max-new-tokens 32 {SMALL}"
        )
        assert res.exit_code == 0, res.output
        m = read_manifest(out)
        assert m.method == "dpo" and m.init_adapter == str(sft.resolve())
        assert m.base_model == str(tiny_vlm_dir.resolve()) and m.kind == mode.strip("-")
        assert m.data.train_rows == 2 and m.training.steps == 1
        assert m.training.extra["trace_pairs"] == 0 and m.training.extra["simphone"]["states"] == 3
        assert m.training.extra["simphone"]["pairs"] and (out / "data" / "screens").is_dir()
        # by default the SFT model regenerates each golden state twice (--regenerations 2)
        assert sum(m.training.extra["simphone"]["policy_replies"].values()) >= 3
        assert sum(m.data.extra["rejected_source"].values()) == 2
        # the reference is the SFT model itself: at the first step policy == reference, so the loss is log 2
        assert m.training.losses[0].loss == pytest.approx(0.693147, abs=1e-4), mode


def test_unknown_method_and_bad_options_are_usage_errors(runs, tmp_path):
    res = distill(f"--role worker --method ppo --runs-dir {runs} --base {tmp_path} --out {tmp_path / 'o'}")
    assert res.exit_code == 2 and "unknown training method 'ppo'" in said(res)
    assert "sft:" in said(res) and "dpo:" in said(res) and "irr:" in said(res) and "grpo:" in said(res)
    res = distill(f"--role planner --method sft --base {tmp_path} --out {tmp_path / 'o'}")
    assert res.exit_code == 2 and "unknown role 'planner'" in said(res)
    res = distill(f"--role manager --method irr --base {tmp_path} --out {tmp_path / 'o'}")
    assert res.exit_code == 2 and "--role worker" in said(res)
    res = distill(
        f"--role worker --method sft --runs-dir {runs} --base {tmp_path} --out {tmp_path / 'o'} "
        "--skip-filter magic"
    )
    assert res.exit_code == 2 and "unknown filter(s) magic" in said(res)


def test_a_missing_base_or_data_source_is_a_clear_error(runs, tmp_path):
    out = tmp_path / "o"
    res = distill(f"--role worker --method sft --runs-dir {runs} --base {tmp_path / 'nope'} --out {out}")
    assert res.exit_code == 1 and "is not a model directory" in said(res) and "Traceback" not in res.output
    res = distill(f"--role worker --method dpo --base {tmp_path} --out {tmp_path / 'o'}")
    assert res.exit_code == 2 and "DPO needs pairs" in said(res)
    res = distill(f"--role worker --method sft --base {tmp_path} --out {tmp_path / 'o'}")
    assert res.exit_code == 2 and "--runs-dir" in said(res)


@pytest.mark.train
def test_irr_without_any_matching_reply_says_so(tiny_vlm_dir, tmp_path):
    res = distill(
        f"--role worker --method irr --tasks ClockReachTab --base {tiny_vlm_dir} "
        f"--out {tmp_path / 'irr'} --k 2 --max-new-tokens 8 --rounds 1 {SMALL}"
    )
    assert res.exit_code == 1 and "no sampled reply matched any of the 3 expert actions" in said(res)
    assert "Traceback" not in res.output
