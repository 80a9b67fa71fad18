"""Supervised fine-tuning of one role with TRL's ``SFTTrainer`` (LoRA by default).

Input: a dataset from :func:`~agent_runtime.trainers.data.datasets.build_sft_dataset` (``prompt``,
``completion``, ``images``). Output: the adapter (or full model) in ``config.output_dir`` and a
:class:`~agent_runtime.trainers.artifacts.TrainingSummary` with every logged loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_runtime.trainers.artifacts import TrainingSummary
from agent_runtime.trainers.sft_config import SFTConfig

if TYPE_CHECKING:
    from datasets import Dataset


def train_sft(config: SFTConfig, dataset: Dataset) -> TrainingSummary:
    """Fine-tune ``config.base`` on ``dataset`` and save the result to ``config.output_dir``."""
    import trl

    from agent_runtime.trainers.hf import LossRecorder, load_policy, train_and_save

    policy = load_policy(config)
    args = trl.SFTConfig(**config.trl_kwargs(), completion_only_loss=config.completion_only_loss)
    recorder = LossRecorder()
    trainer = trl.SFTTrainer(
        model=policy.model,
        args=args,
        train_dataset=dataset,
        processing_class=policy.processor,
        peft_config=policy.peft_config,
        callbacks=[recorder],
    )
    return train_and_save(trainer, config, recorder)
