"""Single-step GRPO with Hi-Agent's foresight reward through TRL's ``GRPOTrainer`` (Hi-Agent §4.2, eq. 5).

``distill --method grpo`` trains on the oracle's single-step records (:mod:`.grpo_data`):

* ``--role low`` (or ``worker``) — the **low level** π_ℓ (screenshot + instruction → action
  JSON), rewarded by r_ℓ = 1 iff its action matches the oracle's: same type, points within ε
  (normalised), same text/button/status (:func:`make_low_level_reward`). The high level is frozen
  as the oracle's instruction.
* ``--role high`` (or ``manager``) — the **high level** π_h (screenshot + task → reasoning +
  instruction), rewarded by the foresight reward 0.4·r_fmt + 0.3·r_env + 0.3·V_judge
  (:mod:`.grpo_rewards`): r_env runs the frozen π_ℓ on the generated instruction, V_judge asks a
  frozen judge model. Both are chat models behind our interface (in-process ``transformers:`` or
  an OpenAI-compatible server); by default the base model plays both.
* ``--role high --alternate`` (or ``manager``) — eq. 5: each iteration first fixes π_h^(k-1) and
  updates π_ℓ, then fixes that π_ℓ and updates π_h. The low level trains on the records' oracle
  instructions and on π_h^(k-1)'s own subgoals for the same states, the state's oracle action their
  target (:mod:`.grpo_subgoals`: which subgoals, and why).

``low``/``high`` are the ``hi_agent`` graph's roles, ``worker``/``manager`` the Mobile-Agent-v3 roles
holding the levels' places: the training is the same, the manifests name the role as given, so
each adapter says which graph role it is for.

Each phase is one ``trl.GRPOTrainer`` run (``GRPOConfig.trl_kwargs()``: Table 5), LoRA, with our
processor as ``processing_class``; the next iteration continues from its adapter (the optimizer
starts afresh each phase, as separate GRPO runs do). The KL reference stays where each level's RL
started (``--base``, or ``--low-level`` for the alternating worker) in every iteration and on
``--resume`` (:func:`pin_reference`). The iteration folders, resume and metrics file are
:mod:`agent_runtime.trainers.iterations`'s, shared with online RL: ``OUT/iter_NNNN/`` holds the
trained role's adapter + ``manifest.json`` (a complete distill output), ``low_level/``
(alternating runs: the worker adapter + its manifest + ``subgoals.jsonl``, π_h's subgoals it also
trained on) and ``grpo_state.json`` (metrics so far; written last, so an iteration without it is
replayed by ``--resume``). ``OUT/metrics.jsonl`` gets one line per iteration: mean reward per
component, the match rate and the KL reference of each phase, and (alternating) ``subgoals``.
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agent_runtime.errors import ConfigError, TrainingError
from agent_runtime.models.model_ref import ModelRef
from agent_runtime.models.refs import MANIFEST, ResolvedModel, resolve_model_ref
from agent_runtime.trainers.artifacts import (
    DataSummary,
    LossPoint,
    Manifest,
    TrainingSummary,
    write_manifest,
)
from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.hi_agent.grpo_config import GRPO_LEVELS, GRPOConfig
from agent_runtime.trainers.hi_agent.grpo_data import GRPORecord, Level, low_level_text, save_records
from agent_runtime.trainers.hi_agent.grpo_rewards import (
    Judge,
    LowLevelPolicy,
    RewardFunc,
    foresight_reward_funcs,
    make_low_level_reward,
)
from agent_runtime.trainers.hi_agent.grpo_subgoals import SUBGOALS_FILE, SubgoalStats, subgoal_records
from agent_runtime.trainers.iterations import ADAPTER_FILES, Echo, Iterations, copy_adapter, lora_manifest
from agent_runtime.trainers.online.loop import RLOptions

if TYPE_CHECKING:
    import trl
    from datasets import Dataset
    from langchain_core.language_models import BaseChatModel
    from transformers import TrainerCallback

STATE_FILE = "grpo_state.json"
LOW_DIR = "low_level"
DATA_DIR = "data"
#: The adapter name TRL's GRPOTrainer takes the KL reference from; with none, the base (adapters off).
TRL_REF_ADAPTER = "ref"
#: The role names of the two levels, by how the trained ``--role`` names them: an adapter of
#: ``--role low`` is for the ``hi_agent`` graph's low level, one of ``--role worker`` for the Worker.
LEVEL_NAMES: dict[str, dict[Level, str]] = {
    "hi_agent": {"high": "high", "low": "low"},
    "mobile_agent_v3": {"high": "manager", "low": "worker"},
}


def level_names(role: str) -> dict[Level, str]:
    """The names of both levels in the naming ``role`` uses (its iteration manifests say them).

    >>> level_names("high")["low"], level_names("manager")["low"]
    ('low', 'worker')
    """
    return LEVEL_NAMES["hi_agent" if role in LEVEL_NAMES["hi_agent"].values() else "mobile_agent_v3"]


# -- the frozen models: π_ℓ for r_env and the judge, through our chat-model interface --------------


def chat_model_for(ref: str | ModelRef, *, max_tokens: int) -> BaseChatModel:
    """A greedy chat model for a model reference: ``http(s)://HOST/v1[#name]`` or a local model.

    Local references are what ``--base`` accepts (a directory, ``transformers:DIR?adapter=A``, a
    distill output); they run in-process on the shared engine of their base directory.
    """
    from agent_runtime.config import ModelConfig
    from agent_runtime.models import make_chat_model

    model = ModelRef.parse(ref)
    if model.kind == "endpoint":
        cfg = ModelConfig(
            base_url=model.location, model=model.served or "auto", temperature=0.0, max_tokens=max_tokens
        )
    else:
        cfg = ModelConfig(
            base_url=None, model=resolve_model_ref(model).reference(), temperature=0.0, max_tokens=max_tokens
        )
    return make_chat_model(cfg)


def _data_url(image: Any) -> str:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def ask(model: BaseChatModel, role: str, image: Any, text: str) -> str:
    """One screenshot + text call; ``role`` names the caller in the model's metadata (traces, doubles)."""
    from langchain_core.messages import HumanMessage

    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if image is not None:
        content.insert(0, {"type": "image_url", "image_url": {"url": _data_url(image)}})
    reply = model.invoke([HumanMessage(content=content)], config={"metadata": {"agent_runtime_role": role}})  # type: ignore[arg-type]
    return str(reply.content)


class ChatLowLevel:
    """π_ℓ for r_env: the low-level prompt for the generated instruction on the row's screenshot."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    def __call__(self, row: Mapping[str, Any], instruction: str) -> str:
        return ask(self.model, "low_level", row.get("image"), low_level_text(row["image_size"], instruction))


class ChatHighLevel:
    """π_h writing subgoals (:func:`~.grpo_subgoals.subgoal_records`): the prompt on the row's screenshot."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    def __call__(self, row: Mapping[str, Any], prompt: str) -> str:
        return ask(self.model, "high_level", row.get("image"), prompt)


def release(model: BaseChatModel | None) -> None:
    """Drop an in-process chat model's adapter from the shared engine (a finished iteration's policy)."""
    engine = getattr(model, "_engine", None)
    name = getattr(model, "_adapter_name", None) if getattr(model, "adapter", None) else None
    if engine is not None and name in engine.adapters:
        engine.unload_adapter(name)


class ChatJudge:
    """V_judge: Hi-Agent's judge prompt with the row's screenshot; the reply is parsed by the reward."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    def __call__(self, row: Mapping[str, Any], prompt: str) -> str:
        return ask(self.model, "judge", row.get("image"), prompt)


# -- rewards --------------------------------------------------------------------------------------


class RewardLog:
    """Keeps every value each reward function returned during a phase (the live metrics)."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def wrap(self, func: RewardFunc) -> Callable[..., list[float | None]]:
        """``func`` as TRL calls it (a reward per completion, ``None`` where it does not apply),
        logging what it returns."""
        name = func.__name__

        def logged(completions: list[Any], **kwargs: Any) -> list[float | None]:
            out = func(completions, **kwargs)
            self.values.setdefault(name, []).extend(float(v) for v in out if v is not None)
            return [*out]

        logged.__name__ = name  # TRL names its reward columns after the function
        return logged

    def means(self) -> dict[str, float]:
        return {k: round(sum(v) / len(v), 4) for k, v in self.values.items() if v}


# -- one phase: a TRL GRPOTrainer run --------------------------------------------------------------


class PhaseResult(BaseModel):
    level: Level
    role: str
    rows: int
    reference: str = Field(description="the KL reference: the policy this level's RL started from")
    rewards: dict[str, float] = Field(description="mean value of each reward component")
    reward: float = Field(description="mean total reward (weighted for the high level)")
    match_rate: float = Field(description="share of actions matching the oracle (r_ℓ, or r_env)")
    training: TrainingSummary


def pin_reference(model: Any, start: ResolvedModel) -> None:
    """Make the KL reference of a TRL GRPO run ``start``, the policy RL started from.

    TRL's ``GRPOTrainer`` takes as reference the adapter it is given (a copy under ``"ref"``) or,
    for a fresh adapter, the base with adapters disabled. Each of our iterations is a new TRL
    run from the previous iteration's adapter, so left alone the reference would move to
    iteration k−1 every iteration (and on ``--resume``) and the KL would only bound one
    iteration's step. So TRL's copy is dropped and the starting adapter, if any, is loaded in
    its place, frozen; from the bare base there is none, and TRL disables the adapters instead.
    """
    if TRL_REF_ADAPTER in model.peft_config:
        model.delete_adapter(TRL_REF_ADAPTER)
    if start.adapter is not None:
        model.load_adapter(str(start.adapter), adapter_name=TRL_REF_ADAPTER, is_trainable=False)
        model.set_adapter("default")


def make_trainer(
    cfg: GRPOConfig,
    dataset: Dataset,
    reward_funcs: Sequence[Callable[..., list[float | None]]],
    *,
    reference: str,
    callbacks: list[TrainerCallback] | None = None,
) -> trl.GRPOTrainer:
    """A ``trl.GRPOTrainer`` for ``cfg.base`` on ``dataset``, its KL reference ``reference`` (a
    model reference over the same base model: :func:`pin_reference`)."""
    import trl
    from trl.trainer.utils import disable_dropout_in_model

    from agent_runtime.models.hf import vision_token_ids
    from agent_runtime.trainers.hf import load_policy

    policy = load_policy(cfg)
    kwargs = cfg.trl_kwargs()
    tokenizer = getattr(policy.processor, "tokenizer", None)  # None: a text-only model's tokenizer
    if tokenizer is not None:
        # TRL suppresses only the image placeholder; a VLM never writes any vision token (as the
        # in-process server, agent_runtime.models.engine), and these replace TRL's list.
        suppress = vision_token_ids(tokenizer, getattr(policy.model, "config", None))
        if suppress:
            kwargs["generation_kwargs"] = {
                **(kwargs.get("generation_kwargs") or {}),
                "suppress_tokens": suppress,
            }
    trainer = trl.GRPOTrainer(
        model=policy.model,
        args=trl.GRPOConfig(**kwargs),
        reward_funcs=list(reward_funcs),
        train_dataset=dataset,
        processing_class=policy.processor,
        peft_config=policy.peft_config,
        callbacks=callbacks,
    )
    if cfg.beta:
        start = resolve_model_ref(reference)
        if Path(start.base).resolve() != Path(policy.resolved.base).resolve():
            raise ConfigError(
                f"the KL reference {reference} is not over the trained model's base {policy.resolved.base}"
            )
        pin_reference(trainer.model, start)
    # TRL zeroed the dropout of the modules it was given (disable_dropout); the reference adapter
    # pin_reference loaded came later, and with dropout on the KL would measure noise.
    model: Any = trainer.model  # set: the trainer was given a model
    disable_dropout_in_model(model)
    return trainer


def run_phase(
    cfg: GRPOConfig, dataset: Dataset, reward_funcs: list[RewardFunc], *, reference: str
) -> PhaseResult:
    """Train ``cfg.base`` with ``trl.GRPOTrainer`` on ``dataset``, KL to ``reference``; the adapter
    goes to ``cfg.output_dir``."""
    from agent_runtime.trainers.hf import LossRecorder, train_and_save

    log = RewardLog()
    recorder = LossRecorder()
    trainer = make_trainer(
        cfg, dataset, [log.wrap(f) for f in reward_funcs], reference=reference, callbacks=[recorder]
    )
    training = train_and_save(trainer, cfg, recorder)
    means = log.means()
    if cfg.level == "high":
        weights = dict(zip(("format_reward", "env_reward", "judge_reward"), cfg.reward_weights, strict=True))
        reward = sum(weights[k] * means.get(k, 0.0) for k in weights)
        match = means.get("env_reward", 0.0)
    else:
        reward = match = means.get("action_match", 0.0)
    return PhaseResult(
        level=cfg.level,
        role=cfg.role,
        rows=len(dataset),
        reference=reference,
        rewards=means,
        reward=round(reward, 4),
        match_rate=match,
        training=training,
    )


def metrics_line(m: dict[str, Any]) -> str:
    """The live one-line summary of an iteration."""
    parts = []
    for p in m["phases"]:
        loss = p["training"]["losses"][-1]["loss"] if p["training"]["losses"] else float("nan")
        comps = ", ".join(f"{k.removesuffix('_reward')} {v:.2f}" for k, v in p["rewards"].items())
        parts.append(
            f"{p['role']} reward {p['reward']:.3f} ({comps}), match {p['match_rate']:.2f}, "
            f"loss {loss:+.4f}, {p['training']['steps']} steps"
        )
    if "subgoals" in m:  # alternating: the low level's phase also had π_h's subgoals
        parts[0] += f", +{m['subgoals']['kept']} π_h subgoals"
    return f"iter {m['iteration']}: " + " | ".join(parts) + f", {m['time_s']:.1f}s"


# -- the loop ---------------------------------------------------------------------------------------


class GRPOLoop:
    """Data once, then ``opts.iterations`` iterations of one or two GRPO phases (module docstring)."""

    def __init__(
        self,
        cfg: GRPOConfig,
        opts: RLOptions,
        settings: PromptSettings,
        *,
        judge: Judge | None = None,
        low_level: LowLevelPolicy | None = None,
        overwrite: bool = False,
        echo: Echo | None = None,
    ) -> None:
        if cfg.role not in GRPO_LEVELS:
            raise ConfigError(
                f"--method grpo trains the worker (low level) or the manager (high level), not {cfg.role!r}",
                hint="use --role worker|manager, or the hi_agent graph's --role low|high",
            )
        if cfg.alternate and GRPO_LEVELS[cfg.role] != "high":
            raise ConfigError("--alternate trains both levels; it goes with --role manager (or high)")
        if not cfg.lora:
            raise ConfigError("GRPO trains a LoRA adapter", hint="drop --full")
        per_step = cfg.batch_size * cfg.gradient_accumulation_steps
        if per_step % cfg.num_generations:
            raise ConfigError(
                f"batch size x grad accum ({per_step}) must be a multiple of the group size "
                f"({cfg.num_generations}): TRL samples whole groups",
                hint="change --batch-size, --grad-accum or --group-size",
            )
        if opts.server_url or opts.ray_address:
            raise ConfigError(
                "--method grpo trains in-process with TRL; --server-url/--ray are for trpo/dgrpo"
            )
        self.cfg, self.opts, self.settings = cfg, opts, settings
        self.level: Level = GRPO_LEVELS[cfg.role]
        self.names = level_names(cfg.role)
        self.echo = echo or (lambda _text: None)
        self.out = Path(cfg.output_dir).resolve()
        self.resolved = resolve_model_ref(cfg.base)
        self.low_ref = cfg.low_level or str(self.resolved.base)
        self._judge, self._low_level = judge, low_level
        self.metrics: list[dict[str, Any]] = []
        self.iterations = Iterations(
            self.out,
            what="GRPO",
            state_file=STATE_FILE,
            resume=opts.resume,
            overwrite=overwrite,
            required=(f"{LOW_DIR}/{MANIFEST}",) if cfg.alternate else (),
            also=(LOW_DIR, *ADAPTER_FILES),
        )
        if self.iterations.start:
            state_file = self.iterations.dir(self.iterations.start) / STATE_FILE
            self.metrics = json.loads(state_file.read_text(encoding="utf-8"))["metrics"]

    # -- data -----------------------------------------------------------------------------------

    def _records(self) -> tuple[list[GRPORecord], dict[str, Any]]:
        from agent_runtime.trainers.hi_agent.grpo_data import RECORDS_FILE, build_records, load_records

        where = self.out / DATA_DIR
        if self.opts.resume and (where / RECORDS_FILE).is_file():
            records = load_records(where / RECORDS_FILE)
            return records, {"expert_steps": len(records), "reused": True}
        records, experts = build_records(
            where,
            self.settings,
            tasks=self.opts.tasks,
            split=self.opts.split,
            episodes=self.opts.episodes,
            seed=self.cfg.seed,
        )
        for key, why in experts.failed.items():
            self.echo(f"skipped {key}: {why}")
        self.echo(
            f"oracle steps: {len(records)} from {experts.successful_episodes}/{experts.episodes} episodes"
        )
        if not records:
            raise TrainingError(
                f"the oracle succeeded on no task matching {self.opts.tasks!r}",
                hint="see the skipped tasks above; pick others with --tasks",
            )
        return records, {
            "expert_steps": len(records),
            "expert_episodes": experts.episodes,
            "successful_episodes": experts.successful_episodes,
            "failed_episodes": experts.failed,
        }

    def _datasets(self, records: list[GRPORecord]) -> dict[Level, Dataset]:
        from agent_runtime.models import load_processor
        from agent_runtime.trainers.hi_agent.grpo_data import build_dataset

        self.tokenizer = getattr(load_processor(self.resolved.base), "tokenizer", None)
        levels: list[Level] = ["low", "high"] if self.cfg.alternate else [self.level]
        out: dict[Level, Dataset] = {}
        for level in levels:
            dataset, dropped = build_dataset(
                records, level, max_prompt_tokens=self.cfg.max_prompt_length, tokenizer=self.tokenizer
            )
            if dropped:
                self.echo(
                    f"{level} level: dropped {dropped} rows, prompts over {self.cfg.max_prompt_length} tokens"
                )
            out[level] = dataset
        return out

    # -- phases ---------------------------------------------------------------------------------

    def _phase_cfg(self, level: Level, init: str, output: Path, it: int) -> GRPOConfig:
        return self.cfg.model_copy(
            update={
                "base": init,
                "output_dir": output,
                "level": level,
                "role": self.names[level],
                "seed": self.cfg.seed + it - 1,
            }
        )

    def _low_policy(self, low_ref: str) -> tuple[LowLevelPolicy, BaseChatModel | None]:
        """π_ℓ = ``low_ref`` greedy (or the injected one), and its chat model to release."""
        if self._low_level is not None:
            return self._low_level, None
        model = chat_model_for(low_ref, max_tokens=self.cfg.max_new_tokens)
        return ChatLowLevel(model), model

    def _high_rewards(self, low_ref: str) -> tuple[list[RewardFunc], BaseChatModel | None]:
        """The foresight reward with π_ℓ = ``low_ref`` (or the injected one) and the judge."""
        low, low_model = self._low_policy(low_ref)
        judge = self._judge or ChatJudge(
            chat_model_for(self.cfg.judge_model or str(self.resolved.base), max_tokens=32)
        )
        return foresight_reward_funcs(low, judge, epsilon=self.cfg.coord_epsilon), low_model

    def _low_dataset(self, high_ref: str, low_ref: str, where: Path) -> tuple[Dataset, SubgoalStats]:
        """Eq. 5's low-level data: the oracle's records plus π_h^(k-1)'s subgoals (:mod:`.grpo_subgoals`),
        which are also written to ``where/subgoals.jsonl``."""
        from agent_runtime.trainers.hi_agent.grpo_data import build_dataset

        high_model = chat_model_for(high_ref, max_tokens=self.cfg.max_new_tokens)
        low, low_model = self._low_policy(low_ref)
        try:
            extra, stats = subgoal_records(
                self.records,
                ChatHighLevel(high_model),
                low,
                subgoal_filter=self.cfg.subgoal_filter,
                epsilon=self.cfg.coord_epsilon,
            )
        finally:
            release(high_model)
            release(low_model)
        save_records(where / SUBGOALS_FILE, extra)
        limit = self.cfg.max_prompt_length
        dataset, _ = build_dataset(
            [*self.records, *extra], "low", max_prompt_tokens=limit, tokenizer=self.tokenizer
        )
        return dataset, stats

    def _iteration(self, it: int, datasets: dict[Level, Dataset]) -> dict[str, Any]:
        started = time.perf_counter()
        where = self.iterations.dir(it)
        where.mkdir(parents=True, exist_ok=True)
        previous = self.cfg.base if it == 1 else str(self.iterations.dir(it - 1))
        phases: list[PhaseResult] = []
        m: dict[str, Any] = {"iteration": it}
        # The KL reference of each level is where its RL started, in every iteration (pin_reference).
        if self.level == "low":
            cfg = self._phase_cfg("low", previous, where, it)
            funcs = [make_low_level_reward(epsilon=cfg.coord_epsilon)]
            phases.append(run_phase(cfg, datasets["low"], funcs, reference=self.cfg.base))
            self._write_manifest(where, cfg, phases[-1])
        else:
            low_ref = self.low_ref
            if self.cfg.alternate:
                low_prev = self.low_ref if it == 1 else str(self.iterations.dir(it - 1) / LOW_DIR)
                # π_h^(k-1) is fixed while π_ℓ^(k) learns, on the oracle's and π_h's subgoals.
                low_data, stats = self._low_dataset(previous, low_prev, where / LOW_DIR)
                m["subgoals"] = stats.model_dump()
                cfg = self._phase_cfg("low", low_prev, where / LOW_DIR, it)
                funcs = [make_low_level_reward(epsilon=cfg.coord_epsilon)]
                phases.append(run_phase(cfg, low_data, funcs, reference=self.low_ref))
                self._write_manifest(where / LOW_DIR, cfg, phases[-1])
                low_ref = str(where / LOW_DIR)
            cfg = self._phase_cfg("high", previous, where, it)
            funcs, low_model = self._high_rewards(low_ref)
            try:
                phases.append(run_phase(cfg, datasets["high"], funcs, reference=self.cfg.base))
            finally:
                release(low_model)
            self._write_manifest(where, cfg, phases[-1])
        m["phases"] = [p.model_dump(mode="json") for p in phases]
        m["time_s"] = round(time.perf_counter() - started, 3)
        self.metrics.append(m)
        (where / STATE_FILE).write_text(json.dumps({"metrics": self.metrics}), encoding="utf-8")
        self.iterations.append_metrics(m)
        return m

    def run(self) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
        records, data_extra = self._records()
        self.records = records
        datasets = self._datasets(records)
        self.data = DataSummary(
            samples_before=len(records),
            samples_after=min(len(d) for d in datasets.values()),
            train_rows=sum(len(d) for d in datasets.values()),
            extra={**data_extra, "env": self.opts.env, "task_pattern": self.opts.tasks},
        )
        self.iterations.announce(self.echo)
        for it in self.iterations.remaining(self.opts.iterations):
            self.echo(metrics_line(self._iteration(it, datasets)))
        last = self.iterations.last(self.opts.iterations)
        copy_adapter(last, self.out)
        if self.cfg.alternate:
            top = self.out / LOW_DIR
            top.mkdir(exist_ok=True)
            copy_adapter(last / LOW_DIR, top)
            manifest = json.loads((last / LOW_DIR / MANIFEST).read_text(encoding="utf-8"))
            manifest["output"] = str(top)
            write_manifest(Manifest.model_validate(manifest))
        return self.data, self._training(), {"iterations": len(self.metrics)}

    # -- outputs --------------------------------------------------------------------------------

    def _training(self) -> TrainingSummary:
        phases = [p for m in self.metrics for p in m["phases"]]
        return TrainingSummary(
            losses=[
                LossPoint(step=pt["step"], loss=pt["loss"], round=m["iteration"])
                for m in self.metrics
                for p in m["phases"]
                for pt in p["training"]["losses"]
            ],
            steps=sum(p["training"]["steps"] for p in phases),
            runtime_s=round(sum(p["training"]["runtime_s"] for p in phases), 3),
            extra={"iterations": self.metrics},
        )

    def _write_manifest(self, output: Path, cfg: GRPOConfig, phase: PhaseResult) -> None:
        # The metrics of this iteration are not appended yet: include the phases done so far.
        summary = phase.model_dump(mode="json", exclude={"training"})
        training = phase.training.model_copy(update={"extra": {"iterations": self.metrics, "phase": summary}})
        manifest = lora_manifest(
            "grpo",
            cfg,
            self.opts,
            self.resolved,
            output,
            data=self.data.model_copy(update={"train_rows": phase.rows}),
            training=training,
            extra_hyperparameters={"prompt": self.settings.model_dump(mode="json")},
        )
        write_manifest(manifest)


def train_grpo(
    cfg: GRPOConfig,
    opts: RLOptions,
    settings: PromptSettings,
    *,
    judge: Judge | None = None,
    low_level: LowLevelPolicy | None = None,
    overwrite: bool = False,
    echo: Echo | None = None,
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    """Run the loop (module docstring); returns what ``distill`` puts in the final manifest."""
    loop = GRPOLoop(cfg, opts, settings, judge=judge, low_level=low_level, overwrite=overwrite, echo=echo)
    return loop.run()
