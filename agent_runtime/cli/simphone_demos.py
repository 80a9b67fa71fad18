"""``agent-runtime simphone demos``: expert demonstrations for every role, as runtime traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_runtime.cli import guarded
from agent_runtime.errors import ConfigError


def register(app: typer.Typer) -> None:
    from agent_runtime.cli.simphone import simphone_app

    @simphone_app.command("demos")
    @guarded
    def demos(
        out: Annotated[Path, typer.Option("--out", help="Runs directory to write one run per episode into.")],
        split: Annotated[
            str, typer.Option("--split", help="Task instances from train (default), test or all.")
        ] = "train",
        tasks: Annotated[
            str | None, typer.Option("--tasks", help="Template names: globs ('Clock*') or re:REGEX.")
        ] = None,
        include_heldout: Annotated[
            bool,
            typer.Option(
                "--include-heldout",
                help="Also demonstrate the template-held-out templates (left out by default, so a "
                "model trained on these demos has templates it never saw).",
            ),
        ] = False,
        episodes: Annotated[int, typer.Option("--episodes", help="Instances per template.")] = 1,
        seed: Annotated[int, typer.Option("--seed", help="First seed scanned for instances.")] = 0,
        observation: Annotated[
            str,
            typer.Option(
                "--observation",
                help="What the trained roles are shown: ui_tree (index actions), screenshot or both.",
            ),
        ] = "ui_tree",
        prompts: Annotated[
            str,
            typer.Option(
                "--prompts",
                help="Prompt set the trained model will run with: full, or compact (small text-only models).",
            ),
        ] = "full",
        perturb: Annotated[
            float,
            typer.Option(
                "--perturb",
                help="Chance (0-1) of a wrong action at a step, for Reflector B/C examples and recovery.",
            ),
        ] = 0.0,
        roles: Annotated[
            str,
            typer.Option("--roles", help="Roles whose calls are training targets, comma-separated."),
        ] = "manager,worker,reflector,notetaker",
        update_share: Annotated[
            float,
            typer.Option(
                "--update-share",
                min=0.0,
                max=1.0,
                help="Share of Manager plan updates that are training targets (first plans always are).",
            ),
        ] = 1.0,
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    ) -> None:
        """Let SimPhone's expert play tasks through the agent graph, answering every role ideally.

        The runs are ordinary runs of the runtime: train on them with
        ``agent-runtime distill --method sft --role worker --runs-dir OUT``.
        """
        from agent_runtime.config import OBSERVATION_MODES
        from agent_runtime.trainers.demos.traces import DemoOptions, demo_summary, write_demos

        if observation not in OBSERVATION_MODES:
            raise ConfigError(
                f"unknown observation mode {observation!r}",
                hint=f"use one of: {', '.join(OBSERVATION_MODES)}",
            )
        if prompts not in ("full", "compact"):
            raise ConfigError(f"unknown prompt set {prompts!r}", hint="use full or compact")
        if not 0.0 <= perturb <= 1.0:
            raise ConfigError(f"--perturb {perturb} is out of range", hint="give a probability from 0 to 1")
        if episodes < 1:
            raise ConfigError(f"--episodes must be at least 1, got {episodes}")
        from agent_runtime.trainers.demos.traces import ROLES

        chosen = tuple(r.strip() for r in roles.split(",") if r.strip())
        unknown = [r for r in chosen if r not in ROLES]
        if unknown or not chosen:
            raise ConfigError(
                f"unknown role(s) in --roles: {roles!r}", hint=f"use some of: {', '.join(ROLES)}"
            )
        options = DemoOptions(
            split=split,
            tasks=tasks,
            exclude_heldout=not include_heldout,
            episodes=episodes,
            seed=seed,
            observation=observation,
            prompts=prompts,
            perturb=perturb,
            roles=chosen,
            update_share=update_share,
        )
        report = write_demos(options, out)
        if as_json:
            print(demo_summary(report))
            return
        print(
            f"wrote {len(report.runs)} run(s), {report.steps} steps ({report.perturbed} wrong actions) "
            f"to {out} in {report.seconds:.1f}s; calls: "
            + ", ".join(f"{role} {n}" for role, n in sorted(report.calls.items()))
        )
        for key, why in report.skipped.items():
            print(f"  skipped {key}: {why}")
