"""``agent-runtime simphone tasks``: list SimPhone task templates (added to the ``simphone`` group)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
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
        table = Table(title=f"SimPhone tasks ({len(rows)} templates; example goals from {split})")
        for col in ("name", "app", "kind", "cx", "steps", "example goal"):
            table.add_column(
                col,
                overflow="fold",
                no_wrap=col == "name",
                justify="right" if col in ("cx", "steps") else "left",
            )
        for r in rows:
            table.add_row(
                str(r["name"]),
                str(r["app"]),
                str(r["kind"]),
                f"{r['complexity']:g}",
                str(r["max_steps"]),
                str(r["example_goal"]),
            )
        Console().print(table)
