"""Settings every trainer shares (TRL's ``base_config`` idea): model, LoRA, optimiser, budget.

Each field's ``description`` documents it for code that builds a config and is the help of its
``distill`` option (:mod:`agent_runtime.cli.options`). The command passes the options on by field
name, the unset ones left out, so the method's config supplies those defaults; the rules between
fields (LoRA alpha from the rank) are validators here, so a Python caller gets them too.

Defaults are sized for real checkpoints on a GPU; tests and CPU demos override the budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: LoRA goes on the language model's projections only: the vision tower keeps its weights, so
#: vLLM serves the adapter without ``--enable-tower-connector-lora``.
LANGUAGE_MODEL_LORA_TARGETS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"


class TrainConfig(BaseModel):
    """The fields every method's config has."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    base: str = Field(
        description="base model directory, transformers:DIR?adapter=A, or an earlier distill output"
    )
    output_dir: Path = Field(description="output directory (adapter/model + manifest.json)")
    role: str = Field(
        "worker",
        description="role to train: manager, worker, reflector, notetaker (mobile_agent_v3), high, low "
        "(hi_agent), single (sft: several, manager,worker; grpo: low|high; trpo/dgrpo: worker, "
        "manager or single)",
    )
    lora: bool = Field(True, description="train a LoRA adapter or the full model")
    lora_r: int = Field(16, ge=1, description="LoRA rank (alpha = 2 x rank)")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha (scale = alpha / r); unset: 2 x lora_r")
    lora_dropout: float = Field(0.05, ge=0.0, lt=1.0, description="LoRA dropout")
    lora_target_modules: str = Field(LANGUAGE_MODEL_LORA_TARGETS, description="regex of modules LoRA wraps")
    epochs: float = Field(1.0, gt=0, description="passes over the data")
    max_steps: int = Field(-1, description="optimizer steps (overrides --epochs; -1: use the epochs)")
    learning_rate: float = Field(1e-4, gt=0, description="peak learning rate (default per method)")
    batch_size: int = Field(1, ge=1, description="per-device batch size")
    gradient_accumulation_steps: int = Field(1, ge=1, description="batches per optimizer step")
    warmup_ratio: float = Field(0.0, ge=0.0, lt=1.0, description="share of steps spent warming up")
    lr_scheduler: str = Field("linear", description="transformers scheduler name (linear, cosine, constant)")
    seed: int = Field(0, description="seed for shuffling, dropout and sampling")
    logging_steps: int = Field(1, ge=1, description="log the loss every N steps")
    save_dtype: Literal["float32", "bfloat16"] = Field(
        "float32", description="saved weights' dtype: float32 or bfloat16 (half the size)"
    )
    save_steps: int | None = Field(
        None,
        ge=1,
        description="also keep a checkpoint every N steps (OUT/checkpoints/step-N) to pick the best",
    )
    progress: bool = Field(True, description="show the trainer's progress bar")

    @model_validator(mode="before")
    @classmethod
    def _alpha_twice_the_rank(cls, data: Any) -> Any:
        """LoRA alpha left unset is 2 x the rank: the update's scale (alpha / r) then stays 2 at
        any rank, so ``--lora-r`` changes the adapter's capacity, not its learning rate."""
        if isinstance(data, dict) and data.get("lora_alpha") is None:
            rank = data.get("lora_r", cls.model_fields["lora_r"].default)
            if isinstance(rank, int):
                return {**data, "lora_alpha": 2 * rank}
        return data

    def trl_kwargs(self) -> dict[str, Any]:
        """Arguments every TRL config takes, with the CPU settings that work (facts/tiny-model.md)."""
        import torch

        cuda = torch.cuda.is_available()
        return {
            "output_dir": str(self.output_dir / ".trainer"),
            "num_train_epochs": self.epochs,
            "max_steps": self.max_steps,
            "learning_rate": self.learning_rate,
            "per_device_train_batch_size": self.batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "warmup_steps": self.warmup_ratio,  # a float < 1 is a ratio in transformers 5
            "lr_scheduler_type": self.lr_scheduler,
            "seed": self.seed,
            "logging_steps": self.logging_steps,
            "use_cpu": not cuda,
            "bf16": cuda and torch.cuda.is_bf16_supported(),
            "activation_checkpointing": False,
            "report_to": "none",
            "save_strategy": "steps" if self.save_steps else "no",
            **({"save_steps": self.save_steps, "save_only_model": True} if self.save_steps else {}),
            "disable_tqdm": not self.progress,
            "max_length": None,  # image tokens must never be truncated away
        }
