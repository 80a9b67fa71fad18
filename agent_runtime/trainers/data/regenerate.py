"""The SFT agent regenerates golden states: its own replies become DPO's rejected sides.

ReachAgent §4.3 looks for rejected actions in the SFT agent's own mistakes first: the agent
answers each state of the golden flows, and a reply worse than the golden action is paired
against it (:func:`~agent_runtime.trainers.data.preferences.simphone_pairs` levels them); only
where the agent is not worse does the page's action space supply one (48,013 of the paper's
rejected actions came from the agent, 211,729 from action spaces). Pairs that push down what the
policy actually says correct it where it errs, which pairs against actions it would never take
cannot.

:class:`PolicySampler` asks the policy with the Worker's real prompt — the state's recorded
Worker call, screenshot included (:func:`~agent_runtime.trainers.irr_trainer.openai_messages`) —
through the runtime's chat models: a model reference runs in-process on the shared transformers
engine, an ``http(s)://HOST/v1[#name]`` URL asks an OpenAI-compatible server
(:func:`~agent_runtime.trainers.hi_agent.grpo_trainer.chat_model_for`). The ``k`` replies of a
state come from one request (``n = k``), seeded per state so a rebuild draws the same ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.demos.experts import ExpertStep

if TYPE_CHECKING:
    from agent_runtime.models.base import OpenAIShapedChatModel


class RegenerationOptions(BaseModel):
    """How the SFT agent regenerates golden states for DPO (every field is a distill option)."""

    model_config = ConfigDict(frozen=True)

    k: int = Field(
        2,
        ge=0,
        le=16,
        description="replies the SFT agent samples per golden state, in one request; those worse than "
        "golden are rejected sides (0: only the page's action space)",
    )
    model: str | None = Field(
        None,
        description="the SFT agent that regenerates: model dir, distill output or "
        "http(s)://HOST/v1[#name] (default: the base, DPO's reference)",
    )
    temperature: float = Field(1.0, ge=0.0, le=2.0, description="sampling temperature of the replies")
    max_tokens: int = Field(512, gt=0, description="longest reply")


class PolicySampler:
    """``k`` Worker replies of a chat model to a golden state's recorded Worker prompt."""

    def __init__(
        self, model: OpenAIShapedChatModel, settings: PromptSettings, options: RegenerationOptions, seed: int
    ) -> None:
        self.model = model
        self.settings = settings
        self.options = options
        self.seed = seed

    @classmethod
    def from_ref(
        cls, ref: str, settings: PromptSettings, options: RegenerationOptions, seed: int
    ) -> PolicySampler:
        """The sampler for a model reference or server URL (module docstring)."""
        from agent_runtime.models.base import OpenAIShapedChatModel
        from agent_runtime.trainers.hi_agent.grpo_trainer import chat_model_for

        model = chat_model_for(ref, max_tokens=options.max_tokens)
        assert isinstance(model, OpenAIShapedChatModel)  # make_chat_model builds only ours
        return cls(model, settings, options, seed)

    def __call__(self, step: ExpertStep) -> list[str]:
        # LangChain's messages load when the policy samples, not with the options the CLI reads
        from agent_runtime.roles.caller import message_text
        from agent_runtime.trainers.irr_trainer import openai_messages

        replies = self.model.sample(
            openai_messages(step, self.settings),
            self.options.k,
            temperature=self.options.temperature,
            seed=self.seed * 100_003 + step.seed * 1_009 + step.step,
        )
        return [message_text(r) for r in replies]
