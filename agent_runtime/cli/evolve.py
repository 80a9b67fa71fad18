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
from agent_runtime.cli.options import Flag, Values, cli_parameter, command, parameters
from agent_runtime.cli.signals import EXIT_INTERRUPTED
from agent_runtime.trainers.evolve.options import EvolveOptions

#: ``evolve``'s options: every field of :class:`EvolveOptions`, in this order.
PARAMETERS = [
    *parameters(
        EvolveOptions,
        "out",
        Flag("config", alias="-c"),
        "model",
        "role",
        "base",
        # a plain string: a wrong recipe gets the config's error, which names the recipes
        Flag("recipe", type=str),
        "iterations",
        "tasks",
        "task_list",
        "device",
        "train_episodes",
        "eval_tasks",
        "eval_episodes",
        "final_episodes",
        "heldout_tasks",
        "heldout_episodes",
        "workers",
    ),
    cli_parameter("ray", RayOption, None),  # the help every command that plays episodes shares
    *parameters(
        EvolveOptions,
        "rollout_temperature",
        "critic_model",
        "corrections",
        "hints",
        "hint_samples",
        "hint_fallback",
        "sft_lr",
        "sft_epochs",
        "sft_max_steps",
        "sft_batch_size",
        "sft_micro_batch",
        "sft_warmup",
        "sft_validation",
        "replay_ratio",
        "replay_runs",
        "max_samples",
        "rl",
        "rl_role",
        "rl_iterations",
        "group_size",
        "rl_lr",
        "rl_episodes",
        "promote_alpha",
        "gate_iterations",
        "seed",
        "resume",
        "overwrite",
    ),
    cli_parameter(
        "as_json",
        Annotated[bool, typer.Option("--json", help="Print the final report as one JSON object.")],
        False,
    ),
]


def evolve_options(values: Values) -> EvolveOptions:
    """The options of one ``evolve`` from its parsed command line; invalid ones become a ConfigError."""
    from pydantic import ValidationError

    from agent_runtime.errors import ConfigError

    try:
        return EvolveOptions.model_validate(
            {k: v for k, v in values.items() if k in EvolveOptions.model_fields}
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        message = str(err["msg"]).removeprefix("Value error, ")
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"invalid evolve option {where}: {message}" if where else message) from None


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    @command(PARAMETERS)
    def evolve(values: Values) -> None:
        """Evolve a role model: rollouts -> filters -> hint-guided SFT -> (RL) -> held-out eval -> promote."""
        from agent_runtime.cli.distill import _Progress
        from agent_runtime.config import load_config
        from agent_runtime.demo_model import demo_config
        from agent_runtime.trainers.evolve import Evolution

        opts = evolve_options(values)
        console = Console(stderr=True)
        progress = _Progress(console)
        runtime = load_config(opts.config) if opts.config is not None else demo_config()
        try:
            state = Evolution(opts, runtime, echo=progress.echo, track=progress.track).run()
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the runs in flight are already cancelled
            progress.stop()
            _interrupted(console, opts.out)
        finally:
            progress.stop()
        report = json.loads((opts.out / "report.json").read_text(encoding="utf-8"))
        if values["as_json"]:
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
