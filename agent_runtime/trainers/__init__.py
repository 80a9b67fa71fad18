"""Trainers: turn traces and SimPhone demonstrations into better role models.

Pipeline (``agent-runtime distill``): traces → :mod:`.samples` (one sample per role call, with
labels) → :mod:`.filters` (rejection sampling, Mobile-Agent-v3 §2.2.3) → :mod:`.data` (Hugging
Face datasets in TRL's conversational format) → a method:

* ``sft`` — :mod:`.sft_trainer` (TRL ``SFTTrainer``, LoRA by default);
* ``dpo`` — :mod:`.dpo_trainer` on :mod:`.preferences` (ReachAgent's four levels on SimPhone,
  FAILURE→SUCCESS corrections from traces);
* ``irr`` — :mod:`.irr_trainer`, Iterative Reasoning Refinement of :mod:`.experts` (MobileRL §4.2);
* ``trpo`` / ``dgrpo`` — online RL (:mod:`.rl_loop`): rollouts of the runtime graph on SimPhone
  (:mod:`.rollouts`), :mod:`.trpo_trainer` / :mod:`.dgrpo_trainer`, :mod:`.policy_gradient`;
* ``grpo`` — :mod:`.grpo_trainer`: Hi-Agent's single-step GRPO (TRL ``GRPOTrainer``) on the
  oracle's steps (:mod:`.grpo_data`), foresight reward (:mod:`.grpo_rewards`), alternating levels.

Every output directory carries a :class:`~.artifacts.Manifest`. Nothing here imports torch,
transformers or trl until a trainer runs.
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
