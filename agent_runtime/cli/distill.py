"""``agent-runtime distill``: train one role from traces or SimPhone demonstrations.

Methods: ``sft`` (filtered role calls from ``--runs-dir``, the roles of any graph), ``dpo``
(preference pairs from ``--tasks`` on SimPhone and/or corrections in ``--runs-dir``), ``irr``
(reasoning bootstrapped for SimPhone expert demonstrations of ``--tasks``), ``trpo``/``dgrpo``
(online RL: rollouts of the agent on SimPhone ``--tasks``, ``--iterations`` of update + policy
refresh, ``--resume``; the Worker or Manager in the ``mobile_agent_v3`` graph, ``single`` in the
``single`` graph), ``grpo`` (Hi-Agent's single-step GRPO on the oracle's steps of ``--tasks``,
TRL, ``--resume``; ``--role low|high``, or ``worker|manager``).
The output directory gets the adapter (or model) and ``manifest.json``, which also says how to
serve the result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from agent_runtime.cli import guarded
from agent_runtime.cli.cluster import RayOption
from agent_runtime.cli.cluster import ray_address as configured_cluster
from agent_runtime.cli.options import REQUIRED, Flag, Values, cli_parameter, command, parameters
from agent_runtime.config import load_config
from agent_runtime.errors import ConfigError
from agent_runtime.trainers.base_config import TrainConfig
from agent_runtime.trainers.data.filters.pipeline import FILTER_NAMES, FilterSettings
from agent_runtime.trainers.data.regenerate import RegenerationOptions
from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.distill import CONFIGS, ENV_METHODS, DataOptions, check_method, check_role
from agent_runtime.trainers.distill import distill as run_distill
from agent_runtime.trainers.dpo_config import DPOConfig
from agent_runtime.trainers.hi_agent.grpo_config import GRPOConfig
from agent_runtime.trainers.irr_config import IRRConfig
from agent_runtime.trainers.online.config import OnlineRLConfig
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.loop import RL_METHODS, RLOptions

if TYPE_CHECKING:
    from rich.progress import Progress

    from agent_runtime.trainers.artifacts import Manifest


class _Progress:
    """Rich progress bars, one phase at a time; a printed message ends the current phase.

    Ending the live display before anything else prints keeps it from fighting with the
    trainer's own progress bar.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.current: Progress | None = None

    def stop(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None

    def track(self, description: str, total: int | None) -> Callable[[int], None]:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.stop()
        columns = [
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        ]
        self.current = Progress(*columns, console=self.console)
        self.current.start()
        task = self.current.add_task(description, total=total)
        progress = self.current

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        return advance

    def echo(self, text: str) -> None:
        self.stop()
        self.console.print(text, highlight=False)


def _stopped(method: str, out: Path) -> str:
    """What an interrupted ``distill`` leaves in ``out``, and how to go on.

    >>> _stopped("sft", Path("o")).endswith("no manifest.json): run the same command again to start over")
    True
    >>> "with --resume" in _stopped("dgrpo", Path("o"))
    True
    """
    if method in ENV_METHODS:
        return (
            f"distill {method} stopped; the iterations it finished are kept in {out}: "
            "run the same command with --resume to continue after the last one"
        )
    return (
        f"distill {method} stopped before it finished; {out} holds no finished model (no manifest.json): "
        "run the same command again to start over"
    )


def rollout_cluster(ray: str | None, deprecated: str | None, config: Path | None) -> str | None:
    """Where online RL's rollouts run: ``--ray``, else the deprecated ``--ray-address`` (said so
    on stderr), else ``[cluster] ray_address`` of ``--config``, else this machine."""
    if deprecated is not None:
        if ray is not None and ray != deprecated:
            raise ConfigError(
                f"--ray {ray} and --ray-address {deprecated} disagree",
                hint="--ray-address is deprecated: pass only --ray",
            )
        Console(stderr=True).print(
            "warning: --ray-address is deprecated and will be removed: use --ray (same values)",
            markup=False,
            highlight=False,
        )
        ray = ray or deprecated
    return configured_cluster(ray, load_config(config) if config is not None and ray is None else None)


#: ``distill``'s options in ``--help``'s order, each made from the config field it sets. The
#: method's config takes the fields it has; an option whose default is None is left out when not
#: given, so the method's own default holds (DPO's learning rate is not GRPO's). An option that
#: feeds fields of several configs (``--temperature``: IRR, DPO's regenerations, online RL) has
#: help that names them all.
PARAMETERS = [
    *parameters(TrainConfig, Flag("role", default=REQUIRED)),
    cli_parameter(
        "method",
        Annotated[
            str, typer.Option("--method", help="sft, dpo, irr, trpo, dgrpo or grpo (see the command help).")
        ],
    ),
    *parameters(TrainConfig, "base", Flag("output_dir", name="--out")),
    *parameters(DataOptions, "runs_dir"),
    *parameters(
        TrainConfig,
        Flag("lora", off="--full"),
        Flag("epochs", default=None),
        Flag("max_steps", default=None),
        Flag("learning_rate", name="--lr", default=None),
        Flag("warmup_ratio", name="--warmup", default=None),
        "save_dtype",
        "save_steps",
        Flag("batch_size", default=None),
        Flag("gradient_accumulation_steps", name="--grad-accum", default=None),
        Flag("lora_r", default=None),
        Flag("seed", help="Seed for sampling, shuffling and filters."),
    ),
    *parameters(DataOptions, "max_samples"),
    *parameters(
        FilterSettings,
        Flag("critic_threshold", help="Minimum step-critic score (GOOD 1, NEUTRAL 0.5, HARMFUL 0)."),
        Flag("missing_critic", help="Steps without a critic label: keep or drop."),
        Flag(
            "require_success",
            name="--success-only",
            off="--any-outcome",
            help="Keep only samples from successful runs.",
        ),
        Flag(
            "skip",
            param="skip_filter",
            default=None,
            help="Skip a filter (repeatable): validity outcome consistency reflector dedup reweight.",
        ),
    ),
    *parameters(DataOptions, "tasks", "episodes", "split"),
    *parameters(
        DPOConfig, Flag("beta", default=None, help="DPO beta; trpo/dgrpo: KL weight to the reference.")
    ),
    *parameters(DataOptions, "max_candidates", "trace_pairs"),
    *parameters(
        RegenerationOptions,
        Flag("k", param="regenerations", scope="DPO"),
        Flag("model", param="regeneration_model", scope="DPO"),
    ),
    *parameters(
        IRRConfig,
        Flag("k", scope="IRR", default=None),
        Flag("max_rounds", name="--rounds", scope="IRR", default=None),
        Flag("min_improvement", scope="IRR", default=None),
    ),
    *parameters(
        OnlineRLConfig,
        Flag(
            "temperature",
            default=None,
            help="IRR, dpo regenerations, trpo, dgrpo, grpo: sampling temperature.",
        ),
        Flag(
            "max_new_tokens",
            default=None,
            help="IRR, dpo regenerations, trpo, dgrpo, grpo: longest sampled reply.",
        ),
    ),
    *parameters(
        PromptSettings,
        Flag("coords", type=str, help="Worker prompts built from SimPhone: the model's coordinate space."),
        Flag("min_pixels", default=None, help="Image budget minimum."),
        Flag("max_pixels", default=None, help="Image budget maximum."),
    ),
    # a plain string, None when not given: without --env the method says what it learns from
    *parameters(
        RLOptions, Flag("env", type=str, default=None, help="trpo/dgrpo/grpo: environment (simphone).")
    ),
    *parameters(
        OnlineRLConfig,
        Flag(
            "num_generations",
            name="--group-size",
            default=None,
            help="trpo/dgrpo: rollouts per task; grpo: completions per prompt (G).",
        ),
    ),
    *parameters(
        RLOptions,
        Flag("iterations", help="trpo/dgrpo/grpo: iterations in total."),
        Flag("tasks_per_iteration", help="trpo/dgrpo: task instances per iteration."),
        Flag(
            "rollout_workers",
            help="trpo/dgrpo: rollouts played at once (K; default: G in-process, where they decode "
            "in one batch, 1 with --server-url).",
        ),
    ),
    *parameters(
        OnlineRLConfig,
        Flag("micro_batch_size", scope="trpo/dgrpo", default=None),
        Flag("max_turns", scope="trpo/dgrpo", default=None),
    ),
    *parameters(
        RLOptions,
        Flag(
            "server_url",
            help="trpo/dgrpo: OpenAI-compatible /v1 server with runtime LoRA loading that serves "
            "the policy (vLLM --enable-lora, agent-runtime serve); default: in-process.",
        ),
        Flag("served_name", help="trpo/dgrpo: adapter name on the server (NAME-vNNNN)."),
    ),
    cli_parameter("ray", RayOption, None),
    cli_parameter(
        "ray_address",
        Annotated[
            str | None,
            typer.Option("--ray-address", hidden=True, help="Deprecated: use --ray (same values)."),
        ],
        None,
    ),
    *parameters(
        RLOptions,
        Flag(
            "runtime_config",
            name="--config",
            help="trpo/dgrpo: runtime config (TOML) for the other roles' models.",
        ),
    ),
    *parameters(
        DGRPOConfig,
        Flag("spa", scope="dgrpo", default=None),
        Flag("dapr", scope="dgrpo", default=None),
        Flag("fcf", scope="dgrpo", default=None),
    ),
    *parameters(
        GRPOConfig,
        Flag("alternate", scope="grpo, --role manager (or high)"),
        Flag("low_level", scope="grpo"),
        Flag("judge_model", scope="grpo"),
        Flag("coord_epsilon", scope="grpo", default=None),
        Flag("subgoal_filter", scope="grpo --alternate", default=None),
    ),
    *parameters(
        RLOptions, Flag("resume", help="trpo/dgrpo/grpo: continue after the last finished iteration.")
    ),
    *parameters(DataOptions, "overwrite"),
]

#: Options of supervised training only: online RL makes one update per iteration over its rollouts.
_SUPERVISED_ONLY = {
    "epochs": "--epochs",
    "max_steps": "--max-steps",
    "warmup_ratio": "--warmup",
    "save_steps": "--save-steps",
    "batch_size": "--batch-size",
    "gradient_accumulation_steps": "--grad-accum",
}


def _check_options(method: str, values: Values) -> None:
    """Refuse a method or role that do not go together, options the method has no use for, and
    filters that do not exist."""
    check_method(method)
    check_role(values["role"], method)
    unused = [flag for field, flag in _SUPERVISED_ONLY.items() if values[field] is not None]
    if method in RL_METHODS and unused:
        verb = "has" if len(unused) == 1 else "have"
        raise ConfigError(
            f"{', '.join(unused)} {verb} no effect with --method {method}",
            hint="online RL makes one update per iteration over all its rollouts: --iterations sets "
            "how many, --group-size the rollouts per task, --micro-batch-size an update's memory",
        )
    unknown = sorted(set(values["skip_filter"] or []) - set(FILTER_NAMES))
    if unknown:
        raise ConfigError(
            f"unknown filter(s) {', '.join(unknown)}", hint=f"filters: {', '.join(FILTER_NAMES)}"
        )


def _given(values: Values, fields: dict[str, str]) -> dict[str, Any]:
    """``{field: values[key]}`` for each ``key: field`` whose value was given (not None)."""
    return {field: values[key] for key, field in fields.items() if values[key] is not None}


def _rl_options(method: str, values: Values) -> RLOptions | None:
    """Where an environment method's rollouts or oracle steps come from (None: not asked for)."""
    env = values["env"]
    if method not in ENV_METHODS or env is None:
        return None
    if env != "simphone":
        raise ConfigError(f"unknown --env {env!r}", hint="online RL runs on: simphone")
    config = values["runtime_config"]
    return RLOptions(
        tasks=values["tasks"],
        split=values["split"],
        episodes=values["episodes"],
        iterations=values["iterations"],
        tasks_per_iteration=values["tasks_per_iteration"],
        rollout_workers=values["rollout_workers"],
        server_url=values["server_url"],
        served_name=values["served_name"],
        # [cluster] sends only trpo/dgrpo to Ray: grpo trains in-process (TRL)
        ray_address=rollout_cluster(
            values["ray"], values["ray_address"], config if method in RL_METHODS else None
        ),
        runtime_config=config,
        resume=values["resume"],
    )


def _data_options(method: str, values: Values, prompt: PromptSettings) -> DataOptions:
    """The data half of the trainer's arguments; ``--temperature`` and ``--max-new-tokens`` also
    set DPO's regenerations, the only method that regenerates."""
    regenerate = {
        "regenerations": "k",
        "regeneration_model": "model",
        "temperature": "temperature",
        "max_new_tokens": "max_tokens",
    }
    return DataOptions(
        runs_dir=values["runs_dir"],
        filters=FilterSettings(
            critic_threshold=values["critic_threshold"],
            missing_critic=values["missing_critic"],
            require_success=values["require_success"],
            skip=list(values["skip_filter"] or []),
            seed=values["seed"],
        ),
        max_samples=values["max_samples"],
        tasks=values["tasks"],
        episodes=values["episodes"],
        split=values["split"],
        max_candidates=values["max_candidates"],
        trace_pairs=values["trace_pairs"],
        regenerate=RegenerationOptions(**(_given(values, regenerate) if method == "dpo" else {})),
        prompt=prompt,
        rl=_rl_options(method, values),
        overwrite=values["overwrite"],
    )


def distill_arguments(method: str, values: Values) -> tuple[TrainConfig, DataOptions]:
    """What ``distill`` hands the trainer (:func:`agent_runtime.trainers.distill.distill`) for its
    parsed options: the method's config and the data options. Invalid values become a ConfigError."""
    _check_options(method, values)
    try:
        prompt = PromptSettings(
            **_given(values, {"coords": "coords", "min_pixels": "min_pixels", "max_pixels": "max_pixels"})
        )
        data = _data_options(method, values, prompt)
    except ValidationError as exc:
        raise ConfigError(f"invalid distill options: {exc.errors()[0]['msg']}") from None
    cls = CONFIGS[method]
    fields = {
        k: v for k, v in {**values, "prompt": prompt}.items() if v is not None and k in cls.model_fields
    }
    try:
        return cls(**fields), data
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid distill options: {problems}") from None


def _train(method: str, config: TrainConfig, data: DataOptions, console: Console) -> Manifest:
    """Run the trainer with progress bars; on Ctrl-C say what is left in the output and exit 130."""
    progress = _Progress(console)
    try:
        return run_distill(method, config, data, track=progress.track, echo=progress.echo)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (agent_runtime.cli.signals): say what is left
        progress.stop()
        console.print(
            f"\n[yellow]interrupted[/]: {escape(_stopped(method, config.output_dir))}", highlight=False
        )
        raise typer.Exit(130) from None
    finally:
        progress.stop()


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    @command(PARAMETERS)
    def distill(values: Values) -> None:
        """Train ROLE with METHOD: sft (traces), dpo (SimPhone levels + trace corrections), irr (SimPhone),
        trpo / dgrpo (online RL on SimPhone rollouts), grpo (Hi-Agent single-step GRPO on SimPhone oracle
        steps); the last three write one manifest per iteration and resume."""
        method = values["method"]
        config, data = distill_arguments(method, values)
        console = Console(stderr=True)
        manifest = _train(method, config, data, console)
        final = manifest.training.losses[-1].loss if manifest.training.losses else float("nan")
        console.print(
            f"[green]done[/]: {manifest.kind} {manifest.method} {manifest.role} -> {manifest.output} "
            f"({manifest.training.steps} steps, last loss {final:.4f})",
            highlight=False,
        )
        console.print(f"manifest: {Path(manifest.output) / 'manifest.json'}", highlight=False)
        console.print(f"serve with vLLM: {manifest.serve.vllm}", highlight=False)
        console.print(f'or in-process: model = "{manifest.serve.model}"', highlight=False)
