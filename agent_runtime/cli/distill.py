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
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape

from agent_runtime.cli import guarded
from agent_runtime.cli.cluster import RayOption
from agent_runtime.cli.cluster import ray_address as configured_cluster

if TYPE_CHECKING:
    from rich.progress import Progress

    from agent_runtime.trainers.base_config import TrainConfig


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


def build_config(method: str, common: dict[str, object], extra: dict[str, object]) -> TrainConfig:
    """The method's config from CLI values; invalid values become a ConfigError."""
    from pydantic import ValidationError

    from agent_runtime.errors import ConfigError
    from agent_runtime.trainers.distill import CONFIGS

    cls = CONFIGS[method]
    fields = {k: v for k, v in {**common, **extra}.items() if v is not None and k in cls.model_fields}
    try:
        return cls(**fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid distill options: {problems}") from None


def _stopped(method: str, out: Path) -> str:
    """What an interrupted ``distill`` leaves in ``out``, and how to go on.

    >>> _stopped("sft", Path("o")).endswith("no manifest.json): run the same command again to start over")
    True
    >>> "with --resume" in _stopped("dgrpo", Path("o"))
    True
    """
    from agent_runtime.trainers.distill import ENV_METHODS

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
    from agent_runtime.config import load_config
    from agent_runtime.errors import ConfigError

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


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def distill(
        role: Annotated[
            str,
            typer.Option(
                "--role",
                help="Role to train: manager, worker, reflector, notetaker (mobile_agent_v3), high, low "
                "(hi_agent), single (sft: several, manager,worker; grpo: low|high; trpo/dgrpo: worker, "
                "manager or single).",
            ),
        ],
        method: Annotated[
            str, typer.Option("--method", help="sft, dpo, irr, trpo, dgrpo or grpo (see the command help).")
        ],
        base: Annotated[
            str,
            typer.Option(
                "--base",
                help="Base model directory, transformers:DIR?adapter=A, or an earlier distill output.",
            ),
        ],
        out: Annotated[Path, typer.Option("--out", help="Output directory (adapter/model + manifest.json).")],
        runs_dir: Annotated[
            Path | None,
            typer.Option("--runs-dir", help="Run directories to learn from (sft; dpo trace pairs)."),
        ] = None,
        lora: Annotated[
            bool, typer.Option("--lora/--full", help="Train a LoRA adapter or the full model.")
        ] = True,
        epochs: Annotated[float | None, typer.Option("--epochs", help="Passes over the data.")] = None,
        max_steps: Annotated[
            int | None, typer.Option("--max-steps", help="Optimizer steps (overrides --epochs).")
        ] = None,
        lr: Annotated[
            float | None, typer.Option("--lr", help="Peak learning rate (default per method).")
        ] = None,
        warmup: Annotated[
            float | None, typer.Option("--warmup", min=0.0, max=0.99, help="Share of steps spent warming up.")
        ] = None,
        save_dtype: Annotated[
            str,
            typer.Option("--save-dtype", help="Saved weights' dtype: float32 or bfloat16 (half the size)."),
        ] = "float32",
        save_steps: Annotated[
            int | None,
            typer.Option(
                "--save-steps",
                min=1,
                help="Also keep a checkpoint every N steps (OUT/checkpoints/step-N) to pick the best.",
            ),
        ] = None,
        batch_size: Annotated[int | None, typer.Option("--batch-size", help="Per-device batch size.")] = None,
        grad_accum: Annotated[
            int | None, typer.Option("--grad-accum", help="Batches per optimizer step.")
        ] = None,
        lora_r: Annotated[int | None, typer.Option("--lora-r", help="LoRA rank (alpha = 2 x rank).")] = None,
        seed: Annotated[int, typer.Option("--seed", help="Seed for sampling, shuffling and filters.")] = 0,
        max_samples: Annotated[
            int | None, typer.Option("--max-samples", min=1, help="Cap on training rows after filtering.")
        ] = None,
        critic_threshold: Annotated[
            float,
            typer.Option(
                "--critic-threshold",
                min=0.0,
                max=1.0,
                help="Minimum step-critic score (GOOD 1, NEUTRAL 0.5, HARMFUL 0).",
            ),
        ] = 0.5,
        missing_critic: Annotated[
            str, typer.Option("--missing-critic", help="Steps without a critic label: keep or drop.")
        ] = "keep",
        success_only: Annotated[
            bool, typer.Option("--success-only/--any-outcome", help="Keep only samples from successful runs.")
        ] = True,
        skip_filter: Annotated[
            list[str] | None,
            typer.Option(
                "--skip-filter",
                help="Skip a filter (repeatable): validity outcome consistency reflector dedup reweight.",
            ),
        ] = None,
        tasks: Annotated[
            str | None,
            typer.Option(
                "--tasks",
                help="SimPhone task pattern (glob or re:REGEX): dpo pairs, irr/grpo demos, rollouts.",
            ),
        ] = None,
        episodes: Annotated[int, typer.Option("--episodes", min=1, help="SimPhone instances per task.")] = 1,
        split: Annotated[str, typer.Option("--split", help="SimPhone split: train, test or all.")] = "train",
        beta: Annotated[
            float | None, typer.Option("--beta", help="DPO beta; trpo/dgrpo: KL weight to the reference.")
        ] = None,
        max_candidates: Annotated[
            int,
            typer.Option("--max-candidates", min=1, help="DPO: candidate actions levelled per golden state."),
        ] = 6,
        trace_pairs: Annotated[
            bool,
            typer.Option(
                "--trace-pairs/--no-trace-pairs",
                help="DPO: pair trace FAILURE steps with later SUCCESS ones.",
            ),
        ] = True,
        regenerations: Annotated[
            int | None,
            typer.Option(
                "--regenerations",
                min=0,
                max=16,
                help="DPO: replies the SFT agent samples per golden state; those worse than golden are "
                "rejected sides (default 2; 0: only the page's action space).",
            ),
        ] = None,
        regeneration_model: Annotated[
            str | None,
            typer.Option(
                "--regeneration-model",
                help="DPO: the SFT agent that regenerates: model dir, distill output or "
                "http(s)://HOST/v1[#name] (default: the base).",
            ),
        ] = None,
        k: Annotated[int | None, typer.Option("--k", help="IRR: replies sampled per expert step.")] = None,
        rounds: Annotated[int | None, typer.Option("--rounds", help="IRR: rounds at most.")] = None,
        min_improvement: Annotated[
            float | None,
            typer.Option("--min-improvement", help="IRR: match-rate gain below which rounds stop."),
        ] = None,
        temperature: Annotated[
            float | None,
            typer.Option(
                "--temperature", help="IRR, dpo regenerations, trpo, dgrpo, grpo: sampling temperature."
            ),
        ] = None,
        max_new_tokens: Annotated[
            int | None,
            typer.Option(
                "--max-new-tokens", help="IRR, dpo regenerations, trpo, dgrpo, grpo: longest sampled reply."
            ),
        ] = None,
        coords: Annotated[
            str,
            typer.Option(
                "--coords", help="Worker prompts built from SimPhone: the model's coordinate space."
            ),
        ] = "pixels_resized",
        min_pixels: Annotated[int | None, typer.Option("--min-pixels", help="Image budget minimum.")] = None,
        max_pixels: Annotated[int | None, typer.Option("--max-pixels", help="Image budget maximum.")] = None,
        env: Annotated[
            str | None, typer.Option("--env", help="trpo/dgrpo/grpo: environment (simphone).")
        ] = None,
        group_size: Annotated[
            int | None,
            typer.Option(
                "--group-size", min=1, help="trpo/dgrpo: rollouts per task; grpo: completions per prompt (G)."
            ),
        ] = None,
        iterations: Annotated[
            int, typer.Option("--iterations", min=1, help="trpo/dgrpo/grpo: iterations in total.")
        ] = 10,
        tasks_per_iteration: Annotated[
            int | None,
            typer.Option("--tasks-per-iteration", min=1, help="trpo/dgrpo: task instances per iteration."),
        ] = None,
        rollout_workers: Annotated[
            int | None,
            typer.Option(
                "--rollout-workers",
                min=1,
                help="trpo/dgrpo: rollouts played at once (K; default: G in-process, where they decode "
                "in one batch, 1 with --server-url).",
            ),
        ] = None,
        micro_batch_size: Annotated[
            int | None,
            typer.Option(
                "--micro-batch-size",
                min=1,
                help="trpo/dgrpo: policy steps per forward/backward pass of an update (peak memory, "
                "not the maths; default 4).",
            ),
        ] = None,
        max_turns: Annotated[
            int | None,
            typer.Option(
                "--max-turns",
                min=1,
                help="trpo/dgrpo: policy steps per rollout at most (trpo 15, dgrpo 50); a rollout also stops "
                "at the task's own budget and the --config's [graph] max_steps, whichever is least.",
            ),
        ] = None,
        server_url: Annotated[
            str | None,
            typer.Option(
                "--server-url",
                help="trpo/dgrpo: OpenAI-compatible /v1 server with runtime LoRA loading that serves "
                "the policy (vLLM --enable-lora, agent-runtime serve); default: in-process.",
            ),
        ] = None,
        served_name: Annotated[
            str, typer.Option("--served-name", help="trpo/dgrpo: adapter name on the server (NAME-vNNNN).")
        ] = "policy",
        ray: RayOption = None,
        ray_address: Annotated[
            str | None,
            typer.Option("--ray-address", hidden=True, help="Deprecated: use --ray (same values)."),
        ] = None,
        config: Annotated[
            Path | None,
            typer.Option("--config", help="trpo/dgrpo: runtime config (TOML) for the other roles' models."),
        ] = None,
        spa: Annotated[
            bool | None, typer.Option("--spa/--no-spa", help="dgrpo: shortest-path reward adjustment.")
        ] = None,
        dapr: Annotated[
            bool | None, typer.Option("--dapr/--no-dapr", help="dgrpo: positive replay buffer.")
        ] = None,
        fcf: Annotated[
            bool | None, typer.Option("--fcf/--no-fcf", help="dgrpo: failure curriculum filtering.")
        ] = None,
        alternate: Annotated[
            bool,
            typer.Option(
                "--alternate",
                help="grpo, --role manager (or high): alternate worker then manager updates (eq. 5).",
            ),
        ] = False,
        low_level: Annotated[
            str | None,
            typer.Option(
                "--low-level",
                help="grpo: the low-level (action) model the manager's subgoals are executed by: "
                "model dir, distill output or http(s)://HOST/v1[#name] (default: the base).",
            ),
        ] = None,
        judge_model: Annotated[
            str | None,
            typer.Option(
                "--judge-model",
                help="grpo: the frozen subgoal judge: model dir, distill output or http(s)://HOST/v1[#name] "
                "(default: the base).",
            ),
        ] = None,
        coord_epsilon: Annotated[
            float | None,
            typer.Option(
                "--coord-epsilon", help="grpo: largest normalised distance of a matching point (0.002)."
            ),
        ] = None,
        subgoal_filter: Annotated[
            str | None,
            typer.Option(
                "--subgoal-filter",
                help="grpo --alternate: which manager subgoals the worker also trains on: env (those "
                "the worker already executes as the oracle action, default) or none (all well-formed: the "
                "paper).",
            ),
        ] = None,
        resume: Annotated[
            bool,
            typer.Option("--resume", help="trpo/dgrpo/grpo: continue after the last finished iteration."),
        ] = False,
        overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output.")] = False,
    ) -> None:
        """Train ROLE with METHOD: sft (traces), dpo (SimPhone levels + trace corrections), irr (SimPhone),
        trpo / dgrpo (online RL on SimPhone rollouts), grpo (Hi-Agent single-step GRPO on SimPhone oracle
        steps); the last three write one manifest per iteration and resume."""
        from pydantic import ValidationError

        from agent_runtime.errors import ConfigError
        from agent_runtime.trainers.data.filters.pipeline import FILTER_NAMES, FilterSettings
        from agent_runtime.trainers.data.regenerate import RegenerationOptions
        from agent_runtime.trainers.data.worker_prompts import PromptSettings
        from agent_runtime.trainers.distill import ENV_METHODS, DataOptions, check_method, check_role
        from agent_runtime.trainers.distill import distill as run_distill
        from agent_runtime.trainers.online.loop import RL_METHODS, RLOptions

        check_method(method)
        check_role(role, method)
        supervised_only = {
            "--epochs": epochs,
            "--max-steps": max_steps,
            "--warmup": warmup,
            "--save-steps": save_steps,
            "--batch-size": batch_size,
            "--grad-accum": grad_accum,
        }
        unused = [flag for flag, value in supervised_only.items() if value is not None]
        if method in RL_METHODS and unused:
            verb = "has" if len(unused) == 1 else "have"
            raise ConfigError(
                f"{', '.join(unused)} {verb} no effect with --method {method}",
                hint="online RL makes one update per iteration over all its rollouts: --iterations sets "
                "how many, --group-size the rollouts per task, --micro-batch-size an update's memory",
            )
        unknown = sorted(set(skip_filter or []) - set(FILTER_NAMES))
        if unknown:
            raise ConfigError(
                f"unknown filter(s) {', '.join(unknown)}", hint=f"filters: {', '.join(FILTER_NAMES)}"
            )
        if missing_critic not in ("keep", "drop"):
            raise ConfigError(f"--missing-critic must be keep or drop, got {missing_critic!r}")
        try:
            prompt = PromptSettings(
                **{
                    k_: v
                    for k_, v in {
                        "coords": coords,
                        "min_pixels": min_pixels,
                        "max_pixels": max_pixels,
                    }.items()
                    if v is not None
                }
            )
            mc: Literal["keep", "drop"] = "keep" if missing_critic == "keep" else "drop"
            rl = None
            if method in ENV_METHODS and env is not None:
                if env != "simphone":
                    raise ConfigError(f"unknown --env {env!r}", hint="online RL runs on: simphone")
                rl = RLOptions(
                    tasks=tasks,
                    split=split,
                    episodes=episodes,
                    iterations=iterations,
                    tasks_per_iteration=tasks_per_iteration,
                    rollout_workers=rollout_workers,
                    server_url=server_url,
                    served_name=served_name,
                    # [cluster] sends only trpo/dgrpo to Ray: grpo trains in-process (TRL)
                    ray_address=rollout_cluster(ray, ray_address, config if method in RL_METHODS else None),
                    runtime_config=config,
                    resume=resume,
                )
            data = DataOptions(
                runs_dir=runs_dir,
                filters=FilterSettings(
                    critic_threshold=critic_threshold,
                    missing_critic=mc,
                    require_success=success_only,
                    skip=list(skip_filter or []),
                    seed=seed,
                ),
                max_samples=max_samples,
                tasks=tasks,
                episodes=episodes,
                split=split,
                max_candidates=max_candidates,
                trace_pairs=trace_pairs,
                regenerate=RegenerationOptions(
                    **{
                        k_: v
                        for k_, v in {
                            "k": regenerations,
                            "model": regeneration_model,
                            "temperature": temperature,
                            "max_tokens": max_new_tokens,
                        }.items()
                        if v is not None and method == "dpo"
                    }
                ),
                prompt=prompt,
                rl=rl,
                overwrite=overwrite,
            )
        except ValidationError as exc:
            raise ConfigError(f"invalid distill options: {exc.errors()[0]['msg']}") from None
        common: dict[str, object] = {
            "base": base,
            "output_dir": out,
            "role": role,
            "lora": lora,
            "epochs": epochs,
            "max_steps": max_steps,
            "learning_rate": lr,
            "warmup_ratio": warmup,
            "save_steps": save_steps,
            "save_dtype": save_dtype,
            "batch_size": batch_size,
            "gradient_accumulation_steps": grad_accum,
            "lora_r": lora_r,
            "lora_alpha": 2 * lora_r if lora_r else None,
            "seed": seed,
        }
        extra: dict[str, object] = {
            "beta": beta,
            "k": k,
            "max_rounds": rounds,
            "min_improvement": min_improvement,
            "temperature": temperature,
            "max_new_tokens": max_new_tokens,
            "prompt": prompt,
            "num_generations": group_size,
            "max_turns": max_turns,
            "micro_batch_size": micro_batch_size,
            "spa": spa,
            "dapr": dapr,
            "fcf": fcf,
            "alternate": alternate,
            "low_level": low_level,
            "judge_model": judge_model,
            "coord_epsilon": coord_epsilon,
            "subgoal_filter": subgoal_filter,
        }
        train_config = build_config(method, common, extra)
        console = Console(stderr=True)
        progress = _Progress(console)
        try:
            manifest = run_distill(method, train_config, data, track=progress.track, echo=progress.echo)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (agent_runtime.cli.signals): say what is left
            progress.stop()
            console.print(f"\n[yellow]interrupted[/]: {escape(_stopped(method, out))}", highlight=False)
            raise typer.Exit(130) from None
        finally:
            progress.stop()
        final = manifest.training.losses[-1].loss if manifest.training.losses else float("nan")
        console.print(
            f"[green]done[/]: {manifest.kind} {manifest.method} {manifest.role} -> {manifest.output} "
            f"({manifest.training.steps} steps, last loss {final:.4f})",
            highlight=False,
        )
        console.print(f"manifest: {Path(manifest.output) / 'manifest.json'}", highlight=False)
        console.print(f"serve with vLLM: {manifest.serve.vllm}", highlight=False)
        console.print(f'or in-process: model = "{manifest.serve.model}"', highlight=False)
