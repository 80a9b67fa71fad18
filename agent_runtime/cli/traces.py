"""``agent-runtime traces list|show|export|view``: read run directories back.

``export`` writes one role's calls across runs as JSONL — the per-role datasets trainers start
from. Image refs in exported messages gain an absolute ``path`` so the file is usable outside
the run directories.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent_runtime.cli import guarded
from agent_runtime.specs import DEFAULT_GRAPH

if TYPE_CHECKING:
    from agent_runtime.traces import CallRecord, InterventionRecord, LoadedRun, RunRecord

RunsDirOpt = Annotated[
    Path | None,
    typer.Option("--runs-dir", help="Directory holding run directories (default: runs.dir in the config)."),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Config file (for the default runs dir).")
]


def _runs_dir(runs_dir: Path | None, config: Path | None) -> Path:
    """``--runs-dir``, else the configuration's. The ``AGENT_RUNTIME_*`` variables are checked
    either way, exactly as ``run`` checks them: a misspelt one is refused, not ignored."""
    import os

    from agent_runtime.config import check_environment, load_config

    if runs_dir is not None:
        check_environment(os.environ)
        return runs_dir.expanduser()
    return load_config(config).runs.dir.expanduser()


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def export_record(call: CallRecord, run: LoadedRun) -> dict[str, Any]:
    """One exported line: the call record, its run's outcome, and resolvable image paths."""
    from agent_runtime.traces import verification_of

    data = call.model_dump(mode="json")
    for message in data["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image_ref":
                    part["path"] = str((run.dir / part["ref"]).resolve())
    data["run_status"] = run.run.status
    data["run_success"] = run.run.success  # the agent's claim
    check = verification_of(run.run)
    data["run_verified"] = check.verified if check is not None else None  # null: not checked
    data["task"] = run.run.task
    return data


def outcome_cell(run: RunRecord) -> str:
    """The "outcome" column: the word ``run`` gave the run (``--json``'s ``outcome``), colored
    by its tone; a run still in progress or stopped resumably is not a failure.

    >>> from agent_runtime.traces import RunRecord
    >>> outcome_cell(RunRecord(run_id="r", task="t", status="completed", success=True))
    '[yellow]unverified[/]'
    >>> outcome_cell(RunRecord(run_id="r", task="t", status="waiting"))
    '[cyan]waiting[/]'
    """
    from agent_runtime.checks import TONE_COLOR, recorded_outcome, tone

    kind = recorded_outcome(run)
    return f"[{TONE_COLOR[tone(kind)]}]{kind}[/]"


def intervention_line(record: InterventionRecord) -> str:
    """One request of a person, as plain text: step, kind, decision, who decided, what was asked
    (the question, or the action's target and why it needed a decision) and the reply.

    >>> from agent_runtime.traces import InterventionRecord
    >>> intervention_line(InterventionRecord(step=2, kind="confirm", request_id="r/1",
    ...     target="tap 'Delete all'", reasons=["deletes data"], decision="reject",
    ...     text="not these", asked_at=0, answered_at=1))
    "step 2 · confirm · reject by person · tap 'Delete all' (deletes data) → not these"
    """
    parts = [f"step {record.step}", record.kind, f"{record.decision} by {record.by}"]
    if record.kind == "ask":
        subject = _short(record.question, 80)
    elif record.kind == "confirm":
        what = record.target or str((record.action or {}).get("action", "an action"))
        why = f" ({_short('; '.join(record.reasons), 80)})" if record.reasons else ""
        subject = _short(what, 60) + why
    else:
        subject = " → ".join(ref for ref in (record.before_screen, record.after_screen) if ref)
    if subject:
        parts.append(subject)
    line = " · ".join(parts)
    return f"{line} → {_short(record.text, 80)}" if record.text else line


def _parse_errors(run: LoadedRun) -> dict[str, int]:
    errors: dict[str, int] = {}
    for call in run.calls:
        if call.parse_error:
            errors[call.role] = errors.get(call.role, 0) + 1
    return errors


def register(app: typer.Typer) -> None:
    traces = typer.Typer(help="List, inspect and export run traces.", no_args_is_help=True)
    app.add_typer(traces, name="traces")

    @traces.command("list")
    @guarded
    def list_(
        runs_dir: RunsDirOpt = None,
        config: ConfigOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per run.")] = False,
    ) -> None:
        """Runs under the runs directory, oldest first."""
        _list_runs(_runs_dir(runs_dir, config), as_json)

    @traces.command("show")
    @guarded
    def show(
        run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
        runs_dir: RunsDirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """A run's summary: outcome, models, timings, tokens, per-role cost and latency, every step,
        and what a person was asked and decided."""
        from agent_runtime.traces import find_run, load_run

        _show_run(load_run(find_run(_runs_dir(runs_dir, config), run_id)))

    @traces.command("export")
    @guarded
    def export(
        role: Annotated[str, typer.Option("--role", help="manager | worker | reflector | notetaker | rag.")],
        out: Annotated[Path, typer.Option("--out", help="The JSONL file to write.")],
        runs_dir: RunsDirOpt = None,
        config: ConfigOpt = None,
        valid_only: Annotated[
            bool, typer.Option("--valid-only", help="Skip calls whose reply did not parse.")
        ] = False,
    ) -> None:
        """Every call of one role across runs as JSONL (messages, completion, parsed output, run outcome)."""
        from agent_runtime.config import ROLES
        from agent_runtime.errors import ConfigError
        from agent_runtime.traces import iter_runs, load_run

        if role not in ROLES:
            raise ConfigError(f"unknown role {role!r}", hint=f"use one of: {', '.join(ROLES)}")
        root = _runs_dir(runs_dir, config)
        out.parent.mkdir(parents=True, exist_ok=True)
        n = runs = 0
        with out.open("w", encoding="utf-8") as fh:
            for run_dir in iter_runs(root):
                run = load_run(run_dir)
                runs += 1
                for call in run.calls_for(role):
                    if valid_only and not call.valid:
                        continue
                    fh.write(json.dumps(export_record(call, run), ensure_ascii=False) + "\n")
                    n += 1
        Console(stderr=True).print(f"wrote {n} {role} calls from {runs} runs to {out}", highlight=False)

    _register_view(traces)


def _list_runs(root: Path, as_json: bool) -> None:
    """``traces list``: the runs under ``root`` as a table, or one JSON object per run."""
    from agent_runtime.checks import TONE_COLOR, recorded_outcome, tone
    from agent_runtime.errors import TraceError
    from agent_runtime.traces import iter_runs, read_run_record, verification_of

    table = Table(title=f"runs in {root}")
    table.add_column("run id", no_wrap=True)
    for col in ("status", "outcome", "steps", "tokens", "created", "task"):
        # never cut a status or outcome word down ("interr…") on 80 columns
        width = {"status": len("interrupted"), "outcome": len("not_achieved")}.get(col)
        table.add_column(col, overflow="fold" if col == "task" else "ellipsis", min_width=width)
    records: list[tuple[float, Path, RunRecord | None, str]] = []
    for run_dir in iter_runs(root):
        try:
            record = read_run_record(run_dir / "run.json")
            records.append((record.created_at, run_dir, record, ""))
        except TraceError as exc:
            records.append((0.0, run_dir, None, exc.message))
    # Ids sort by second only; created_at orders runs started within the same second.
    for _, run_dir, run, problem in sorted(records, key=lambda r: (r[0], r[1].name)):
        if run is None:
            if not as_json:
                table.add_row(run_dir.name, "[red]unreadable[/]", "", "", "", "", escape(problem[:60]))
            continue
        if as_json:
            v = verification_of(run)
            print(
                json.dumps(
                    {
                        "run_id": run.run_id,
                        "status": run.status,
                        "success": run.success,
                        "verified": v.verified if v else None,
                        "outcome": recorded_outcome(run),
                        "verification": v.model_dump() if v else None,
                        "steps": run.steps,
                        "task": run.task,
                        "created_at": run.created_at,
                        "run_dir": str(run_dir),
                    },
                    ensure_ascii=False,
                )
            )
            continue
        status = f"[{TONE_COLOR[tone(recorded_outcome(run))]}]{run.status}[/]" + (
            "" if run.status != "completed" or run.success else " (no)"
        )
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created_at))
        table.add_row(
            run.run_id,
            status,
            outcome_cell(run),
            str(run.steps),
            str(run.tokens.total_tokens),
            created,
            escape(_short(run.task, 60)),
        )
    if not as_json:
        Console().print(table if records else f"no runs in {root}")


def _show_run(run: LoadedRun) -> None:
    """``traces show``: the run's header lines, then its roles, costs, steps and interventions."""
    from agent_runtime.costs import costs_table, run_costs

    console = Console()
    _show_header(console, run)
    console.print(_roles_table(run))
    costs = run_costs(run)
    if costs.roles:
        console.print(costs_table(costs))
    console.print(_steps_table(run))
    if run.interventions:
        console.print("[bold]interventions[/]")
        for record in run.interventions:
            console.print(f"  {escape(intervention_line(record))}", highlight=False, soft_wrap=True)
    for problem in run.problems:
        console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)


def _show_header(console: Console, run: LoadedRun) -> None:
    """Task, outcome, answer, check, error, device, graph and timings: one line each."""
    from agent_runtime.checks import TONE_COLOR, recorded_outcome, recorded_summary, tone

    r = run.run
    color = TONE_COLOR[tone(recorded_outcome(r))]
    console.print(f"[bold]{r.run_id}[/] · [{color}]{r.status}[/] · {r.steps} steps", highlight=False)
    console.print(f"task:    {escape(r.task)}", highlight=False)
    word, sep, rest = recorded_summary(r).partition(" after ")  # run's last line, colored alike
    console.print(f"outcome: [bold {color}]{escape(word)}[/]{sep}{escape(rest)}", highlight=False)
    if r.answer is not None:
        console.print(f"answer:  {escape(r.answer)}", highlight=False)
    console.print(f"check:   {_check_line(r)}", highlight=False)
    if r.error:
        console.print(f"[red]error:[/]   {escape(str(r.error.get('message')))}", highlight=False)
    if r.status == "waiting":
        console.print(
            f"[cyan]waiting[/] for a person's reply; continue with: agent-runtime run --resume {r.run_id}",
            highlight=False,
            soft_wrap=True,  # a command to copy: never broken across lines
        )
    if run.interventions:
        console.print(
            f"person:  {len(run.interventions)} interventions ({run.intervention_kinds()})",
            highlight=False,
        )
    console.print(
        f"device:  {r.device.get('spec', '?')} {tuple(r.device.get('screen', ()))}", highlight=False
    )
    played = list(dict.fromkeys(s.graph for s in run.steps))
    kind = (r.config.get("graph") or {}).get("kind", DEFAULT_GRAPH)
    console.print(f"graph:   {kind}" + (f" (steps by {' → '.join(played)})" if len(played) > 1 else ""))
    t = r.timings
    console.print(
        f"time:    {t.get('total_ms', 0) / 1000:.1f}s total, "
        f"{t.get('model_ms', 0) / 1000:.1f}s in models, "
        f"{t.get('device_ms', 0) / 1000:.1f}s on the device · tokens {r.tokens.prompt_tokens} in / "
        f"{r.tokens.completion_tokens} out · {len(run.calls)} calls",
        highlight=False,
    )


def _roles_table(run: LoadedRun) -> Table:
    """Each role's model, coordinates, calls and replies that did not parse."""
    models = Table(title="roles")
    for col in ("role", "model", "coords", "calls", "parse errors"):
        models.add_column(col)
    errors = _parse_errors(run)
    for role, m in run.run.models.items():
        models.add_row(
            role,
            str(m.get("model_id") or m.get("model")),
            str(m.get("coords", "")),
            str(len(run.calls_for(role))),
            str(errors.get(role, 0)),
        )
    return models


def _steps_table(run: LoadedRun) -> Table:
    """Every step: subgoal, action (model → screen), verdict and who decided, critical path."""
    steps = Table(title="steps")
    for col in ("#", "subgoal", "action (model → screen)", "verdict", "critical path", "calls"):
        steps.add_column(col, overflow="fold")
    for s in run.steps:
        if s.action:
            action = json.dumps(s.action, ensure_ascii=False)
            if s.action_screen and s.action_screen != s.action:
                action += f" → {s.action_screen.get('coordinate', '')}"
            action = escape(_short(action, 90))
        else:
            action = "[red]unparseable[/]"
        verdict = f"{s.verdict.outcome} {_short(s.verdict.feedback, 50)}" if s.verdict else ""
        if s.confirmation:
            decided = f"{s.confirmation.get('decision')} by {s.confirmation.get('by', '?')}"
            verdict = f"{verdict} [{decided}]".strip()
        cp = s.timings_ms.get("critical_path")
        calls = s.timings_ms.get("critical_calls")
        steps.add_row(
            str(s.step),
            escape(_short(s.subgoal, 50)),
            action,
            escape(verdict),
            f"{cp:.0f} ms" if cp is not None else "",
            f"{calls:.0f} · {s.actor}" if calls is not None else s.actor,
        )
    return steps


def _check_line(r: RunRecord) -> str:
    """What checked the run and what it found (the outcome line says what that makes it)."""
    from agent_runtime.checks import checker_name
    from agent_runtime.traces import verification_of

    v = verification_of(r)
    detail = f" — {escape(v.detail)}" if v is not None and v.detail else ""
    if v is not None and v.checked:
        verdict = "[green]verified by[/]" if v.success else "[red]failed the check:[/]"
        return f"{verdict} {escape(checker_name(v.by))}{detail}"
    return f"not checked{detail}"


def _register_view(traces: typer.Typer) -> None:
    """``traces view``: a run, or every run of a directory, as self-contained HTML pages."""

    @traces.command("view")
    @guarded
    def view(
        run_id: Annotated[
            str | None,
            typer.Argument(
                help="Run id (or a unique prefix) or a run directory. Leave it out to write an index "
                "over every run in --runs-dir (and each run's page).",
                show_default=False,
            ),
        ] = None,
        runs_dir: RunsDirOpt = None,
        config: ConfigOpt = None,
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                help="The HTML file to write (default: RUN_DIR/view.html, or RUNS_DIR/index.html).",
            ),
        ] = None,
        serve: Annotated[
            bool, typer.Option("--serve", help="Serve the page(s) on http://127.0.0.1:PORT until Ctrl-C.")
        ] = False,
        port: Annotated[int, typer.Option("--port", help="Port for --serve (0 picks a free one).")] = 8765,
    ) -> None:
        """A run as one self-contained HTML page (or, without RUN_ID, an index over the runs).

        Per step: screenshots with the action drawn, subgoal, each role's prompt and reply.

        Also re-asks, parse errors, verdict, notes, timings, tokens and a critical-path timeline.

        Open the file in a browser or pass --serve; ?failed=1&role=worker presets the filters.

        \b
        agent-runtime traces view 20261122-070603          # runs/<id>/view.html
        agent-runtime traces view --runs-dir runs/eval     # index.html + each run's page
        agent-runtime traces view 20261122 --serve --port 8000
        """
        from agent_runtime.traces import find_run
        from agent_runtime.viewer import write_index, write_run_page

        console = Console(stderr=True)
        others: list[Path] = []
        if run_id is None:
            page, others = write_index(_runs_dir(runs_dir, config), out)
            console.print(f"wrote {page} over {len(others)} runs", highlight=False)
        else:
            given = Path(run_id).expanduser()
            run_dir = (
                given if (given / "run.json").is_file() else find_run(_runs_dir(runs_dir, config), run_id)
            )
            page = write_run_page(run_dir, out)
            console.print(f"wrote {page}", highlight=False)
        if not serve:
            print(page.resolve().as_uri())
            return
        from agent_runtime.viewer.serve import make_server, page_urls

        pages, main = page_urls(page, others)
        server = make_server(pages, main, port)
        print(f"http://127.0.0.1:{server.server_port}{main}", flush=True)
        console.print("serving; press Ctrl-C to stop", highlight=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)
        finally:
            server.server_close()
