"""The ``agent-runtime`` command line (typer + rich).

Thin by design: each command lives in its own module under ``agent_runtime/cli/`` with a
``register(app)`` function, imports its heavy dependencies inside the command, and turns
:class:`~agent_runtime.errors.AgentRuntimeError` into a one-paragraph message and exit code 2
(usage/config) — never a bare traceback.

Help text is plain text, never rich markup: help strings name things like ``TEMPLATE[/SEED]``
and ``[safety]``, which rich would read as tags (a ``MarkupError`` on ``--help``, or text that
silently disappears). :func:`plain_help` switches markup off for the app and every sub-app a
module registers, so a new command cannot bring the markup back.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agent_runtime.version import __version__
from agent_runtime.errors import AgentRuntimeError, ConfigError, DependencyError, RunLockedError

console = Console(stderr=True)

app = typer.Typer(
    name="agent-runtime",
    help="Run GUI agents on phones, desktops and SimPhone; trace every role call; retrain roles.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help is plain text: see the module docs
)

#: Modules that add commands; each has ``register(app: typer.Typer) -> None``.
COMMAND_MODULES = [
    "agent_runtime.cli.setup",
    "agent_runtime.cli.demo",
    "agent_runtime.cli.run",
    "agent_runtime.cli.traces",
    "agent_runtime.cli.memory",
    "agent_runtime.cli.serve",
    "agent_runtime.cli.eval",
    "agent_runtime.cli.judge",
    "agent_runtime.cli.mcp",
    "agent_runtime.cli.distill",
    "agent_runtime.cli.evolve",
    "agent_runtime.cli.simphone",
    "agent_runtime.cli.simphone_demos",
    "agent_runtime.cli.simphone_tasks",
]


def _version(value: bool) -> None:
    if value:
        print(f"agent-runtime {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """agent-runtime: Manager/Worker/Reflector/Notetaker/RAG agents with traces and trainers."""


#: The exit code when another process is playing the run (EX_TEMPFAIL: try again once it ends).
EXIT_LOCKED = 75


def report_error(exc: AgentRuntimeError) -> int:
    """Print an error for a person and return the exit code it maps to."""
    console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
    if exc.context:
        where = ", ".join(f"{k}={v}" for k, v in exc.context.items())
        console.print("  " + escape(where), highlight=False)
    if exc.hint:
        console.print(f"  [bold]hint:[/] {escape(exc.hint)}", highlight=False)
    if isinstance(exc, RunLockedError):
        return EXIT_LOCKED
    return 2 if isinstance(exc, ConfigError | DependencyError) else 1


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for command bodies: AgentRuntimeError → message + exit code, no traceback."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AgentRuntimeError as exc:
            raise typer.Exit(report_error(exc)) from None
        except KeyboardInterrupt:
            console.print("[yellow]interrupted[/]")
            raise typer.Exit(130) from None

    return wrapper


def plain_help(typer_app: typer.Typer) -> None:
    """Render ``typer_app``'s help, and every sub-app's below it, as plain text (no rich markup).

    Typer reads the markup mode of each sub-app from that sub-app (``typer.Typer()`` defaults to
    rich markup when rich is installed), so setting it on the root alone is not enough.
    """
    typer_app.rich_markup_mode = None
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            plain_help(group.typer_instance)


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)
plain_help(app)


def main() -> None:
    """Console-script entry point: Ctrl-C and SIGTERM stop every command alike (cli/signals.py)."""
    from agent_runtime.cli import signals

    signals.run(app)
