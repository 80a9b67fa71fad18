"""``agent-runtime eval``: success rate of a policy on the SimPhone task suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent_runtime.cli import guarded

if TYPE_CHECKING:
    from agent_runtime.evaluation import EpisodeResult, EvalReport, Policy

POLICIES = ("oracle", "agent")


def build_policy(name: str, config: Path | None) -> Policy:
    """The policy ``--policy`` names (the agent policy reads ``--config`` when given)."""
    from agent_runtime.errors import ConfigError
    from agent_runtime.evaluation import AgentPolicy, ExpertPolicy

    if name == "oracle":
        # The expert reads only the UI tree: skip the screenshots, ~5x faster.
        return ExpertPolicy(screenshots=False)
    if name == "agent":
        from agent_runtime import demo_model
        from agent_runtime.config import load_config

        cfg, demo = demo_model.choose(load_config(config))
        if demo:
            Console(stderr=True).print(f"[dim]{demo_model.NOTICE}[/]", highlight=False)
        return AgentPolicy(cfg)
    raise ConfigError(f"unknown policy {name!r}", hint=f"use one of: {', '.join(POLICIES)}")


def summary_json(report: EvalReport) -> dict[str, object]:
    """The ``--json`` object: headline numbers, per-task and per-app stats, failed episodes."""
    data = report.model_dump(mode="json", exclude={"results"})
    data["failures"] = [r.model_dump(mode="json") for r in report.failures()]
    return data


def _pct(rate: float) -> str:
    return f"{100 * rate:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def render(report: EvalReport, console: Console) -> None:
    """Rich tables: headline, per app, per task, then any failed episodes."""
    from agent_runtime.evaluation.report import failure_detail

    head = Table(title=f"{report.suite} · {report.split} · policy {report.policy}")
    for col in ("episodes", "success", "95% CI (Wilson)", "mean steps", "oracle steps", "s/step", "time"):
        head.add_column(col, justify="right")
    head.add_row(
        f"{report.n} ({report.episodes}/task)",
        f"{report.successes}/{report.n} = {_pct(report.success_rate)}",
        _ci(report.ci95),
        f"{report.mean_steps:.1f}",
        _num(report.mean_oracle_steps),
        _num(report.seconds_per_step),
        f"{report.duration_s:.1f}s",
    )
    console.print(head)
    apps = Table(title="per app")
    for col in ("app", "n", "success", "95% CI", "mean steps", "oracle steps", "s/step"):
        apps.add_column(col, justify="left" if col == "app" else "right")
    for app, s in report.per_app.items():
        apps.add_row(
            app,
            str(s.n),
            _pct(s.success_rate),
            _ci(s.ci95),
            f"{s.mean_steps:.1f}",
            _num(s.mean_oracle_steps),
            _num(s.seconds_per_step),
        )
    console.print(apps)
    tasks = Table(title="per task")
    for col in ("task", "app", "cx", "n", "success", "95% CI", "mean steps"):
        tasks.add_column(col, justify="left" if col in ("task", "app") else "right", no_wrap=col == "task")
    for name, t in report.per_task.items():
        tasks.add_row(
            name,
            t.app,
            f"{t.complexity:g}",
            str(t.n),
            _pct(t.success_rate),
            _ci(t.ci95),
            f"{t.mean_steps:.1f}",
        )
    console.print(tasks)
    failed = report.failures()
    if failed:
        fails = Table(title=f"failed episodes ({len(failed)})")
        for col in ("task", "seed", "agent said", "steps", "check"):
            fails.add_column(col, overflow="fold")
        for r in failed:
            detail = escape(failure_detail(r))
            fails.add_row(r.task, str(r.seed), r.status, f"{r.steps}/{r.max_steps}", detail)
        console.print(fails)


def register(app: typer.Typer) -> None:
    @app.command("eval")
    @guarded
    def eval_(
        suite: Annotated[
            str, typer.Option("--suite", help="Task suite to evaluate on (simphone).")
        ] = "simphone",
        split: Annotated[
            str,
            typer.Option("--split", help="Instances to use: train, test or all (split by parameter hash)."),
        ] = "test",
        tasks: Annotated[
            str | None,
            typer.Option("--tasks", help="Template names: globs ('Clock*') or re:REGEX, comma-separated."),
        ] = None,
        episodes: Annotated[
            int, typer.Option("--episodes", min=1, help="Episodes (seeds) per template.")
        ] = 3,
        seed: Annotated[int, typer.Option("--seed", help="First seed to draw instances from.")] = 0,
        policy: Annotated[
            str,
            typer.Option(
                "--policy",
                help="oracle (the tasks' expert) or agent (the runtime, configured as run is: --config, "
                "./agent-runtime.toml, or the offline demo model when nothing is configured).",
            ),
        ] = "oracle",
        workers: Annotated[
            int,
            typer.Option(
                "--workers",
                min=1,
                help="Episodes run in parallel: processes with a share of the cores each for the "
                "oracle and in-process models, threads for model servers.",
            ),
        ] = 1,
        config: Annotated[
            Path | None,
            typer.Option(
                "--config", "-c", help="Runtime config for --policy agent (default: the one run uses)."
            ),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print one JSON object instead of tables.")
        ] = False,
    ) -> None:
        """Evaluate a policy on SimPhone tasks: success rate (Wilson 95% CI), steps, per app and task."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from agent_runtime.evaluation import evaluate, executor_for
        from agent_runtime.evaluation.report import failure_detail

        chosen = build_policy(policy, config)
        executor = executor_for(chosen)
        err = Console(stderr=True)
        with Progress(
            TextColumn("[bold]eval[/] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[ok]} ok"),
            TimeElapsedColumn(),
            console=err,
            disable=as_json,
            transient=True,
        ) as progress:
            bar = progress.add_task(f"{suite}/{split}", total=None, ok=0)
            wins, done, planned = 0, 0, 0
            # Without a live bar (--json, or stderr not a terminal: CI logs, nohup) an hour-long
            # evaluation would be silent until its end: one line per finished episode instead.
            lines = as_json or not err.is_terminal

            def on_plan(n: int) -> None:
                nonlocal planned
                planned = n
                progress.update(bar, total=n)

            def on_result(result: EpisodeResult) -> None:
                nonlocal wins, done
                done += 1
                wins += result.success
                progress.update(bar, advance=1, ok=wins)
                if lines:
                    outcome = "success" if result.success else failure_detail(result)
                    err.print(
                        f"[{done}/{planned}] {result.task}/{result.seed}: {outcome}, {result.steps} steps, "
                        f"{result.duration_s:.0f} s ({wins} ok so far)",
                        highlight=False,
                        markup=False,
                    )

            report = evaluate(
                chosen,
                suite=suite,
                tasks=tasks,
                split=split,
                episodes=episodes,
                seed=seed,
                workers=workers,
                executor=executor,
                on_plan=on_plan,
                on_result=on_result,
            )
        if as_json:
            print(json.dumps(summary_json(report)))
        else:
            render(report, Console())
