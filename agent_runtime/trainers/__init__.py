"""Trainers: turn traces and SimPhone demonstrations into better role models.

The subpackages follow the pipeline (``agent-runtime distill``):

* :mod:`.data` — traces → :mod:`.data.samples` (one sample per role call, with labels) →
  :mod:`.data.filters` (rejection sampling, Mobile-Agent-v3 §2.2.3) → :mod:`.data.datasets`
  (Hugging Face datasets in TRL's conversational format); :mod:`.data.preferences` (ReachAgent's
  four DPO levels, FAILURE→SUCCESS corrections) and :mod:`.data.matching`;
* :mod:`.demos` — SimPhone's oracle: plans (:mod:`.demos.plans`), demonstrations played through the
  runtime's own graph (:mod:`.demos.traces`) and action-only expert steps (:mod:`.demos.experts`);
* :mod:`.critics` — the step and trajectory critics that label traces (``agent-runtime judge``);
* offline methods at this level — ``sft`` (:mod:`.sft_trainer`, TRL ``SFTTrainer``, LoRA by
  default), ``dpo`` (:mod:`.dpo_trainer`), ``irr`` (:mod:`.irr_trainer`, Iterative Reasoning
  Refinement, MobileRL §4.2), with :mod:`.distill` choosing among them;
* :mod:`.online` — ``trpo`` / ``dgrpo``: online RL on rollouts of the runtime graph
  (:mod:`.online.loop`, :mod:`.online.rollouts`, :mod:`.online.policy_gradient`);
* :mod:`.hi_agent` — ``grpo``: Hi-Agent's single-step GRPO (TRL ``GRPOTrainer``) on the oracle's
  steps with the foresight reward, alternating levels.

Every output directory carries a :class:`~.artifacts.Manifest`; iterative trainers share
:mod:`.iterations`. Nothing here imports torch, transformers or trl until a trainer runs.
"""

from __future__ import annotations

#: The training methods ``distill`` offers, with one line each for ``--help`` and errors.
METHODS: dict[str, str] = {
    "sft": "supervised fine-tuning on filtered role calls from traces",
    "dpo": "DPO on preference pairs (SimPhone levels, trace corrections)",
    "irr": "Iterative Reasoning Refinement of SimPhone expert demonstrations",
    "trpo": "online RL on SimPhone rollouts: trajectory-aware relative policy optimisation (GUI-Owl)",
    "dgrpo": "online RL on SimPhone rollouts: difficulty-adaptive GRPO with SPA, DAPR, FCF (MobileRL)",
    "grpo": "single-step GRPO on SimPhone oracle steps with the foresight reward, TRL (Hi-Agent)",
}

__all__ = ["METHODS"]
