"""Supervised fine-tuning of one role with TRL's ``SFTTrainer`` (LoRA by default).

Input: a dataset from :func:`~agent_runtime.trainers.data.datasets.build_sft_dataset` (``prompt``,
``completion``, ``images``). Output: the adapter (or full model) in ``config.output_dir`` and a
:class:`~agent_runtime.trainers.artifacts.TrainingSummary` with every logged loss; with a
validation share (:class:`~agent_runtime.trainers.sft_config.SFTConfig`), the weights saved are
the best on the held-aside rows and ``extra["validation"]`` says which step that was.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agent_runtime.trainers.artifacts import TrainingSummary
from agent_runtime.trainers.sft_config import SFTConfig

if TYPE_CHECKING:
    from datasets import Dataset


class ValidationPoint(BaseModel):
    step: int
    loss: float
    token_accuracy: float | None = Field(None, description="share of completion tokens predicted right")


class Validation(BaseModel):
    """What the held-aside rows said: every evaluation, and the step whose weights were kept."""

    rows: int
    points: list[ValidationPoint] = Field(default_factory=list)
    best_step: int = Field(0, description="the kept weights' step (0: the start, no step beat it)")

    @property
    def start_loss(self) -> float:
        return self.points[0].loss


def optimizer_steps(rows: int, cfg: SFTConfig) -> int:
    """Optimizer steps of a run on ``rows`` rows, as ``transformers.Trainer`` counts them.

    >>> optimizer_steps(80, SFTConfig(base="m", output_dir=".", batch_size=8, epochs=1.0))
    10
    >>> optimizer_steps(81, SFTConfig(base="m", output_dir=".", batch_size=8, gradient_accumulation_steps=2))
    6
    >>> optimizer_steps(81, SFTConfig(base="m", output_dir=".", max_steps=3))
    3
    """
    if cfg.max_steps > 0:
        return cfg.max_steps
    per_epoch = max(math.ceil(math.ceil(rows / cfg.batch_size) / cfg.gradient_accumulation_steps), 1)
    return math.ceil(cfg.epochs * per_epoch)


def _best_weights_callback(validation: Validation) -> Any:
    from transformers import TrainerCallback

    class BestWeights(TrainerCallback):  # type: ignore[misc]
        """Keeps the trainable weights of the lowest validation loss (the start's included) and
        puts them back when training ends, before the trainer saves; evaluates the last step."""

        def __init__(self) -> None:
            self.model: Any = None
            self.best: dict[str, Any] | None = None

        def snapshot(self) -> dict[str, Any]:
            return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.global_step >= state.max_steps:
                control.should_evaluate = True

        def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Any = None, **kw: Any) -> None:
            if not metrics or "eval_loss" not in metrics:
                return
            step = int(state.global_step)
            if validation.points and validation.points[-1].step == step:
                return  # the last step is evaluated once (it may also be an eval_steps multiple)
            loss = float(metrics["eval_loss"])
            accuracy = metrics.get("eval_mean_token_accuracy")
            validation.points.append(
                ValidationPoint(
                    step=step, loss=loss, token_accuracy=None if accuracy is None else float(accuracy)
                )
            )
            if self.best is None or loss < min(p.loss for p in validation.points[:-1]):
                self.best = self.snapshot()
                validation.best_step = step

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            import torch

            assert self.best is not None  # the start was evaluated before training
            with torch.no_grad():
                for name, param in self.model.named_parameters():
                    if name in self.best:
                        param.copy_(self.best[name])

    return BestWeights()


def train_sft(config: SFTConfig, dataset: Dataset) -> TrainingSummary:
    """Fine-tune ``config.base`` on ``dataset`` and save the result to ``config.output_dir``
    (the best weights on the held-aside rows when ``config.validation_fraction`` > 0)."""
    import trl

    from agent_runtime.trainers.data.datasets import split_validation
    from agent_runtime.trainers.hf import LossRecorder, load_policy, train_and_save

    train_ix, val_ix = split_validation(
        len(dataset),
        fraction=config.validation_fraction,
        max_rows=config.max_validation_rows,
        seed=config.seed,
    )
    validation = Validation(rows=len(val_ix)) if val_ix else None
    kwargs: dict[str, Any] = {**config.trl_kwargs(), "completion_only_loss": config.completion_only_loss}
    if "images" not in dataset.column_names:
        # Batches of rows of like length: role calls run 330-1300 tokens, and random batches of 8
        # padded the demo model's rows to 1.56x their tokens, grouped ones to 1.03x (docs/training.md).
        # A vision row is tokenized in the collator (no input_ids to sort by), with its image.
        kwargs["train_sampling_strategy"] = "group_by_length"
    callbacks: list[Any] = [LossRecorder()]
    if validation is not None:
        steps = optimizer_steps(len(train_ix), config)
        kwargs.update(
            eval_strategy="steps",
            eval_steps=max(1, math.ceil(steps / config.evaluations)),
            per_device_eval_batch_size=config.batch_size,
        )
        callbacks.append(_best_weights_callback(validation))
        train, held = dataset.select(train_ix), dataset.select(val_ix)
    else:
        train, held = dataset, None
    policy = load_policy(config)
    trainer = trl.SFTTrainer(
        model=policy.model,
        args=trl.SFTConfig(**kwargs),
        train_dataset=train,
        eval_dataset=held,
        processing_class=policy.processor,
        peft_config=policy.peft_config,
        callbacks=callbacks,
    )
    if validation is not None:
        callbacks[1].model = trainer.model
        trainer.evaluate()  # the start: a candidate like every later step
    summary = train_and_save(trainer, config, callbacks[0])
    if validation is None:
        return summary
    return summary.model_copy(update={"extra": {**summary.extra, "validation": validation.model_dump()}})
