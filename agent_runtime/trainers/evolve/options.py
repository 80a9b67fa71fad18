"""What ``agent-runtime evolve`` is asked to do: the options, and each recipe's stages.

A *recipe* is the list of stages one iteration runs, in order. Every stage leaves a marker in
``OUT/iter_NNNN/stages/`` when it finishes, so ``--resume`` re-enters an iteration at the first
stage without one (:mod:`.pipeline`).

* ``self-evolve`` (Mobile-Agent-v3 §2.2.3, the default): M^(k+1) = Train(M^(k), filter(Rollout(M^(k), Q))).
  ``rollouts`` of the current role model on train instances → ``critics`` (step and trajectory
  critics, when a critic model is named) → ``corrections`` on SimPhone (the oracle labels the
  states the failed rollouts visited: :mod:`.corrections`) or ``hints`` on a task list
  (hint-guided rejection sampling on the tasks every rollout failed) → ``sft`` from the current
  adapter on the filtered rollouts, the corrections or hinted demonstrations and the data carried
  over from iterations that were not promoted → ``rl``
  (optional online DGRPO/TRPO) → ``eval`` on selection instances → ``promote`` (:mod:`.gate`).
* ``mobilerl`` (MobileRL §4): the first iteration is its chain — ``demos`` (oracle demonstrations
  with the reasoning removed) → ``sft`` (reasoning-free SFT) → ``irr`` (Iterative Reasoning
  Refinement) → ``rl`` (DGRPO) → ``eval`` → ``promote``; later iterations are more DGRPO.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

Recipe = Literal["self-evolve", "mobilerl"]
Stage = Literal["rollouts", "critics", "corrections", "hints", "demos", "sft", "irr", "rl", "eval", "promote"]


class EvolveOptions(BaseModel):
    """Every option of ``agent-runtime evolve``: the command's flags are made from these fields
    (:mod:`agent_runtime.cli.options`), their descriptions its help."""

    out: Path = Field(description="output directory (iterations, reports, best/)")
    config: Path | None = Field(None, description="runtime config (TOML); default: the offline demo model's")
    model: str | None = Field(
        None, description="the models.NAME entry to evolve (default: the --role's model)"
    )
    role: str = Field(
        "manager,worker", description="roles trained by SFT, comma-separated; they share --model"
    )
    base: str | None = Field(None, description="start from this model ref instead of the config's")
    recipe: Recipe = Field(
        "self-evolve",
        description="the recipe: self-evolve (Mobile-Agent-v3) or mobilerl (SFT -> IRR -> DGRPO)",
    )
    iterations: int = Field(1, ge=1, description="iterations in total (--resume counts on)")
    tasks: str | None = Field(
        None, description="SimPhone templates to train on: globs or re:REGEX (default: all)"
    )
    task_list: Path | None = Field(
        None, description="JSONL tasks for any device (goal, split, hints); needs --critic-model"
    )
    device: str | None = Field(None, description="device spec for --task-list (default: the config's)")
    train_episodes: int = Field(4, ge=1, description="train instances per template per iteration")
    eval_tasks: str | None = Field(
        None, description="templates the gate and the final test score (default: --tasks)"
    )
    eval_episodes: int = Field(5, ge=1, description="selection instances per template (the gate's)")
    final_episodes: int | None = Field(
        None, ge=1, description="final-test instances per template, scored once a run (default: eval's)"
    )
    heldout_tasks: str | None = Field(
        None, description="template-held-out templates the final test scores (default: all 13)"
    )
    heldout_episodes: int = Field(1, ge=0, description="final-test instances per held-out template (0: none)")
    workers: int = Field(3, ge=1, description="episodes played at once (threads share one engine)")
    ray: str | None = Field(
        None,
        description="SimPhone rollouts and evaluations on Ray: local | auto | HOST:PORT (None: the config's "
        "[cluster] ray_address, else this machine); online RL keeps its in-process policy here",
    )
    rollout_temperature: float | None = Field(
        None, ge=0.0, le=2.0, description="sampling temperature of the rollouts (default: the model's own)"
    )
    critic_model: str | None = Field(
        None, description="the models.NAME entry of the step and trajectory critics"
    )
    corrections: bool = Field(
        True,
        description="SimPhone: the oracle labels the states failed rollouts visited (DAgger), not hints",
    )
    hints: bool = Field(
        True,
        description="hint-guided rejection sampling on failed tasks (task lists; SimPhone with "
        "--no-corrections)",
    )
    hint_samples: int = Field(2, ge=1, description="replies per hinted call")
    hint_fallback: Literal["oracle", "drop"] = Field(
        "oracle", description="a hinted call with no verified reply: oracle (keep the demonstration) or drop"
    )
    # SFT continues a converged adapter: a small lr with warm-up, batches of 8, earlier data
    # replayed and the checkpoint kept that is best on held-aside train rows (docs/training.md,
    # "Continuing an adapter": the measurement behind these defaults).
    sft_lr: float = Field(2e-5, gt=0.0, description="SFT learning rate")
    sft_epochs: float = Field(1.0, gt=0.0, description="SFT passes over the data")
    sft_max_steps: int = Field(-1, description="SFT optimizer steps (-1: use --sft-epochs)")
    sft_batch_size: int = Field(8, ge=1, description="SFT batch size (rows per optimizer step)")
    # A forward of 8 rows of ~1,000 tokens holds 8 × 1,000 × 49,152 float32 logits several times
    # over (loss, its gradient, TRL's entropy): on a 24 GB CPU machine the demo model's SFT ran out
    # of memory. The batch is the same either way; only how much of it one forward holds differs.
    sft_micro_batch: int | None = Field(
        None,
        ge=1,
        description="SFT rows per forward, the rest of the batch accumulated (default: 1 on the CPU, "
        "the whole batch on a GPU)",
    )
    sft_warmup: float = Field(0.1, ge=0.0, lt=1.0, description="share of SFT steps spent warming up")
    sft_validation: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="share of SFT rows held aside to keep the best checkpoint, the start's included "
        "(0: keep the last step)",
    )
    replay_ratio: float = Field(1.0, ge=0.0, description="earlier rows replayed per new SFT row, per role")
    replay_runs: Path | None = Field(
        None,
        description="runs the start was trained on (default: its manifest's source runs where they "
        "exist, else oracle demos of the train templates)",
    )
    max_samples: int | None = Field(None, ge=1, description="cap on SFT rows per role")
    rl: Literal["none", "dgrpo", "trpo"] = Field(
        "none", description="online RL after SFT: none, dgrpo or trpo"
    )
    rl_role: str = Field("worker", description="the role online RL trains")
    rl_iterations: int = Field(1, ge=1, description="online RL iterations per evolve iteration")
    group_size: int = Field(4, ge=2, description="online RL group size G")
    rl_lr: float = Field(1e-5, gt=0.0, description="online RL learning rate")
    rl_episodes: int = Field(1, ge=1, description="train instances per template in online RL")
    # The run's family-wise level: each planned iteration promotes when the one-sided
    # template-clustered p-value <= promote_alpha / iterations (gate.py).
    promote_alpha: float = Field(
        0.05,
        gt=0.0,
        le=1.0,
        description="the run's false-promotion level, split over its --iterations (clustered test)",
    )
    gate_iterations: int | None = Field(
        None,
        ge=1,
        description="iterations --promote-alpha is split over, fixed at the run's start (default: "
        "--iterations); count those a later --resume will add",
    )
    seed: int = Field(0, ge=0, description="seeds instances, sampling and training")
    resume: bool = Field(False, description="continue after the last finished stage")
    overwrite: bool = Field(False, description="replace an earlier run in --out")

    @model_validator(mode="after")
    def _task_list_needs_a_critic(self) -> EvolveOptions:
        if self.task_list is not None and self.critic_model is None:
            raise ValueError(
                "--task-list needs --critic-model: without a task checker the critic judges success"
            )
        if self.task_list is not None and self.recipe == "mobilerl":
            raise ValueError("--recipe mobilerl starts from oracle demonstrations, which only SimPhone has")
        return self

    @model_validator(mode="before")
    @classmethod
    def _mobilerl_ends_in_dgrpo(cls, data: Any) -> Any:
        """MobileRL's chain ends in DGRPO: its recipe runs it unless --rl names another method."""
        if isinstance(data, dict) and data.get("recipe") == "mobilerl" and data.get("rl") in (None, "none"):
            return {**data, "rl": "dgrpo"}
        return data

    def sft_split(self, gpu: bool) -> tuple[int, int]:
        """(rows per forward, forwards per optimizer step) for an SFT batch of ``sft_batch_size``.

        >>> EvolveOptions(out="o", sft_batch_size=8).sft_split(gpu=False)
        (1, 8)
        >>> EvolveOptions(out="o", sft_batch_size=8, sft_micro_batch=4).sft_split(gpu=False)
        (4, 2)
        """
        micro = self.sft_micro_batch or (self.sft_batch_size if gpu else 1)
        micro = min(micro, self.sft_batch_size)
        return micro, -(-self.sft_batch_size // micro)

    def roles(self) -> list[str]:
        return [r.strip() for r in self.role.split(",") if r.strip()]

    def stages(self, iteration: int) -> list[Stage]:
        """The stages of ``iteration`` (≥ 1) under the recipe (module docstring)."""
        rl: list[Stage] = [] if self.rl == "none" else ["rl"]
        if self.recipe == "mobilerl":
            first: list[Stage] = ["demos", "sft", "irr"] if iteration == 1 else []
            return [*first, *rl, "eval", "promote"]
        critics: list[Stage] = ["critics"] if self.critic_model else []
        # Where the oracle can label the model's own states, that is the data; hints are for
        # devices without one (or when corrections are turned off).
        data: list[Stage] = ["corrections"] if self.task_list is None and self.corrections else []
        if not data and self.hints:
            data = ["hints"]
        return ["rollouts", *critics, *data, "sft", *rl, "eval", "promote"]

    def held_out_tasks(self) -> str | None:
        return self.eval_tasks if self.eval_tasks is not None else self.tasks

    def final_per_template(self) -> int:
        return self.final_episodes if self.final_episodes is not None else self.eval_episodes
