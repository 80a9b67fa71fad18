"""``agent-runtime evolve``: the self-evolving loop, one resumable command.

Each iteration plays the current role model on SimPhone train instances, filters what it did
(task checker, optional step/trajectory critics), adds hint-guided demonstrations of what it
failed, fine-tunes from the current adapter, optionally runs online RL, and evaluates the result
on selection instances; the result replaces the current model only if the gate's
template-clustered test, corrected for the iterations, says it is better. The start and the
model kept are scored once on final instances and on template-held-out templates. See
:mod:`agent_runtime.trainers.evolve.pipeline` for the output layout.

Ctrl-C and SIGTERM stop it within a second (:mod:`agent_runtime.cli.signals`): the episodes in
flight end ``interrupted``, every finished stage is kept, and the same command with ``--resume``
continues from the first stage that did not finish.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from agent_runtime.cli import guarded
from agent_runtime.cli.cluster import RayOption
from agent_runtime.cli.signals import EXIT_INTERRUPTED


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def evolve(
        out: Annotated[Path, typer.Option("--out", help="Output directory (iterations, reports, best/).")],
        config: Annotated[
            Path | None,
            typer.Option("--config", "-c", help="Runtime config (TOML); default: the offline demo model's."),
        ] = None,
        model: Annotated[
            str | None,
            typer.Option("--model", help="The models.NAME entry to evolve (default: the --role's model)."),
        ] = None,
        role: Annotated[
            str, typer.Option("--role", help="Roles trained by SFT, comma-separated; they share --model.")
        ] = "manager,worker",
        base: Annotated[
            str | None, typer.Option("--base", help="Start from this model ref instead of the config's.")
        ] = None,
        recipe: Annotated[
            str,
            typer.Option("--recipe", help="self-evolve (Mobile-Agent-v3) or mobilerl (SFT -> IRR -> DGRPO)."),
        ] = "self-evolve",
        iterations: Annotated[int, typer.Option("--iterations", min=1, help="Iterations in total.")] = 1,
        tasks: Annotated[
            str | None, typer.Option("--tasks", help="SimPhone templates to train on: globs or re:REGEX.")
        ] = None,
        task_list: Annotated[
            Path | None,
            typer.Option(
                "--task-list", help="JSONL tasks for any device (goal, split, hints); needs --critic-model."
            ),
        ] = None,
        device: Annotated[
            str | None, typer.Option("--device", help="Device spec for --task-list (default: the config's).")
        ] = None,
        train_episodes: Annotated[
            int, typer.Option("--train-episodes", min=1, help="Train instances per template per iteration.")
        ] = 4,
        eval_tasks: Annotated[
            str | None,
            typer.Option(
                "--eval-tasks", help="Templates the gate and the final test score (default: --tasks)."
            ),
        ] = None,
        eval_episodes: Annotated[
            int, typer.Option("--eval-episodes", min=1, help="Selection instances per template (the gate's).")
        ] = 5,
        final_episodes: Annotated[
            int | None,
            typer.Option(
                "--final-episodes", min=1, help="Final-test instances per template (default: eval's)."
            ),
        ] = None,
        heldout_tasks: Annotated[
            str | None,
            typer.Option(
                "--heldout-tasks", help="Template-held-out templates the final test scores (default: all 13)."
            ),
        ] = None,
        heldout_episodes: Annotated[
            int,
            typer.Option(
                "--heldout-episodes", min=0, help="Final-test instances per held-out template (0: none)."
            ),
        ] = 1,
        workers: Annotated[int, typer.Option("--workers", min=1, help="Episodes played at once.")] = 3,
        ray: RayOption = None,
        rollout_temperature: Annotated[
            float | None, typer.Option("--rollout-temperature", help="Sampling temperature of the rollouts.")
        ] = None,
        critic_model: Annotated[
            str | None,
            typer.Option("--critic-model", help="The models.NAME entry of the step and trajectory critics."),
        ] = None,
        corrections: Annotated[
            bool,
            typer.Option(
                "--corrections/--no-corrections",
                help="SimPhone: the oracle labels the states failed rollouts visited (DAgger), not hints.",
            ),
        ] = True,
        hints: Annotated[
            bool, typer.Option("--hints/--no-hints", help="Hint-guided rejection sampling on failed tasks.")
        ] = True,
        hint_samples: Annotated[
            int, typer.Option("--hint-samples", min=1, help="Replies per hinted call.")
        ] = 2,
        hint_fallback: Annotated[
            str, typer.Option("--hint-fallback", help="oracle (keep the demonstration) or drop.")
        ] = "oracle",
        sft_lr: Annotated[float, typer.Option("--sft-lr", help="SFT learning rate.")] = 2e-5,
        sft_epochs: Annotated[float, typer.Option("--sft-epochs", help="SFT passes over the data.")] = 1.0,
        sft_max_steps: Annotated[
            int, typer.Option("--sft-max-steps", help="SFT optimizer steps (-1: use --sft-epochs).")
        ] = -1,
        sft_batch_size: Annotated[int, typer.Option("--sft-batch-size", min=1, help="SFT batch size.")] = 8,
        sft_warmup: Annotated[
            float,
            typer.Option("--sft-warmup", min=0.0, max=0.99, help="Share of SFT steps spent warming up."),
        ] = 0.1,
        sft_validation: Annotated[
            float,
            typer.Option(
                "--sft-validation",
                min=0.0,
                max=0.99,
                help="Share of SFT rows held aside to keep the best checkpoint, the start's included.",
            ),
        ] = 0.1,
        replay_ratio: Annotated[
            float,
            typer.Option("--replay-ratio", min=0.0, help="Earlier rows replayed per new SFT row, per role."),
        ] = 1.0,
        replay_runs: Annotated[
            Path | None,
            typer.Option(
                "--replay-runs",
                help="Runs the start was trained on (default: its manifest's, else oracle demos).",
            ),
        ] = None,
        max_samples: Annotated[
            int | None, typer.Option("--max-samples", min=1, help="Cap on SFT rows per role.")
        ] = None,
        rl: Annotated[str, typer.Option("--rl", help="Online RL after SFT: none, dgrpo or trpo.")] = "none",
        rl_role: Annotated[str, typer.Option("--rl-role", help="The role online RL trains.")] = "worker",
        rl_iterations: Annotated[
            int, typer.Option("--rl-iterations", min=1, help="Online RL iterations per evolve iteration.")
        ] = 1,
        group_size: Annotated[int, typer.Option("--group-size", min=2, help="Online RL group size G.")] = 4,
        rl_lr: Annotated[float, typer.Option("--rl-lr", help="Online RL learning rate.")] = 1e-5,
        rl_episodes: Annotated[
            int, typer.Option("--rl-episodes", min=1, help="Train instances per template in online RL.")
        ] = 1,
        promote_alpha: Annotated[
            float,
            typer.Option(
                "--promote-alpha",
                help="The run's false-promotion level, split over its --iterations (clustered test).",
            ),
        ] = 0.05,
        gate_iterations: Annotated[
            int | None,
            typer.Option(
                "--gate-iterations",
                min=1,
                help="Iterations --promote-alpha is split over, fixed at the run's start (default: "
                "--iterations); count those a later --resume will add.",
            ),
        ] = None,
        seed: Annotated[
            int, typer.Option("--seed", min=0, help="Seeds instances, sampling and training.")
        ] = 0,
        resume: Annotated[
            bool, typer.Option("--resume", help="Continue after the last finished stage.")
        ] = False,
        overwrite: Annotated[
            bool, typer.Option("--overwrite", help="Replace an earlier run in --out.")
        ] = False,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print the final report as one JSON object.")
        ] = False,
    ) -> None:
        """Evolve a role model: rollouts -> filters -> hint-guided SFT -> (RL) -> held-out eval -> promote."""
        from pydantic import ValidationError

        from agent_runtime.cli.distill import _Progress
        from agent_runtime.config import load_config
        from agent_runtime.demo_model import demo_config
        from agent_runtime.errors import ConfigError
        from agent_runtime.trainers.evolve import Evolution, EvolveOptions

        try:
            opts = EvolveOptions.model_validate(
                {
                    "out": out,
                    "config": config,
                    "model": model,
                    "role": role,
                    "base": base,
                    "recipe": recipe,
                    "iterations": iterations,
                    "tasks": tasks,
                    "task_list": task_list,
                    "device": device,
                    "train_episodes": train_episodes,
                    "eval_tasks": eval_tasks,
                    "eval_episodes": eval_episodes,
                    "final_episodes": final_episodes,
                    "heldout_tasks": heldout_tasks,
                    "heldout_episodes": heldout_episodes,
                    "workers": workers,
                    "ray": ray,
                    "rollout_temperature": rollout_temperature,
                    "critic_model": critic_model,
                    "corrections": corrections,
                    "hints": hints,
                    "hint_samples": hint_samples,
                    "hint_fallback": hint_fallback,
                    "sft_lr": sft_lr,
                    "sft_epochs": sft_epochs,
                    "sft_max_steps": sft_max_steps,
                    "sft_batch_size": sft_batch_size,
                    "sft_warmup": sft_warmup,
                    "sft_validation": sft_validation,
                    "replay_ratio": replay_ratio,
                    "replay_runs": replay_runs,
                    "max_samples": max_samples,
                    "rl": rl,
                    "rl_role": rl_role,
                    "rl_iterations": rl_iterations,
                    "group_size": group_size,
                    "rl_lr": rl_lr,
                    "rl_episodes": rl_episodes,
                    "promote_alpha": promote_alpha,
                    "gate_iterations": gate_iterations,
                    "seed": seed,
                    "resume": resume,
                    "overwrite": overwrite,
                }
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            message = str(err["msg"]).removeprefix("Value error, ")
            where = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"invalid evolve option {where}: {message}" if where else message) from None
        console = Console(stderr=True)
        progress = _Progress(console)
        runtime = load_config(config) if config is not None else demo_config()
        try:
            state = Evolution(opts, runtime, echo=progress.echo, track=progress.track).run()
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the runs in flight are already cancelled
            progress.stop()
            _interrupted(console, opts.out)
        finally:
            progress.stop()
        report = json.loads((opts.out / "report.json").read_text(encoding="utf-8"))
        if as_json:
            typer.echo(json.dumps(report))
            return
        best = state.best
        assert best is not None
        console.print(
            f"best model: {best.ref} (iteration {best.iteration}); report: {opts.out / 'report.json'}",
            highlight=False,
        )


def _interrupted(console: Console, out: Path) -> NoReturn:
    """Say what was kept and the command that continues it (this one, with ``--resume``); exit 130."""
    if not (out / "evolve.json").exists():
        console.print("[yellow]Interrupted[/] before the evolve run started; nothing was saved.")
        raise typer.Exit(EXIT_INTERRUPTED)
    again = [a for a in sys.argv[1:] if a not in ("--resume", "--overwrite")]
    console.print(
        f"[yellow]Interrupted.[/] {escape(str(out))} keeps every finished stage; continue with: "
        f"{escape(shlex.join(['agent-runtime', *again, '--resume']))}",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_INTERRUPTED)
