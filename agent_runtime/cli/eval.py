"""``agent-runtime eval``: success rate of a policy on the SimPhone task suite."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent_runtime.cli import guarded
from agent_runtime.cli.cluster import RayOption
from agent_runtime.cli.cluster import ray_address as shared_ray_address

if TYPE_CHECKING:
    from agent_runtime.evaluation import EpisodeResult, EvalReport, GraphComparison, Policy
    from agent_runtime.evaluation.report import Stats

POLICIES = ("oracle", "agent")


def graph_kinds(values: Sequence[str] | None) -> list[str]:
    """The graph kinds ``--graph`` names, in the order given (repeated, or comma-separated)."""
    from agent_runtime.config import GRAPH_KINDS
    from agent_runtime.errors import ConfigError

    kinds = [k.strip() for v in values or () for k in v.split(",") if k.strip()]
    for kind in kinds:
        if kind not in GRAPH_KINDS:
            raise ConfigError(f"unknown graph kind {kind!r}", hint=f"use one of: {', '.join(GRAPH_KINDS)}")
    if len(set(kinds)) < len(kinds):
        raise ConfigError(f"--graph names a kind twice: {', '.join(kinds)}", hint="name each kind once")
    return kinds


def build_policy(
    name: str, config: Path | None, graph: str | None = None, *, announce: bool = True, yes: bool = False
) -> Policy:
    """The policy ``--policy`` names (the agent policy reads ``--config`` when given).

    ``graph`` overrides the agent's ``[graph] kind`` before the demo-model fallback is decided,
    which keeps it, so the demo model plays the kind asked for. ``announce`` says so on stderr
    when the demo model plays (once is enough when several kinds are built). ``yes`` approves
    every action that would wait for a person (``[safety] unattended = "approve"``).
    """
    from agent_runtime.errors import ConfigError
    from agent_runtime.evaluation import AgentPolicy, ExpertPolicy

    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}", hint=f"use one of: {', '.join(POLICIES)}")
    if graph is not None and name != "agent":
        raise ConfigError(
            f"--graph applies only to --policy agent, not --policy {name}",
            hint=f"add --policy agent to evaluate the runtime with graph {graph}, or drop --graph",
        )
    if name == "oracle":
        # The expert reads only the UI tree: skip the screenshots, ~5x faster.
        return ExpertPolicy(screenshots=False)
    from agent_runtime import demo_model
    from agent_runtime.config import load_config

    overrides = {"graph.kind": graph, "safety.unattended": "approve" if yes else None}
    cfg, demo = demo_model.choose(load_config(config, **overrides))
    if demo and announce:
        Console(stderr=True).print(f"[dim]{demo_model.NOTICE}[/]", highlight=False)
    return AgentPolicy(cfg)


def summary_json(report: EvalReport) -> dict[str, object]:
    """The ``--json`` object: headline numbers, per-task and per-app stats, failed episodes."""
    data = report.model_dump(mode="json", exclude={"results"})
    data["failures"] = [r.model_dump(mode="json") for r in report.failures()]
    return data


def comparison_json(comparison: GraphComparison) -> dict[str, object]:
    """The ``--json`` object of several kinds: ``graphs`` (each kind's :func:`summary_json` with
    its ``kind`` and ``critical_calls_per_step``) and ``comparisons`` against the baseline."""
    graphs = [
        {"kind": g.kind, **summary_json(g.report), "critical_calls_per_step": g.critical_calls_per_step}
        for g in comparison.graphs
    ]
    comparisons = [
        {"kind": c.kind, "baseline": c.baseline, **c.paired.model_dump(mode="json"), "p_holm": c.p_holm}
        for c in comparison.comparisons
    ]
    return {"baseline": comparison.baseline, "graphs": graphs, "comparisons": comparisons}


def _pct(rate: float) -> str:
    return f"{100 * rate:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _rate(stats: Stats | None) -> str:
    return f"{stats.successes}/{stats.n} = {_pct(stats.success_rate)} {_ci(stats.ci95)}" if stats else "-"


def render(report: EvalReport, console: Console, graph: str | None = None) -> None:
    """Rich tables: headline, per app, per task, then any failed episodes."""
    from agent_runtime.evaluation.report import failure_detail

    played = f" · graph {graph}" if graph else ""
    head = Table(title=f"{report.suite} · {report.split} · policy {report.policy}{played}")
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
    console.print(
        f"side effects (app data changed outside the task's footprint): {report.side_effect_episodes}"
        f"/{report.n} = {_pct(report.side_effect_rate)}",
        highlight=False,
    )
    if report.holdout is not None:
        console.print(
            f"instance-held-out (trained templates): {_rate(report.holdout.instance_heldout)} · "
            f"template-held-out (never trained on): {_rate(report.holdout.template_heldout)}",
            highlight=False,
        )
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
    if report.costs is not None:
        from agent_runtime.costs import costs_table

        console.print(costs_table(report.costs, f"cost and latency per role over {report.n} episodes"))
    failed = report.failures()
    if failed:
        fails = Table(title=f"failed episodes ({len(failed)})")
        for col in ("task", "seed", "agent said", "steps", "check"):
            fails.add_column(col, overflow="fold")
        for r in failed:
            detail = escape(failure_detail(r))
            fails.add_row(r.task, str(r.seed), r.status, f"{r.steps}/{r.max_steps}", detail)
        console.print(fails)


def render_comparison(comparison: GraphComparison, console: Console) -> None:
    """Rich tables: each kind's headline, the paired tests against the first kind, success per
    task and kind, then any failed episodes."""
    from agent_runtime.evaluation.report import failure_detail

    first = comparison.graphs[0].report
    head = Table(title=f"{first.suite} · {first.split} · graphs on the same {first.n} instances")
    for col in ("graph", "success", "95% CI (Wilson)", "mean steps", "calls/step", "s/step", "time"):
        head.add_column(col, justify="left" if col == "graph" else "right")
    for g in comparison.graphs:
        report = g.report
        head.add_row(
            g.kind,
            f"{report.successes}/{report.n} = {_pct(report.success_rate)}",
            _ci(report.ci95),
            f"{report.mean_steps:.1f}",
            _num(g.critical_calls_per_step),
            _num(report.seconds_per_step),
            f"{report.duration_s:.1f}s",
        )
    console.print(head)
    paired = Table(title=f"paired against {comparison.baseline} (exact McNemar, Holm over the graphs)")
    for col in ("graph", "pairs", "gains", "losses", "p two-sided", "p Holm", "p better"):
        paired.add_column(col, justify="left" if col == "graph" else "right")
    for c in comparison.comparisons:
        t = c.paired
        p_values = (t.p_two_sided, c.p_holm, t.p_greater)
        paired.add_row(c.kind, str(t.pairs), str(t.gains), str(t.losses), *(f"{p:.3g}" for p in p_values))
    console.print(paired)
    tasks = Table(title="success per task")
    tasks.add_column("task", no_wrap=True)
    tasks.add_column("app")
    for g in comparison.graphs:
        tasks.add_column(g.kind, justify="right")
    for name, by_kind in comparison.per_task.items():
        stats = list(by_kind.values())
        tasks.add_row(name, stats[0].app, *(f"{s.successes}/{s.n}" for s in stats))
    console.print(tasks)
    failed = [(g.kind, r) for g in comparison.graphs for r in g.report.failures()]
    if failed:
        fails = Table(title=f"failed episodes ({len(failed)})")
        for col in ("graph", "task", "seed", "agent said", "steps", "check"):
            fails.add_column(col, overflow="fold")
        for kind, r in failed:
            detail = escape(failure_detail(r))
            fails.add_row(kind, r.task, str(r.seed), r.status, f"{r.steps}/{r.max_steps}", detail)
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
        graph: Annotated[
            list[str] | None,
            typer.Option(
                "--graph",
                "-g",
                help="Agent graph(s) for --policy agent: mobile_agent_v3, hi_agent, single or auto. "
                "Several (repeated or comma-separated) play the same instances and are compared "
                "with the first: success, calls per step, paired McNemar tests.",
            ),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print one JSON object instead of tables.")
        ] = False,
        holdout: Annotated[
            bool,
            typer.Option(
                "--holdout",
                help="Also report success on the template-held-out templates (never in default demos "
                "or evolve) beside the other templates' (instance-held-out); JSON key 'holdout'.",
            ),
        ] = False,
        yes: Annotated[
            bool,
            typer.Option(
                "--yes",
                "-y",
                help="Approve the agent's off-task actions too (no one is asked in an eval; by default "
                "the action guard approves on-task sensitive actions and denies off-task ones).",
            ),
        ] = False,
        ray: RayOption = None,
    ) -> None:
        """Evaluate a policy on SimPhone tasks: success rate (Wilson 95% CI), steps, per app and task.

        With several --graph kinds, every kind plays the same instances and is compared with the
        first one (paired exact McNemar tests).
        """
        from agent_runtime.evaluation import compare_graphs

        kinds = graph_kinds(graph)
        options = {"suite": suite, "tasks": tasks, "split": split, "episodes": episodes, "seed": seed}
        if len(kinds) < 2:
            chosen = build_policy(policy, config, kinds[0] if kinds else None, yes=yes)
            options["ray"] = ray_address(ray, chosen)
            report = run_with_progress(chosen, options, workers=workers, as_json=as_json)
            if holdout:
                from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT

                report = report.with_holdout(TEMPLATE_HELDOUT)
            if as_json:
                data = summary_json(report)
                print(json.dumps({**data, "graph": kinds[0]} if kinds else data))
            else:
                render(report, Console(), kinds[0] if kinds else None)
            return
        policies = {
            kind: build_policy(policy, config, kind, announce=i == 0, yes=yes) for i, kind in enumerate(kinds)
        }
        options["ray"] = ray_address(ray, next(iter(policies.values())))
        reports = {
            kind: run_with_progress(chosen, options, workers=workers, as_json=as_json, kind=kind)
            for kind, chosen in policies.items()
        }
        comparison = compare_graphs(reports)
        if as_json:
            print(json.dumps(comparison_json(comparison)))
        else:
            render_comparison(comparison, Console())


def ray_address(flag: str | None, policy: Policy) -> str | None:
    """Where ``--ray`` says episodes run, else the agent config's ``[cluster] ray_address``."""
    from agent_runtime.evaluation import AgentPolicy

    return shared_ray_address(flag, policy.config if isinstance(policy, AgentPolicy) else None)


def run_with_progress(
    policy: Policy, options: dict[str, Any], *, workers: int, as_json: bool, kind: str | None = None
) -> EvalReport:
    """:func:`~agent_runtime.evaluation.evaluate` with a live bar on stderr — or, without one
    (``--json``, or stderr not a terminal: CI logs, nohup), one line per finished episode, so an
    hour-long evaluation is not silent until its end. ``kind`` labels the bar and the lines when
    several graph kinds are evaluated one after another."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from agent_runtime.evaluation import evaluate, executor_for
    from agent_runtime.evaluation.report import failure_detail

    err = Console(stderr=True)
    label = f" · {kind}" if kind else ""
    prefix = f"{kind} " if kind else ""
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
        bar = progress.add_task(f"{options['suite']}/{options['split']}{label}", total=None, ok=0)
        wins, done, planned = 0, 0, 0
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
                where = f"[{prefix}{done}/{planned}] {result.task}/{result.seed}"
                err.print(
                    f"{where}: {outcome}, {result.steps} steps, {result.duration_s:.0f} s ({wins} ok so far)",
                    highlight=False,
                    markup=False,
                )

        report = evaluate(
            policy,
            **options,
            workers=workers,
            executor=executor_for(policy),
            on_plan=on_plan,
            on_result=on_result,
        )
    dirs = [r.run_dir for r in report.results if r.run_dir]
    if not dirs:
        return report
    from agent_runtime.costs import costs_of

    return report.model_copy(update={"costs": costs_of(dirs)})
