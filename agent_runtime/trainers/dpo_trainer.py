"""DPO with TRL's ``DPOTrainer`` (LoRA by default) against the starting model as reference.

Input: a dataset from :func:`~agent_runtime.trainers.data.datasets.build_dpo_dataset` (``prompt``,
``chosen``, ``rejected``, ``images``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_runtime.trainers.artifacts import TrainingSummary
from agent_runtime.trainers.dpo_config import DPOConfig

if TYPE_CHECKING:
    from datasets import Dataset


def train_dpo(config: DPOConfig, dataset: Dataset) -> TrainingSummary:
    """Optimise ``config.base`` on ``dataset`` and save the result to ``config.output_dir``.

    The reference is always the starting model. From a plain model, TRL provides it (the new
    adapter disabled, or a second copy for a full fine-tune). From a LoRA output, training
    continues that adapter and TRL keeps a frozen copy of it as the reference; only a full
    fine-tune of a LoRA output needs the reference built here (base + adapter merged), since
    TRL would otherwise reload the bare base from ``config._name_or_path``.
    """
    import trl

    from agent_runtime.trainers.hf import LossRecorder, load_policy, load_reference, train_and_save

    policy = load_policy(config)
    needs_reference = policy.resolved.adapter is not None and not config.lora
    reference = load_reference(policy.resolved) if needs_reference else None
    args = trl.DPOConfig(**config.trl_kwargs(), beta=config.beta, loss_type=[config.loss_type])
    recorder = LossRecorder()
    trainer = trl.DPOTrainer(
        model=policy.model,
        ref_model=reference,
        args=args,
        train_dataset=dataset,
        processing_class=policy.processor,
        peft_config=policy.peft_config,
        callbacks=[recorder],
    )
    return train_and_save(trainer, config, recorder)
