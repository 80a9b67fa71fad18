"""The policy-gradient core on hand-made tensors and on the tiny offline Qwen2.5-VL (text + image).

Hand-computed per-token gradients check the objective; the tiny model checks that an update moves
log-probs the way the advantage says, that clipping and the replay weight bound it, that the KL
to the adapter-disabled reference starts at 0, and that only LoRA weights train.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytestmark = pytest.mark.train

torch = pytest.importorskip("torch")

from agent_runtime.errors import TrainingError  # noqa: E402
from agent_runtime.trainers.online.samples import StepSample, StepTokens  # noqa: E402

LN2 = math.log(2.0)


# -- the objective on hand-made tensors ----------------------------------------------------------


def grads_of(logp_minus_behaviour: list[float], advantage: float, *, replay: bool = False, **settings):
    """d(token loss)/d(logp) for one row of tokens with the given log-ratios."""
    from agent_runtime.trainers.online.policy_gradient import LossSettings, token_loss

    logp = torch.tensor([logp_minus_behaviour], requires_grad=True)
    out = token_loss(
        logp,
        torch.zeros(1, len(logp_minus_behaviour)),
        torch.tensor([advantage]),
        torch.tensor([replay]),
        torch.ones(1, len(logp_minus_behaviour), dtype=torch.bool),
        LossSettings(**settings),
    )
    out.loss.sum().backward()
    return logp.grad[0].tolist(), out


def test_ppo_token_gradients_by_hand() -> None:
    """loss = −min(r·A, clip(r, 0.8, 1.2)·A), d/dlogp = −A·r where unclipped, 0 where clipped.

    A = +1: log r = 0 → r = 1 → −1;  log r = 0.5 → r = 1.6487 > 1.2 → clipped → 0;
            log r = −0.5 → r = 0.6065: min(0.6065, 0.8) unclipped → −0.6065.
    A = −1: log r = −0.5 → min(−0.6065, −0.8) = −0.8 clipped → 0;
            log r = 0.5 → min(−1.6487, −1.2) = −1.6487 unclipped → +1.6487.
    """
    g, out = grads_of([0.0, 0.5, -0.5], 1.0)
    assert g == pytest.approx([-1.0, 0.0, -math.exp(-0.5)])
    assert out.clipped[0].tolist() == [False, True, False]
    g, out = grads_of([-0.5, 0.5], -1.0)
    assert g == pytest.approx([0.0, math.exp(0.5)])
    assert out.clipped[0].tolist() == [True, False]
    # asymmetric clip (DAPO-style "clip higher"): 1.6487 < 1 + 0.7 is inside the region
    g, _ = grads_of([0.5], 1.0, clip_epsilon_high=0.7)
    assert g == pytest.approx([-math.exp(0.5)])


def test_replay_tokens_use_truncated_importance_weight_by_hand() -> None:
    """Replay: loss = −min(r, c)·A·(log π − sg(log π)); gradient −min(r, c)·A.
    c = 1: log r = 0.5 → −1 (PPO would give 0 here), log r = −1 → −e^−1 = −0.3679.
    c = 2: log r = 0.5 → −1.6487; log r = ln 3 → −2 (capped)."""
    g, out = grads_of([0.5, -1.0], 1.0, replay=True)
    assert g == pytest.approx([-1.0, -math.exp(-1.0)])
    assert not out.clipped.any()
    assert out.loss[0].tolist() == pytest.approx([-1.0, -math.exp(-1.0)])
    g, _ = grads_of([0.5, math.log(3.0)], 1.0, replay=True, replay_importance_cap=2.0)
    assert g == pytest.approx([-math.exp(0.5), -2.0])


def test_k3_kl_and_trajectory_kl_by_hand() -> None:
    """k3 = e^d − d − 1 with d = ref − logp: d = 0 → 0; d = ln 2 → 2 − 0.6931 − 1 = 0.3069;
    d = −ln 2 → 0.5 + 0.6931 − 1 = 0.1931. Trajectory KL with log r = (ln 2, 0) → mean(0.3069, 0)."""
    from agent_runtime.trainers.online.policy_gradient import k3_kl, trajectory_kl

    kl = k3_kl(torch.zeros(3), torch.tensor([0.0, LN2, -LN2]))
    assert kl.tolist() == pytest.approx([0.0, 1.0 - LN2, LN2 - 0.5])
    assert trajectory_kl([[-1.0 + LN2], [-2.0]], [[-1.0], [-2.0]]) == pytest.approx((1.0 - LN2) / 2)
    assert trajectory_kl([[-0.3, -0.2]], [[-0.3, -0.2]]) == 0.0


def test_step_weights_by_hand() -> None:
    """Trajectory lengths 1, 2, 2: inverse 1, 1/2, 1/2 (each trajectory sums to 1); length 1, 2, 2."""
    from agent_runtime.trainers.online.policy_gradient import LossSettings, step_weights

    tok = StepTokens((1,), (2,), (-0.1,))
    samples = [StepSample(tok, 1.0, t) for t in (1, 2, 2)]
    assert step_weights(samples, "inverse_length") == [1.0, 0.5, 0.5]
    assert step_weights(samples, "length") == [1.0, 2.0, 2.0]
    assert step_weights(samples, "none") == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError):
        LossSettings(loss_aggregation="sum")  # type: ignore[arg-type]


# -- the tiny Qwen2.5-VL --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def processor(tiny_vlm_dir: Path):
    from agent_runtime.models.hf import load_processor

    return load_processor(tiny_vlm_dir)


def _image_prompt(processor, text: str, size: tuple[int, int]) -> tuple[list[int], dict]:
    from PIL import Image

    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    enc = processor(text=[prompt], images=[Image.new("RGB", size, (200, 30, 30))], return_tensors="pt")
    multimodal = {"pixel_values": enc.pixel_values, "image_grid_thw": enc.image_grid_thw}
    return enc.input_ids[0].tolist(), multimodal


def _text_prompt(processor, text: str) -> list[int]:
    prompt = processor.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False
    )
    return processor.tokenizer(prompt, add_special_tokens=False)["input_ids"]


def _completion(processor, text: str) -> list[int]:
    return processor.tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"]


def load_tiny(tiny_vlm_dir: Path):
    from agent_runtime.models.hf import load_model

    return load_model(tiny_vlm_dir, device_map="cpu", dtype="float32")


def lora_model(tiny_vlm_dir: Path, tmp_path: Path):
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.policy_gradient import add_lora

    torch.manual_seed(0)
    cfg = DGRPOConfig(base=str(tiny_vlm_dir), output_dir=tmp_path, lora_r=8, lora_alpha=16)
    return add_lora(load_tiny(tiny_vlm_dir), cfg)


@pytest.fixture(scope="module")
def steps(tiny_vlm_dir: Path, processor) -> list[StepTokens]:
    """Three steps — two screenshots of different sizes, one text-only — with on-policy behaviour
    log-probs (a fresh LoRA adapter has B = 0, so the base model's log-probs are the policy's)."""
    from agent_runtime.trainers.online.policy_gradient import score_logprobs

    def placeholder(prompt_ids: list[int], reply: str, multimodal: dict | None = None) -> StepTokens:
        completion = _completion(processor, reply)
        return StepTokens(prompt_ids, completion, [-1.0] * len(completion), multimodal or {})

    ids1, mm1 = _image_prompt(processor, "Tap the search button", (100, 80))
    ids2, mm2 = _image_prompt(processor, "Open the Settings app and turn on Wi-Fi", (60, 120))
    raw = [
        placeholder(ids1, '{"action": "click", "coordinate": [540, 1200]}', mm1),
        placeholder(ids2, '{"action": "open_app", "text": "Settings"}', mm2),
        placeholder(_text_prompt(processor, "What is 6 times 7?"), "42"),
    ]
    model = load_tiny(tiny_vlm_dir)
    behaviour = score_logprobs(model, raw)
    return [
        StepTokens(s.prompt_ids, s.completion_ids, b, s.multimodal)
        for s, b in zip(raw, behaviour, strict=True)
    ]


def completion_logprob(model, step: StepTokens) -> float:
    from agent_runtime.trainers.online.policy_gradient import score_logprobs

    return sum(score_logprobs(model, [step])[0])


def test_batched_left_padded_logprobs_match_one_by_one(
    tiny_vlm_dir: Path, processor, steps: list[StepTokens]
) -> None:
    from agent_runtime.trainers.online.policy_gradient import collate_for, score_logprobs

    model = load_tiny(tiny_vlm_dir)
    # the modality ids rebuilt from the image token id equal the processor's own
    from PIL import Image

    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Tap it"}]}]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    enc = processor(text=[prompt], images=[Image.new("RGB", (90, 70))], return_tensors="pt")
    step = StepTokens(
        enc.input_ids[0].tolist(),
        (5,),
        (-1.0,),
        {"pixel_values": enc.pixel_values, "image_grid_thw": enc.image_grid_thw},
    )
    rebuilt = collate_for(model, [step]).model_inputs["mm_token_type_ids"][0]
    assert rebuilt[:-1].tolist() == enc.mm_token_type_ids[0].tolist() and rebuilt.sum() > 0
    together = score_logprobs(model, steps, micro_batch_size=3)
    for step, batched in zip(steps, together, strict=True):
        assert len(batched) == len(step.completion_ids)
        assert batched == pytest.approx(score_logprobs(model, [step])[0], abs=1e-5)
    assert all(x < 0 for row in together for x in row)


@pytest.mark.parametrize("advantage", [1.0, -1.0])
def test_update_moves_logprob_with_the_advantage(
    tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens], advantage: float
) -> None:
    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
    )

    model = lora_model(tiny_vlm_dir, tmp_path)
    step = steps[0]
    before = completion_logprob(model, step)
    stats = policy_gradient_step(
        model, make_optimizer(model, 1e-2), [StepSample(step, advantage, 3)], LossSettings(beta=0.0)
    )
    assert math.isfinite(stats.loss) and stats.loss == pytest.approx(-advantage, abs=1e-4)  # ratio 1
    assert stats.ratio_mean == pytest.approx(1.0, abs=1e-4) and stats.clip_fraction == 0.0
    assert stats.grad_norm > 0 and stats.tokens == len(step.completion_ids)
    after = completion_logprob(model, step)
    assert (after - before) * advantage > 0.1


def test_clipping_bounds_the_update(tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]) -> None:
    """Behaviour log-probs 0.5 below the policy's: r = e^0.5 = 1.65 > 1.2 on every token. With A > 0
    the clipped branch is active everywhere, the gradient is 0 and no weight moves; as a replayed
    step the truncated weight (cap 1) still teaches."""
    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
    )

    stale = StepTokens(
        steps[0].prompt_ids,
        steps[0].completion_ids,
        [b - 0.5 for b in steps[0].behaviour_logprobs],
        steps[0].multimodal,
    )
    model = lora_model(tiny_vlm_dir, tmp_path)
    weights = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    stats = policy_gradient_step(
        model, make_optimizer(model, 1e-2), [StepSample(stale, 1.0, 1)], LossSettings()
    )
    assert stats.clip_fraction == 1.0 and stats.grad_norm == 0.0
    assert stats.ratio_mean == pytest.approx(math.exp(0.5), rel=1e-3)
    assert all(torch.equal(weights[n], p) for n, p in model.named_parameters() if p.requires_grad)
    before = completion_logprob(model, stale)
    stats = policy_gradient_step(
        model, make_optimizer(model, 1e-2), [StepSample(stale, 1.0, 1, is_replay=True)], LossSettings()
    )
    assert stats.replay_samples == 1 and stats.grad_norm > 0
    assert completion_logprob(model, stale) > before + 0.1


def test_replay_weight_scales_the_gradient_exactly(
    tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]
) -> None:
    """With plain SGD (lr 1) a weight moves by −gradient. A replayed step with r = e^0.5 and cap 1
    moves weights exactly like the same step on-policy (r = 1); with cap 2 by e^0.5 = 1.6487 times."""
    from agent_runtime.trainers.online.policy_gradient import LossSettings, policy_gradient_step

    stale = StepTokens(
        steps[0].prompt_ids,
        steps[0].completion_ids,
        [b - 0.5 for b in steps[0].behaviour_logprobs],
        steps[0].multimodal,
    )

    def delta(sample: StepSample, cap: float) -> torch.Tensor:
        model = lora_model(tiny_vlm_dir, tmp_path)
        params = [p for p in model.parameters() if p.requires_grad]
        before = torch.cat([p.detach().flatten().clone() for p in params])
        settings = LossSettings(max_grad_norm=None, replay_importance_cap=cap)
        policy_gradient_step(model, torch.optim.SGD(params, lr=1.0), [sample], settings)
        return torch.cat([p.detach().flatten() for p in params]) - before

    on_policy = delta(StepSample(steps[0], 1.0, 1), 1.0)
    assert on_policy.abs().sum() > 0
    assert torch.allclose(delta(StepSample(stale, 1.0, 1, is_replay=True), 1.0), on_policy, atol=1e-6)
    assert torch.allclose(
        delta(StepSample(stale, 1.0, 1, is_replay=True), 2.0), on_policy * math.exp(0.5), atol=1e-5
    )


def test_kl_is_zero_at_the_reference_and_grows_after_updates(
    tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]
) -> None:
    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
    )

    model = lora_model(tiny_vlm_dir, tmp_path)
    opt = make_optimizer(model, 1e-2)
    settings = LossSettings(beta=0.04)
    batch = [StepSample(steps[0], 1.0, 1), StepSample(steps[2], -1.0, 1)]
    first = policy_gradient_step(model, opt, batch, settings)
    assert first.kl == pytest.approx(0.0, abs=1e-7)
    assert first.loss == pytest.approx(first.policy_loss, abs=1e-7)
    second = policy_gradient_step(model, opt, batch, settings)
    assert second.kl > 1e-4
    assert second.loss == pytest.approx(second.policy_loss + 0.04 * second.kl, rel=1e-4)


def test_kl_reference_is_the_starting_adapter_not_the_base(
    tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]
) -> None:
    """RL from an SFT adapter: the KL compares with that adapter (a frozen copy loaded as
    ``ref_adapter``), so it starts at 0; disabling the adapter would compare with the base model
    before SFT and start above 0. The reference copy never trains and the trained adapter stays
    the active one."""
    from peft import PeftModel

    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
    )

    sft = lora_model(tiny_vlm_dir, tmp_path)
    policy_gradient_step(sft, make_optimizer(sft, 5e-2), [StepSample(steps[0], 1.0, 1)], LossSettings())
    sft.save_pretrained(str(tmp_path / "sft"))

    model = PeftModel.from_pretrained(load_tiny(tiny_vlm_dir), str(tmp_path / "sft"), is_trainable=True)
    model.load_adapter(str(tmp_path / "sft"), adapter_name="reference", is_trainable=False)
    model.set_adapter("default")
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if ".reference." in n}
    assert frozen and not any(p.requires_grad for n, p in model.named_parameters() if ".reference." in n)
    opt = make_optimizer(model, 1e-2)
    batch = [StepSample(steps[0], 1.0, 1), StepSample(steps[2], -1.0, 1)]
    settings = LossSettings(beta=0.04)
    # with the adapter disabled the reference would be the base, already away from the SFT policy
    against_base = policy_gradient_step(model, make_optimizer(model, 0.0), batch, settings)
    assert against_base.kl > 1e-4
    first = policy_gradient_step(model, opt, batch, settings, ref_adapter="reference")
    assert first.kl == pytest.approx(0.0, abs=1e-7)
    assert model.active_adapter == "default"
    assert all(torch.equal(frozen[n], p) for n, p in model.named_parameters() if n in frozen)
    assert not any(p.requires_grad for n, p in model.named_parameters() if ".reference." in n)
    assert any(p.requires_grad for n, p in model.named_parameters() if ".default." in n)
    second = policy_gradient_step(model, opt, batch, settings, ref_adapter="reference")
    assert second.kl > 1e-4


def test_only_lora_weights_train(tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]) -> None:
    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
    )

    model = lora_model(tiny_vlm_dir, tmp_path)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    policy_gradient_step(
        model, make_optimizer(model, 1e-2), [StepSample(s, 1.0, 1) for s in steps], LossSettings(beta=0.001)
    )
    changed = {n for n, p in model.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all("lora_" in n for n in changed)
    assert any("lora_B" in n for n in changed)
    assert all(not p.requires_grad for n, p in model.named_parameters() if "lora_" not in n)


def test_aggregation_and_length_weighting_by_hand(
    tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]
) -> None:
    """On-policy (r = 1) the token loss is −A. Steps with A = 1, −1, 2 from trajectories of length
    1, 2, 2 (weights 1, ½, ½), completion lengths c1, c2, c3 (from the tokenizer):

    step_token_mean:  −(1·1 + ½·(−1) + ½·2)/(1 + ½ + ½) = −1.5/2 = −0.75
    batch_token_mean: −(1·c1·1 − ½·c2 + ½·c3·2)/(c1 + ½c2 + ½c3)
    no weighting, step mean: −(1 − 1 + 2)/3 = −2/3.
    """
    from agent_runtime.trainers.online.policy_gradient import LossSettings, policy_gradient_step

    samples = [StepSample(steps[0], 1.0, 1), StepSample(steps[1], -1.0, 2), StepSample(steps[2], 2.0, 2)]
    c1, c2, c3 = (len(s.completion_ids) for s in steps)

    model = lora_model(tiny_vlm_dir, tmp_path)
    frozen = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.0)  # r stays 1

    def loss(**settings) -> float:
        return policy_gradient_step(model, frozen, samples, LossSettings(**settings)).loss

    assert loss(step_weighting="inverse_length") == pytest.approx(-0.75, abs=1e-4)
    expected = -(c1 - 0.5 * c2 + 0.5 * c3 * 2) / (c1 + 0.5 * c2 + 0.5 * c3)
    assert loss(step_weighting="inverse_length", loss_aggregation="batch_token_mean") == pytest.approx(
        expected, abs=1e-4
    )
    assert loss(step_weighting="none") == pytest.approx(-2 / 3, abs=1e-4)


def test_micro_batching_does_not_change_the_update(
    tiny_vlm_dir: Path, tmp_path: Path, steps: list[StepTokens]
) -> None:
    from agent_runtime.trainers.online.policy_gradient import LossSettings, policy_gradient_step

    samples = [StepSample(steps[0], 1.0, 1), StepSample(steps[1], -0.5, 2), StepSample(steps[2], 2.0, 2)]

    def updated(micro: int) -> torch.Tensor:
        model = lora_model(tiny_vlm_dir, tmp_path)
        params = [p for p in model.parameters() if p.requires_grad]
        settings = LossSettings(
            micro_batch_size=micro,
            step_weighting="inverse_length",
            loss_aggregation="batch_token_mean",
            beta=0.01,
            max_grad_norm=0.5,
        )
        policy_gradient_step(model, torch.optim.SGD(params, lr=1.0), samples, settings)
        return torch.cat([p.detach().flatten() for p in params])

    assert torch.allclose(updated(1), updated(3), atol=1e-6)


def test_kl_without_adapter_needs_a_reference(tiny_vlm_dir: Path, steps: list[StepTokens]) -> None:
    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
    )

    model = load_tiny(tiny_vlm_dir)
    with pytest.raises(TrainingError, match="reference"):
        policy_gradient_step(
            model, make_optimizer(model, 1e-6), [StepSample(steps[2], 1.0, 1)], LossSettings(beta=0.1)
        )
    stats = policy_gradient_step(
        model,
        make_optimizer(model, 1e-6),
        [StepSample(steps[2], 1.0, 1)],
        LossSettings(beta=0.1),
        ref_model=load_tiny(tiny_vlm_dir),
    )
    assert stats.kl == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(TrainingError, match="no samples"):
        policy_gradient_step(model, make_optimizer(model, 1e-6), [], LossSettings())


def test_grpo_config_builds_a_trl_grpo_config(tmp_path: Path) -> None:
    import trl

    from agent_runtime.trainers.hi_agent.grpo_config import GRPOConfig

    cfg = GRPOConfig(base="m", output_dir=tmp_path)
    trl_cfg = trl.GRPOConfig(**cfg.trl_kwargs())
    assert (trl_cfg.loss_type, trl_cfg.beta, trl_cfg.num_generations, trl_cfg.temperature) == (
        "grpo",
        0.04,
        6,
        0.9,
    )
    assert (trl_cfg.top_k, trl_cfg.epsilon, trl_cfg.max_completion_length, trl_cfg.learning_rate) == (
        50,
        0.2,
        256,
        1e-6,
    )
    assert trl_cfg.reward_weights == [0.4, 0.3, 0.3] and trl_cfg.scale_rewards == "group"
    low = trl.GRPOConfig(**GRPOConfig(base="m", output_dir=tmp_path, level="low").trl_kwargs())
    assert low.reward_weights == [1.0] and low.scale_rewards == "batch"
