"""Iterative Reasoning Refinement (MobileRL §4.2): reasoning for action-only expert steps.

Expert demonstrations (:mod:`agent_runtime.trainers.demos.experts`) say *what* to do, not *why*. Each
round samples ``k`` Worker replies per expert step from a model, keeps replies whose action
matches the expert's (:func:`~agent_runtime.trainers.data.matching.actions_match`), fine-tunes on them
(:func:`~agent_runtime.trainers.sft_trainer.train_sft`) and samples the next round from the
fine-tuned model:

* round 0 (stage 0): every matching reply of the base model is kept;
* later rounds (stage 2): per step, the best matching reply — highest
  ``mean token log-prob − conciseness_weight · words of reasoning`` — replaces the step's data;
  steps without a match keep what they had;
* stop when the match rate (share of steps with at least one match) gains less than
  ``min_improvement`` over the previous round, or after ``max_rounds``.

Every round fine-tunes from the configured base on the current data, so errors do not compound
across rounds. Kept replies are used verbatim: their actions match the expert's by construction.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.actions import to_screen
from agent_runtime.errors import ParseError, TrainingError
from agent_runtime.roles.worker import parse_worker
from agent_runtime.trainers.artifacts import TrainingSummary
from agent_runtime.trainers.base_config import TrainConfig
from agent_runtime.trainers.data.matching import actions_match
from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.demos.experts import ExpertStep
from agent_runtime.trainers.irr_config import IRRConfig

if TYPE_CHECKING:
    from agent_runtime.models.engine import TransformersEngine


class Candidate(BaseModel):
    """One sampled reply and its mean token log-probability (None when the backend gives none)."""

    model_config = ConfigDict(frozen=True)

    text: str
    mean_logprob: float | None = None


class CandidateGenerator(Protocol):
    """Samples Worker replies; after each round IRR points it at the newly trained adapter."""

    def propose(self, step: ExpertStep, messages: list[dict[str, Any]], k: int) -> list[Candidate]: ...

    def use_adapter(self, path: Path, name: str) -> None: ...


def sampling_request(
    model: str | None,
    messages: list[dict[str, Any]],
    k: int,
    *,
    temperature: float,
    top_p: float,
    max_tokens: int,
    seed: int,
    call: int,
    logprobs: bool = False,
) -> Any:
    """The engine request for ``k`` samples of call number ``call`` of a generator seeded with
    ``seed``: every call its own seed, reproducible from the generator's."""
    from agent_runtime.models.protocol import ChatCompletionRequest

    return ChatCompletionRequest.model_validate(
        {
            "model": model,
            "messages": messages,
            "n": k,
            "temperature": temperature,
            "top_p": top_p,
            "max_tokens": max_tokens,
            "logprobs": logprobs,
            "seed": seed * 100_003 + call,
        }
    )


def openai_messages(step: ExpertStep, settings: PromptSettings) -> list[dict[str, Any]]:
    """The step's Worker prompt as an OpenAI chat request (screenshot as a data URL)."""
    from agent_runtime.models.images import encode_screenshot

    png = (Path(step.root) / step.screen_ref).read_bytes()
    part = encode_screenshot(png, settings.budget).part()
    out = []
    for message in step.messages(settings):
        content = [part if p.get("type") == "image_ref" else p for p in message["content"]]
        out.append({"role": message["role"], "content": content})
    return out


class EngineGenerator:
    """Samples from an in-process :class:`~agent_runtime.models.engine.TransformersEngine`."""

    def __init__(
        self,
        engine: TransformersEngine,
        *,
        temperature: float,
        top_p: float,
        max_new_tokens: int,
        seed: int = 0,
        adapter: str | None = None,
    ) -> None:
        self.engine = engine
        self.temperature = temperature
        self.top_p = top_p
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self.adapter = adapter
        self._calls = 0

    def use_adapter(self, path: Path, name: str) -> None:
        """Sample from ``path`` next: a LoRA adapter over the engine's model, or a full model."""
        if (Path(path) / "adapter_config.json").is_file():
            self.engine.load_adapter(name, str(path))
            self.adapter = name
        else:
            from agent_runtime.models.engine import TransformersEngine

            self.engine = TransformersEngine(path)
            self.adapter = None

    def propose(self, step: ExpertStep, messages: list[dict[str, Any]], k: int) -> list[Candidate]:
        self._calls += 1
        request = sampling_request(
            self.adapter, messages, k, temperature=self.temperature, top_p=self.top_p,
            max_tokens=self.max_new_tokens, seed=self.seed, call=self._calls, logprobs=True,
        )  # fmt: skip
        reply = self.engine.chat(request)
        out = []
        for choice in reply.choices:
            tokens = choice.logprobs.content if choice.logprobs else []
            mean = sum(t.logprob for t in tokens) / len(tokens) if tokens else None
            out.append(Candidate(text=choice.message.content, mean_logprob=mean))
        return out


class Judged(BaseModel):
    """A candidate with its action in screen pixels and whether it matches the expert's."""

    candidate: Candidate
    action: dict[str, Any] | None = None
    matched: bool = False
    error: str | None = None
    words: int = 0


def judge_candidate(
    candidate: Candidate, step: ExpertStep, settings: PromptSettings, tolerance: float
) -> Judged:
    """Parse a reply with the runtime's Worker parser and compare its action with the expert's."""
    try:
        out = parse_worker(candidate.text)
    except ParseError as exc:
        return Judged(candidate=candidate, error=exc.message)
    action = to_screen(out.action, settings.mapper(step.screen)).to_json()
    matched = actions_match(action, step.action, target_bounds=step.target_bounds, tolerance=tolerance)
    return Judged(candidate=candidate, action=action, matched=matched, words=len(out.thought.split()))


def score(judged: Judged, conciseness_weight: float) -> float:
    """Higher is better: likely under the model and concise (MobileRL stage 2)."""
    logprob = judged.candidate.mean_logprob if judged.candidate.mean_logprob is not None else 0.0
    return logprob - conciseness_weight * judged.words


def sample_round(
    generator: CandidateGenerator,
    steps: list[ExpertStep],
    config: IRRConfig,
    on_step: Callable[[], None] | None = None,
) -> list[list[Judged]]:
    """``config.k`` judged candidates for every expert step."""
    out = []
    for step in steps:
        candidates = generator.propose(step, openai_messages(step, config.prompt), config.k)
        out.append([judge_candidate(c, step, config.prompt, config.match_tolerance) for c in candidates])
        if on_step is not None:
            on_step()
    return out


def update_data(
    data: dict[int, list[str]], judged: list[list[Judged]], round_: int, conciseness_weight: float
) -> dict[int, list[str]]:
    """The training replies per expert step after a round (stage 0 keeps every match, later
    rounds the best one; steps without a match keep what they had).

    >>> hit = Judged(candidate=Candidate(text="a", mean_logprob=-1.0), matched=True, words=3)
    >>> short = Judged(candidate=Candidate(text="b", mean_logprob=-1.0), matched=True, words=1)
    >>> miss = Judged(candidate=Candidate(text="c"), matched=False)
    >>> update_data({}, [[hit, short, miss], [miss]], 0, 0.1)
    {0: ['a', 'b']}
    >>> update_data({0: ['a', 'b'], 1: ['z']}, [[hit, short, miss], [miss]], 1, 0.1)
    {0: ['b'], 1: ['z']}
    """
    out = dict(data)
    for i, js in enumerate(judged):
        hits = [j for j in js if j.matched]
        if not hits:
            continue
        if round_ == 0:
            out[i] = list(dict.fromkeys(j.candidate.text for j in hits))
        else:
            out[i] = [max(hits, key=lambda j: score(j, conciseness_weight)).candidate.text]
    return out


class RoundStats(BaseModel):
    round: int
    steps: int
    matched_steps: int
    match_rate: float
    candidates: int
    matched_candidates: int
    unparsed_candidates: int
    rows: int = Field(0, description="training rows after this round's update")
    training: TrainingSummary | None = None


class IRRResult(BaseModel):
    rounds: list[RoundStats]
    final_round: int = Field(description="the round whose model was saved as the output")
    stopped: str = Field(description="saturated | max_rounds")
    rows: int


class _Row(BaseModel):
    messages: list[dict[str, Any]]
    completion: str
    root: str

    @property
    def image_root(self) -> str:
        return self.root


def run_irr(
    config: IRRConfig,
    steps: list[ExpertStep],
    generator: CandidateGenerator,
    *,
    on_step: Callable[[], None] | None = None,
    on_round: Callable[[RoundStats], None] | None = None,
) -> IRRResult:
    """Run IRR rounds (module docstring); the last trained model ends up in ``config.output_dir``.

    ``on_step`` is called after each expert step is sampled, ``on_round`` once a round's
    sampling is judged (before its fine-tuning, or when IRR stops).
    """
    from agent_runtime.trainers.data.datasets import build_sft_dataset
    from agent_runtime.trainers.sft_config import SFTConfig
    from agent_runtime.trainers.sft_trainer import train_sft

    if not steps:
        raise TrainingError("IRR got no expert steps", hint="check --tasks; the oracle episodes must succeed")
    data: dict[int, list[str]] = {}
    rounds: list[RoundStats] = []
    previous: float | None = None
    last_trained: int | None = None
    stopped = "max_rounds"
    base_fields = config.model_dump(include=set(TrainConfig.model_fields))
    for r in range(config.max_rounds):
        judged = sample_round(generator, steps, config, on_step)
        matched_steps = sum(1 for js in judged if any(j.matched for j in js))
        stats = RoundStats(
            round=r,
            steps=len(steps),
            matched_steps=matched_steps,
            match_rate=matched_steps / len(steps),
            candidates=sum(len(js) for js in judged),
            matched_candidates=sum(j.matched for js in judged for j in js),
            unparsed_candidates=sum(j.error is not None for js in judged for j in js),
        )
        rounds.append(stats)
        if previous is not None and stats.match_rate - previous < config.min_improvement:
            stopped = "saturated"
            if on_round is not None:
                on_round(stats)
            break
        data = update_data(data, judged, r, config.conciseness_weight)
        rows = [
            _Row(messages=steps[i].messages(config.prompt), completion=text, root=steps[i].root)
            for i, texts in sorted(data.items())
            for text in texts
        ]
        if not rows:
            raise TrainingError(
                f"no sampled reply matched any of the {len(steps)} expert actions in round {r}",
                hint="sample more (--k), raise --temperature, or start from a stronger --base model",
            )
        stats.rows = len(rows)
        if on_round is not None:
            on_round(stats)
        round_dir = Path(config.output_dir) / "rounds" / f"round-{r}"
        summary = train_sft(SFTConfig(**(base_fields | {"output_dir": round_dir})), build_sft_dataset(rows))
        stats.training = summary.model_copy(
            update={"losses": [p.model_copy(update={"round": r}) for p in summary.losses]}
        )
        generator.use_adapter(round_dir, f"irr-round-{r}")
        previous = stats.match_rate
        last_trained = r
    assert last_trained is not None  # round 0 either trained or raised
    out = Path(config.output_dir)
    shutil.copytree(out / "rounds" / f"round-{last_trained}", out, dirs_exist_ok=True)
    return IRRResult(rounds=rounds, final_round=last_trained, stopped=stopped, rows=rounds[last_trained].rows)
