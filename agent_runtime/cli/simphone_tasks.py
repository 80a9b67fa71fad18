"""``agent-runtime simphone tasks``: list SimPhone task templates (added to the ``simphone`` group)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from agent_runtime.cli import guarded


def task_rows(app: str | None, split: str, pattern: str | None) -> list[dict[str, object]]:
    """One row per selected template, with the goal of its first instance in ``split``."""
    from agent_runtime.simphone.tasks import registry, select, task_instances

    reg = registry()
    rows: list[dict[str, object]] = []
    for name in select(pattern, app=app):
        cls = reg[name]
        example = task_instances([name], split=split, episodes=1)[0]  # type: ignore[arg-type]
        rows.append(
            {
                "name": name,
                "app": cls.app_names[0],
                "apps": list(cls.app_names),
                "kind": cls.kind,
                "complexity": cls.complexity,
                "max_steps": example.max_steps,
                "answer_task": cls.answer_task,
                "template": cls.template,
                "example_goal": example.goal,
                "example_seed": example.seed,
            }
        )
    return rows


def register(app: typer.Typer) -> None:
    from agent_runtime.cli.simphone import simphone_app

    @simphone_app.command("tasks")
    @guarded
    def tasks(
        app_name: Annotated[
            str | None, typer.Option("--app", help="Only templates of this app (label).")
        ] = None,
        split: Annotated[
            str, typer.Option("--split", help="Draw the example goal from train, test or all.")
        ] = "train",
        pattern: Annotated[
            str | None, typer.Option("--tasks", help="Template names: globs ('Clock*') or re:REGEX.")
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print a JSON list instead of a table.")
        ] = False,
    ) -> None:
        """List the SimPhone task templates: name, app, complexity, an example goal."""
        rows = task_rows(app_name, split, pattern)
        if as_json:
            print(json.dumps(rows))
            return
        render(rows, split, Console())


#: Columns a narrow terminal drops (the kind and complexity are in ``--json``).
_WIDE_ONLY = ("kind", "cx")
_COLUMNS = ("name", "app", "kind", "cx", "steps", "example goal")


def _cells(r: dict[str, object]) -> dict[str, str]:
    return {
        "name": str(r["name"]),
        "app": str(r["app"]),
        "kind": str(r["kind"]),
        "cx": f"{r['complexity']:g}",
        "steps": str(r["max_steps"]),
        "example goal": str(r["example_goal"]),
    }


def render(rows: list[dict[str, object]], split: str, console: Console) -> None:
    """A table on a terminal (kind and complexity only when it is 110 columns or wider); plain
    tab-separated lines with a header row when the output is piped or redirected."""
    if not console.is_terminal:
        console.file.write("\t".join(_COLUMNS) + "\n")
        for r in rows:
            cells = _cells(r)
            console.file.write("\t".join(cells[c].replace("\t", " ") for c in _COLUMNS) + "\n")
        return
    columns = [c for c in _COLUMNS if console.width >= 110 or c not in _WIDE_ONLY]
    table = Table(
        title=f"SimPhone tasks ({len(rows)} templates; example goals from {split})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in columns:
        table.add_column(
            col,
            overflow="fold",
            no_wrap=col in ("name", "app", "steps"),
            justify="right" if col in ("cx", "steps") else "left",
        )
    for r in rows:
        cells = _cells(r)
        table.add_row(*(cells[c] for c in columns))
    console.print(table)
