"""The ``agent-runtime`` command line (typer + rich).

Thin by design: each command lives in its own module under ``agent_runtime/cli/`` with a
``register(app)`` function, imports its heavy dependencies inside the command, and turns
:class:`~agent_runtime.errors.AgentRuntimeError` into a one-paragraph message and exit code 2
(usage/config) — never a bare traceback.

The root is lazy: ``agent-runtime --help`` lists the commands from :data:`COMMANDS` (name →
modules, one-line help) and imports a command's module only when that command runs or its own
``--help`` is asked for, so a bare ``--help`` costs typer and nothing else (tests/test_cli_help.py
keeps the table equal to each command's real help).

Help text is plain text, never rich markup: help strings name things like ``TEMPLATE[/SEED]``
and ``[safety]``, which rich would read as tags (a ``MarkupError`` on ``--help``, or text that
silently disappears). :func:`plain_help` switches markup off for the app and every sub-app a
module registers, so a new command cannot bring the markup back.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer
import typer.core
import typer.main

from agent_runtime.errors import AgentRuntimeError, ConfigError, DependencyError, RunLockedError
from agent_runtime.version import __version__

if TYPE_CHECKING:
    from rich.console import Console
    from typer._click import Command, Context, HelpFormatter


class Listed(NamedTuple):
    """A command as the root lists it before any of its modules is imported."""

    #: Modules whose ``register(app: typer.Typer) -> None`` add the command, in this order.
    modules: tuple[str, ...]
    #: Its one-line help: what ``get_short_help_str`` gives with no width limit.
    help: str
    hidden: bool = False


#: Every command of the root, in the order ``--help`` lists them.
COMMANDS: dict[str, Listed] = {
    "init": Listed(("agent_runtime.cli.setup",), "Write a commented example configuration."),
    "doctor": Listed(
        ("agent_runtime.cli.setup",),
        "Check the config, each role's model endpoint, the device spec and installed extras.",
    ),
    "selftest": Listed(
        ("agent_runtime.cli.demo",),
        "Check the whole pipeline offline: a tiny random-weights model behind `serve`, on SimPhone.",
    ),
    "demo": Listed(("agent_runtime.cli.demo",), "The old name of ``selftest``. (DEPRECATED)", hidden=True),
    "run": Listed(
        ("agent_runtime.cli.run",),
        "Run a task on a device with the configured roles; stream progress; write a trace.",
    ),
    "serve": Listed(
        ("agent_runtime.cli.serve",),
        "Serve a local model over the OpenAI chat-completions API (+ vLLM's LoRA endpoints).",
    ),
    "eval": Listed(
        ("agent_runtime.cli.eval",),
        "Evaluate a policy on SimPhone tasks: success rate (Wilson 95% CI), steps, per app and task.",
    ),
    "judge": Listed(
        ("agent_runtime.cli.judge",),
        "Label runs with the step critic (GOOD/NEUTRAL/HARMFUL) and the trajectory critic (consensus).",
    ),
    "mcp": Listed(
        ("agent_runtime.cli.mcp",),
        "Serve run_task, list_devices, screenshot and get_run as MCP tools over stdio.",
    ),
    "distill": Listed(
        ("agent_runtime.cli.distill",),
        "Train ROLE with METHOD: sft (traces), dpo (SimPhone levels + trace corrections), irr "
        "(SimPhone), trpo / dgrpo (online RL on SimPhone rollouts), grpo (Hi-Agent single-step GRPO "
        "on SimPhone oracle steps); the last three write one manifest per iteration and resume.",
    ),
    "evolve": Listed(
        ("agent_runtime.cli.evolve",),
        "Evolve a role model: rollouts -> filters -> hint-guided SFT -> (RL) -> held-out eval -> promote.",
    ),
    "traces": Listed(("agent_runtime.cli.traces",), "List, inspect and export run traces."),
    "memory": Listed(
        ("agent_runtime.cli.memory",), "Documents and run experience the RAG node retrieves from."
    ),
    "simphone": Listed(
        (
            "agent_runtime.cli.simphone",
            "agent_runtime.cli.simphone_demos",
            "agent_runtime.cli.simphone_tasks",
        ),
        "SimPhone, the virtual Android phone: serve it over adb, take screenshots, list tasks.",
    ),
}


def plain_help(typer_app: typer.Typer) -> None:
    """Render ``typer_app``'s help, and every sub-app's below it, as plain text (no rich markup).

    Typer reads the markup mode of each sub-app from that sub-app (``typer.Typer()`` defaults to
    rich markup when rich is installed), so setting it on the root alone is not enough.
    """
    typer_app.rich_markup_mode = None
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            plain_help(group.typer_instance)


@functools.cache
def registered(modules: tuple[str, ...]) -> typer.Typer:
    """A typer app holding the commands ``modules`` register; each set registers once a process
    (``simphone_demos`` adds to a module-level sub-app, which a second call would duplicate)."""
    commands = typer.Typer(rich_markup_mode=None)
    for module in modules:
        importlib.import_module(module).register(commands)
    plain_help(commands)
    return commands


class LazyCommands(MutableMapping[str, "Command"]):
    """The root group's commands by name: every name of :data:`COMMANDS` is there from the start,
    and looking one up imports its modules. Click and typer read ``group.commands`` for lookups,
    listings and "did you mean" suggestions alike, so all of them see every command."""

    def __init__(self, loaded: MutableMapping[str, Command]) -> None:
        self._loaded = loaded

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded and name in COMMANDS:
            self._loaded.update(typer.main.get_group(registered(COMMANDS[name].modules)).commands)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._loaded]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*COMMANDS, *self._loaded]))

    def loaded(self, name: str) -> Command | None:
        """The command if its module is imported already, without importing anything."""
        return self._loaded.get(name)


class LazyGroup(typer.core.TyperGroup):
    """The root group: commands load on first use, and ``--help`` lists them from the table."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self.commands)

    def list_commands(self, ctx: Context) -> list[str]:
        """The names alone (typer's own reads every command, which would import them all)."""
        return list(self.commands)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """Click's listing (name, help cut to the width), read from :data:`COMMANDS` for a command
        not imported yet."""
        assert isinstance(self.commands, LazyCommands)
        rows: list[tuple[str, Command]] = []
        for name in self.list_commands(ctx):
            listed = COMMANDS.get(name)
            command = self.commands.loaded(name)
            if command is None and listed is not None:
                command = typer.core.TyperCommand(name, help=listed.help, hidden=listed.hidden)
            if command is not None and not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])


app = typer.Typer(
    name="agent-runtime",
    help="Run GUI agents on phones, desktops and SimPhone; trace every role call; retrain roles.",
    cls=LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help is plain text: see the module docs
)


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


@functools.cache
def _stderr() -> Console:
    """Where errors are printed (rich loads with the first error, not with ``--help``)."""
    from rich.console import Console

    return Console(stderr=True)


def report_error(exc: AgentRuntimeError) -> int:
    """Print an error for a person and return the exit code it maps to."""
    from rich.markup import escape

    console = _stderr()
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

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AgentRuntimeError as exc:
            raise typer.Exit(report_error(exc)) from None
        except KeyboardInterrupt:
            _stderr().print("[yellow]interrupted[/]")
            raise typer.Exit(130) from None

    return wrapper


def main() -> None:
    """Console-script entry point: Ctrl-C and SIGTERM stop every command alike (cli/signals.py)."""
    from agent_runtime.cli import signals

    signals.run(app)
