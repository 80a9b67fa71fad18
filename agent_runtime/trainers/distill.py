"""``distill`` end to end: gather data for one role and method, train, write the manifest.

The CLI (:mod:`agent_runtime.cli.distill`) only parses options into a method config and
:class:`DataOptions`; everything else happens here so it can be called from Python too.
Progress goes through a ``track(description, total) -> advance`` callback and messages through
``echo`` (the CLI passes rich progress bars and the console; tests pass nothing).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from agent_runtime.errors import ConfigError, TrainingError
from agent_runtime.models.refs import MANIFEST, ResolvedModel, resolve_model_ref
from agent_runtime.specs import ROLE_SPECS
from agent_runtime.trainers import METHODS
from agent_runtime.trainers.artifacts import (
    DataSummary,
    Manifest,
    TrainingSummary,
    lora_targets_for,
    serve_info,
    write_manifest,
)
from agent_runtime.trainers.base_config import TrainConfig
from agent_runtime.trainers.data.filters.pipeline import FilterSettings
from agent_runtime.trainers.data.regenerate import RegenerationOptions
from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.dpo_config import DPOConfig
from agent_runtime.trainers.hi_agent.grpo_config import GRPO_LEVELS, GRPOConfig
from agent_runtime.trainers.irr_config import IRRConfig
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.loop import RL_METHODS, RLOptions, rollout_workers
from agent_runtime.trainers.online.rollouts import ROLLOUT_GRAPHS
from agent_runtime.trainers.online.trpo_config import TRPOConfig
from agent_runtime.trainers.sft_config import SFTConfig
from agent_runtime.version import __version__

Advance = Callable[[int], None]
Track = Callable[[str, int | None], Advance]
Echo = Callable[[str], None]
T = TypeVar("T")
#: Methods that take ``--env simphone`` (:class:`RLOptions`): the online loop's, and Hi-Agent's GRPO.
ENV_METHODS = (*RL_METHODS, "grpo")
#: The roles each environment method trains (their specs say, :mod:`agent_runtime.specs`). Online
#: RL plays whole rollouts in the graph that calls the role at every step (``rollout_graph``);
#: GRPO trains Hi-Agent's two levels, named as the ``hi_agent`` graph's roles (``low``,
#: ``high``) or as the Mobile-Agent-v3 roles that hold their places (``worker``, ``manager``).
METHOD_ROLES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(RL_METHODS, tuple(r for r, spec in ROLE_SPECS.items() if spec.rollout_graph)),
    "grpo": tuple(r for r, spec in ROLE_SPECS.items() if spec.grpo_level),
}
#: Roles whose recorded calls train (``sft`` reads them all alike).
TRAINABLE_ROLES = tuple(r for r, spec in ROLE_SPECS.items() if spec.trainable)

#: Where SimPhone-derived screenshots and expert records go inside the output directory.
DATA_DIR = "data"


class DataOptions(BaseModel):
    """Where training data comes from and how it is filtered (every field is a distill option)."""

    runs_dir: Path | None = Field(None, description="run directories to learn from (sft; dpo trace pairs)")
    filters: FilterSettings = Field(default_factory=FilterSettings)
    max_samples: int | None = Field(
        None, ge=1, description="cap on training rows after filtering (per role, seeded, replay included)"
    )
    tasks: str | None = Field(
        None, description="SimPhone task pattern (glob or re:REGEX): dpo pairs, irr/grpo demos, rollouts"
    )
    episodes: int = Field(1, ge=1, description="SimPhone instances per task")
    split: str = Field("train", description="SimPhone split: train, test or all")
    max_candidates: int = Field(6, ge=1, description="DPO: candidate actions levelled per golden state")
    trace_pairs: bool = Field(True, description="DPO: pair trace FAILURE steps with later SUCCESS ones")
    regenerate: RegenerationOptions = Field(
        default_factory=RegenerationOptions,
        description="DPO: the SFT agent's replies at golden states as rejected sides",
    )
    prompt: PromptSettings = Field(default_factory=PromptSettings, description="Worker prompt settings")
    replay_dir: Path | None = Field(
        None, description="sft: runs of earlier data (what the base was trained on) to mix back in"
    )
    replay_ratio: float = Field(
        0.0, ge=0.0, description="sft: replayed rows per new row, per role (drawn from replay_dir)"
    )
    rl: RLOptions | None = Field(None, description="RL (trpo, dgrpo, grpo): environment and iterations")
    overwrite: bool = Field(False, description="replace an existing output")


def _silent_track(description: str, total: int | None) -> Advance:
    def advance(n: int = 1) -> None:
        """Progress goes nowhere: the caller asked for no progress display."""

    return advance


def check_method(method: str) -> None:
    """Raise a usage error naming the available methods when ``method`` is not one of them."""
    if method not in METHODS:
        listing = "; ".join(f"{name}: {what}" for name, what in METHODS.items())
        raise ConfigError(f"unknown training method {method!r}", hint=f"available methods — {listing}")


def role_list(role: str) -> list[str]:
    """``--role`` as a list: SFT may train one adapter on several roles (``manager,worker``)."""
    return [r.strip() for r in role.split(",") if r.strip()]


def check_role(role: str, method: str) -> None:
    """Raise a usage error when ``method`` cannot train ``role`` (:data:`METHOD_ROLES`), with the
    method that can."""
    roles = role_list(role)
    for name in roles or [role]:
        if name not in TRAINABLE_ROLES:
            raise ConfigError(f"unknown role {name!r}", hint=f"use one of: {', '.join(TRAINABLE_ROLES)}")
    if len(roles) > 1 and method != "sft":
        raise ConfigError(
            f"--method {method} trains one role; only sft takes several (--role manager,worker)",
            hint="pass a single --role",
        )
    if method == "grpo" and role not in METHOD_ROLES["grpo"]:
        raise ConfigError(
            f"--method grpo trains the worker or the manager, Hi-Agent's two levels (hi_agent: low and "
            f"high), not the {role}",
            hint="use --role low|high (or worker|manager); the single role learns online with "
            "--method dgrpo|trpo, any role with --method sft from traces"
            if role == "single"
            else "use --role low|high (or worker|manager); other roles learn with --method sft",
        )
    if method in RL_METHODS and role not in METHOD_ROLES[method]:
        raise ConfigError(
            f"--method {method} trains the worker or the manager (mobile_agent_v3 graph) or single "
            f"(single graph), roles its rollouts call at every step, not the {role}",
            hint="train Hi-Agent's levels with --method grpo --role low|high"
            if role in ("high", "low")
            else "use --role worker, manager or single; other roles learn with --method sft",
        )
    if method in ("dpo", "irr") and role != "worker":
        raise ConfigError(
            f"--method {method} trains the worker (its data are actions)", hint="use --role worker"
        )


def check_sources(method: str, data: DataOptions) -> None:
    """Fail before any work when the method has nothing to learn from."""
    if method == "sft" and data.runs_dir is None:
        raise ConfigError("sft learns from traces: pass --runs-dir DIR")
    if method in ENV_METHODS and data.rl is None:
        what = "oracle steps" if method == "grpo" else "rollouts"
        raise ConfigError(f"--method {method} learns from {what}: pass --env simphone [--tasks PATTERN]")
    if method == "dpo" and data.tasks is None and data.runs_dir is None:
        raise ConfigError("DPO needs pairs: pass --tasks PATTERN (SimPhone) and/or --runs-dir DIR (traces)")


def _cap(items: list[T], limit: int | None, seed: int) -> list[T]:
    """At most ``limit`` items, drawn with ``seed``, in their original order."""
    if limit is None or len(items) <= limit:
        return items
    keep = set(random.Random(seed).sample(range(len(items)), limit))
    return [x for i, x in enumerate(items) if i in keep]


def _require_training_stack() -> None:
    import importlib.util

    from agent_runtime.errors import DependencyError

    for package in ("torch", "transformers", "trl", "peft", "datasets"):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, "train", "agent-runtime distill")


def distill(
    method: str,
    config: TrainConfig,
    data: DataOptions,
    *,
    track: Track | None = None,
    echo: Echo | None = None,
    runtime: Any = None,
) -> Manifest:
    """Build the data, train, save the model and ``manifest.json``; return the manifest.

    ``runtime`` (a :class:`~agent_runtime.config.RuntimeConfig`) configures the other roles of
    online RL's rollouts in code, instead of ``--config``'s file (``evolve`` passes its own).
    """
    check_method(method)
    check_role(config.role, method)
    check_sources(method, data)
    _require_training_stack()
    track = track or _silent_track
    echo = echo or (lambda _text: None)
    out = Path(config.output_dir).resolve()
    resuming = data.rl is not None and data.rl.resume
    if (out / MANIFEST).exists() and not data.overwrite and not resuming:
        hint = "pass --overwrite or another --out"
        if data.rl is not None:
            hint = "pass --resume (with more --iterations) to continue, --overwrite, or another --out"
        raise ConfigError(f"{out} already holds a distill output", hint=hint)
    config = config.model_copy(update={"output_dir": out})
    if isinstance(config, GRPOConfig):
        # GRPO trains the level of --role: the manifest records that one, not the field's default.
        config = config.model_copy(update={"level": GRPO_LEVELS[config.role]})
    resolved = resolve_model_ref(config.base)  # fail on a bad --base before any data work
    if config.lora and _text_only(resolved):
        # Record the LoRA targets actually used: the VLM default names modules a text-only LM lacks.
        targets = lora_targets_for(config.lora_target_modules, text_only=True)
        config = config.model_copy(update={"lora_target_modules": targets})
    runner = RUNNERS.get(method)
    if runner is None:
        raise ConfigError(f"training method {method!r} is listed but has no runner in this build")
    if method in RL_METHODS:
        summary, training, extra = _run_rl(method, config, resolved, data, track, echo, runtime=runtime)
    else:
        summary, training, extra = runner(config, resolved, data, track, echo)
    kind: Literal["lora", "full"] = "lora" if config.lora else "full"
    manifest = Manifest(
        kind=kind,
        method=method,
        role=config.role,
        base_model=str(resolved.base),
        init_adapter=str(resolved.adapter) if resolved.adapter else None,
        output=str(out),
        agent_runtime_version=__version__,
        data=summary,
        hyperparameters={
            **config.model_dump(mode="json", exclude={"base", "output_dir", "progress"}),
            "filters": data.filters.model_dump(mode="json"),
            "data": data.model_dump(mode="json", exclude={"filters", "overwrite", "rl"}),
            **({"rl": data.rl.model_dump(mode="json", exclude={"resume"})} if data.rl else {}),
        },
        training=training.model_copy(update={"extra": extra}),
        serve=serve_info(kind, config.role, resolved.base, out, config.lora_r if config.lora else None),
    )
    write_manifest(manifest)
    return manifest


def _text_only(resolved: ResolvedModel) -> bool:
    """Whether the base is a text-only causal LM (its data then carry no screenshots)."""
    from agent_runtime.models.hf import is_text_only

    return is_text_only(resolved.base)


# -- sft ----------------------------------------------------------------------------------------


def _filtered_samples(
    config: TrainConfig, data: DataOptions, echo: Echo, *, runs_dir: Path | None = None
) -> tuple[list[Any], DataSummary]:
    """The filtered, capped samples of ``runs_dir`` (default: ``data.runs_dir``) for the role(s)."""
    from agent_runtime.trainers.data.filters import apply_filters
    from agent_runtime.trainers.data.filters.pipeline import default_pipeline
    from agent_runtime.trainers.data.filters.reweight import success_rates
    from agent_runtime.trainers.data.samples import collect_samples

    runs_dir = runs_dir or data.runs_dir
    assert runs_dir is not None  # check_sources
    roles = role_list(config.role)
    found = collect_samples(runs_dir, roles)
    for run_dir, why in found.skipped.items():
        echo(f"skipped run {run_dir}: {why}")
    if not found.samples:
        raise TrainingError(
            f"no {config.role} calls in {len(found.runs)} run(s) under {runs_dir}",
            hint="run the agent (or agent-runtime eval --policy agent) to record traces first",
        )
    rates = success_rates(found.samples)
    kept: list[Any] = []
    capped: list[Any] = []
    reports = []
    for role in roles:
        # Each role has its own filters; with several roles --max-samples caps each one, so the
        # cheap, repetitive roles (Reflector "A", Notetaker "None") cannot crowd out the rest.
        mine = [s for s in found.samples if s.role == role]
        role_kept, role_reports = apply_filters(mine, default_pipeline(role, data.filters, rates))
        kept += role_kept
        capped += _cap(role_kept, data.max_samples, config.seed)
        reports += role_reports
        if len(roles) > 1:
            echo(f"{role}: {len(mine)} calls, {len(role_kept)} kept")
    for rep in reports:
        echo(rep.line())
    summary = DataSummary(
        source_runs=found.runs,
        skipped_runs=found.skipped,
        samples_before=len(found.samples),
        filters=reports,
        samples_after=len(kept),
        max_samples=data.max_samples,
        train_rows=len(capped),
    )
    return capped, summary


def _run_sft(
    config: TrainConfig, resolved: ResolvedModel, data: DataOptions, track: Track, echo: Echo
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    from agent_runtime.trainers.data.datasets import build_sft_dataset
    from agent_runtime.trainers.sft_trainer import train_sft

    replaying = data.replay_dir is not None and data.replay_ratio > 0
    if replaying and data.max_samples is not None:
        # The cap bounds a role's rows, replayed ones included, so replay does not raise the cost:
        # new rows get 1 / (1 + ratio) of it, earlier ones the rest.
        share = max(1, int(data.max_samples / (1 + data.replay_ratio) + 0.5))
        samples, summary = _filtered_samples(config, data.model_copy(update={"max_samples": share}), echo)
        summary = summary.model_copy(update={"max_samples": data.max_samples})
    else:
        samples, summary = _filtered_samples(config, data, echo)
    if not samples:
        raise TrainingError(
            "every sample was filtered out", hint="see the filter report above; loosen the filters"
        )
    extra: dict[str, Any] = {}
    if replaying:
        samples, extra["replay"] = _with_replay(samples, config, data, echo)
        summary = summary.model_copy(update={"train_rows": len(samples)})
    advance = track("building the dataset", len(samples))
    dataset = build_sft_dataset(samples, on_row=lambda: advance(1), text_only=_text_only(resolved))
    sft = config if isinstance(config, SFTConfig) else SFTConfig(**config.model_dump())
    echo(f"training {config.role} ({'LoRA' if sft.lora else 'full'}) on {len(dataset)} samples")
    training = train_sft(sft, dataset)
    return summary, training, {**extra, **training.extra}


def _with_replay(
    samples: list[Any], config: TrainConfig, data: DataOptions, echo: Echo
) -> tuple[list[Any], dict[str, Any]]:
    """``samples`` plus earlier rows of ``data.replay_dir`` (filtered alike), ``replay_ratio`` per
    new row of each role (:func:`~agent_runtime.trainers.data.datasets.mix_replay`)."""
    from agent_runtime.trainers.data.datasets import mix_replay

    assert data.replay_dir is not None
    new_ids = {s.id for s in samples}
    try:
        pool, _ = _filtered_samples(
            config, data.model_copy(update={"max_samples": None}), lambda _t: None, runs_dir=data.replay_dir
        )
    except TrainingError as exc:  # nothing to replay is not a fault: train on the new rows alone
        echo(f"replay: nothing to replay from {data.replay_dir} ({exc.message})")
        return samples, {"pool": 0, "rows": {}}
    pool = [s for s in pool if s.id not in new_ids]
    mixed, counts = mix_replay(
        samples, pool, ratio=data.replay_ratio, seed=config.seed, role=lambda s: s.role
    )
    echo(f"replay: {sum(counts.values())} earlier rows ({data.replay_ratio:g} per new row) from {len(pool)}")
    return mixed, {"pool": len(pool), "rows": counts, "ratio": data.replay_ratio}


# -- dpo ----------------------------------------------------------------------------------------


def _run_dpo(
    config: TrainConfig, resolved: ResolvedModel, data: DataOptions, track: Track, echo: Echo
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    from collections import Counter

    from agent_runtime.trainers.data.datasets import build_dpo_dataset
    from agent_runtime.trainers.data.preferences import simphone_pairs, trace_pairs
    from agent_runtime.trainers.dpo_trainer import train_dpo

    pairs = []
    summary = DataSummary()
    extra: dict[str, Any] = {}
    if data.runs_dir is not None and data.trace_pairs:
        from agent_runtime.trainers.data.filters.validity import filter_valid
        from agent_runtime.trainers.data.samples import collect_samples

        found = collect_samples(data.runs_dir, ["worker"])
        valid = filter_valid(found.samples)
        from_traces = trace_pairs(valid.samples)
        summary = summary.model_copy(
            update={
                "source_runs": found.runs,
                "skipped_runs": found.skipped,
                "samples_before": len(found.samples),
                "filters": [valid.report],
                "samples_after": len(valid.samples),
            }
        )
        extra["trace_pairs"] = len(from_traces)
        echo(f"trace pairs (FAILURE -> later SUCCESS on the same screen): {len(from_traces)}")
        pairs.extend(from_traces)
    if data.tasks is not None:
        sampler = None
        if data.regenerate.k > 0:
            from agent_runtime.trainers.data.regenerate import PolicySampler

            policy = data.regenerate.model or config.base
            sampler = PolicySampler.from_ref(policy, data.prompt, data.regenerate, config.seed)
            echo(f"regenerating golden states with {policy} ({data.regenerate.k} replies each)")
        advance = track("levelling SimPhone actions", None)
        from_phone, stats = simphone_pairs(
            config.output_dir / DATA_DIR,
            data.prompt,
            tasks=data.tasks,
            split=data.split,
            episodes=data.episodes,
            seed=config.seed,
            max_candidates=data.max_candidates,
            regenerate=sampler,
            on_state=lambda _key: advance(1),
        )
        extra["simphone"] = stats.model_dump()
        echo(f"SimPhone pairs: {stats.pairs} from {stats.states} golden states")
        echo(f"rejected sides from: {stats.rejected_source}; policy replies: {stats.policy_replies}")
        for key, why in stats.skipped.items():
            echo(f"skipped {key}: {why}")
        pairs.extend(from_phone)
    pairs = _cap(pairs, data.max_samples, config.seed)
    if not pairs:
        raise TrainingError("no preference pairs", hint="add --tasks, or runs with corrected failures")
    sources = Counter(p.rejected_source for p in pairs)
    summary = summary.model_copy(
        update={
            "max_samples": data.max_samples,
            "train_rows": len(pairs),
            "extra": {"rejected_source": dict(sorted(sources.items()))},
        }
    )
    advance = track("building the dataset", len(pairs))
    dataset = build_dpo_dataset(pairs, on_row=lambda: advance(1), text_only=_text_only(resolved))
    dpo = config if isinstance(config, DPOConfig) else DPOConfig(**config.model_dump())
    echo(f"training {config.role} with DPO ({'LoRA' if dpo.lora else 'full'}) on {len(dataset)} pairs")
    return summary, train_dpo(dpo, dataset), extra


# -- irr ----------------------------------------------------------------------------------------


def _run_irr(
    config: TrainConfig, resolved: ResolvedModel, data: DataOptions, track: Track, echo: Echo
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.trainers.demos.experts import collect_expert_steps
    from agent_runtime.trainers.irr_trainer import EngineGenerator, RoundStats, run_irr

    irr = config if isinstance(config, IRRConfig) else IRRConfig(**config.model_dump())
    advance = track("playing expert episodes", None)
    experts = collect_expert_steps(
        irr.output_dir / DATA_DIR,
        tasks=data.tasks,
        split=data.split,
        episodes=data.episodes,
        seed=irr.seed,
        on_episode=lambda _key: advance(1),
    )
    for key, why in experts.failed.items():
        echo(f"skipped {key}: {why}")
    steps = _cap(experts.steps, data.max_samples, irr.seed)
    echo(f"expert steps: {len(steps)} from {experts.successful_episodes}/{experts.episodes} episodes")
    engine = TransformersEngine(resolved.base)
    generator = EngineGenerator(
        engine, temperature=irr.temperature, top_p=irr.top_p, max_new_tokens=irr.max_new_tokens, seed=irr.seed
    )
    if resolved.adapter is not None:
        generator.use_adapter(resolved.adapter, "init")
    sampling: dict[str, Advance] = {}

    def on_step() -> None:
        if "advance" not in sampling:
            sampling["advance"] = track(f"sampling {irr.k} replies per expert step", len(steps))
        sampling["advance"](1)

    def on_round(r: RoundStats) -> None:
        sampling.clear()
        echo(
            f"IRR round {r.round}: match rate {r.match_rate:.2f} ({r.matched_steps}/{r.steps} steps)"
            + (f", training on {r.rows} rows" if r.rows else ", saturated")
        )

    result = run_irr(irr, steps, generator, on_step=on_step, on_round=on_round)
    summary = DataSummary(
        samples_before=len(experts.steps),
        samples_after=len(steps),
        max_samples=data.max_samples,
        train_rows=result.rows,
        extra={
            "expert_episodes": experts.episodes,
            "successful_episodes": experts.successful_episodes,
            "failed_episodes": experts.failed,
        },
    )
    trained = [r.training for r in result.rounds if r.training is not None]
    training = TrainingSummary(
        losses=[p for t in trained for p in t.losses],
        steps=sum(t.steps for t in trained),
        runtime_s=round(sum(t.runtime_s for t in trained), 3),
    )
    rounds = result.model_dump(mode="json", exclude={"rounds": {"__all__": {"training"}}})
    return summary, training, {"irr": rounds}


# -- trpo / dgrpo -------------------------------------------------------------------------------


def _run_rl(
    method: str,
    config: TrainConfig,
    resolved: ResolvedModel,
    data: DataOptions,
    track: Track,
    echo: Echo,
    *,
    runtime: Any = None,
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    from agent_runtime.trainers.online.config import OnlineRLConfig
    from agent_runtime.trainers.online.loop import train_online

    assert data.rl is not None  # check_sources
    if not isinstance(config, OnlineRLConfig):
        config = CONFIGS[method](**config.model_dump())
    assert isinstance(config, OnlineRLConfig)
    echo(
        f"online {method.upper()} of the {config.role} (rollouts in the {ROLLOUT_GRAPHS[config.role]} "
        f"graph): {data.rl.iterations} iterations, "
        f"G = {config.num_generations}, {rollout_workers(data.rl, config.num_generations)} rollout "
        "worker(s), policy " + (f"served at {data.rl.server_url}" if data.rl.server_url else "in-process")
    )
    return train_online(method, config, data.rl, runtime=runtime, overwrite=data.overwrite, echo=echo)


# -- grpo ---------------------------------------------------------------------------------------


def _run_grpo(
    config: TrainConfig, resolved: ResolvedModel, data: DataOptions, track: Track, echo: Echo
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    from agent_runtime.trainers.hi_agent.grpo_trainer import train_grpo

    assert data.rl is not None  # check_sources
    grpo = config if isinstance(config, GRPOConfig) else GRPOConfig(**config.model_dump())
    levels = "alternating low/high" if grpo.alternate else GRPO_LEVELS[grpo.role]
    trained = f"the {grpo.role} level" if grpo.role == levels else f"the {grpo.role} ({levels} level)"
    echo(f"single-step GRPO of {trained}: {data.rl.iterations} iterations, G = {grpo.num_generations}")
    return train_grpo(grpo, data.rl, data.prompt, overwrite=data.overwrite, echo=echo)


Runner = Callable[
    [TrainConfig, ResolvedModel, DataOptions, Track, Echo],
    tuple[DataSummary, TrainingSummary, dict[str, Any]],
]
#: How each method in :data:`~agent_runtime.trainers.METHODS` builds its data and trains …
RUNNERS: dict[str, Runner] = {
    "sft": _run_sft,
    "dpo": _run_dpo,
    "irr": _run_irr,
    "trpo": functools.partial(_run_rl, "trpo"),
    "dgrpo": functools.partial(_run_rl, "dgrpo"),
    "grpo": _run_grpo,
}
#: … and the config class its options build.
CONFIGS: dict[str, type[TrainConfig]] = {
    "sft": SFTConfig,
    "dpo": DPOConfig,
    "irr": IRRConfig,
    "trpo": TRPOConfig,
    "dgrpo": DGRPOConfig,
    "grpo": GRPOConfig,
}
