"""Start-up stays light: ``import agent_runtime`` loads none of the heavy dependencies and
``agent-runtime --help`` imports no command module (benchmarks/startup.py times both; tests
assert what is loaded, never how long it took). The root's static command table
(:data:`agent_runtime.cli.COMMANDS`) is checked against the commands themselves, so the lazy
listing cannot drift from what the commands say."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import typer.main
from typer.testing import CliRunner

import agent_runtime
from agent_runtime.cli import COMMANDS, app, registered

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agent_runtime"
#: Modules ``import agent_runtime`` must not load (each costs tens of milliseconds or more).
HEAVY = ("langgraph", "torch", "pydantic_settings", "httpx")
COMMAND_MODULES = sorted({module for listed in COMMANDS.values() for module in listed.modules})


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (its stdout is discarded)."""
    script = (
        "import contextlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT, timeout=120
    )
    return set(json.loads(out.stdout))


def test_import_loads_nothing_heavy():
    loaded = _loaded_after("import agent_runtime")
    assert not [name for name in HEAVY if name in loaded]
    assert {name for name in loaded if name.startswith("agent_runtime")} == {
        "agent_runtime",
        "agent_runtime.version",
    }


def test_help_imports_no_command_module():
    code = (
        "sys.argv = ['agent-runtime', '--help']\n"
        "from agent_runtime.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
    )
    loaded = _loaded_after(code)
    assert not [module for module in COMMAND_MODULES if module in loaded]
    assert not [name for name in HEAVY if name in loaded]


def test_every_public_name_loads_from_where_type_checkers_read_it():
    """``_LAZY`` (what runs) and the ``TYPE_CHECKING`` imports (what type checkers read) agree."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    (guard,) = [node for node in tree.body if isinstance(node, ast.If)]
    typed = {
        alias.name: node.module
        for node in guard.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == agent_runtime._LAZY
    assert set(agent_runtime.__all__) == {*agent_runtime._LAZY, "__version__"}
    assert set(agent_runtime.__all__) <= set(dir(agent_runtime))


def test_nothing_inside_imports_from_the_package_root():
    """``from agent_runtime import X`` inside the package names a submodule, never a public name:
    a public name would load the root's lazy table from inside, and circles with it."""
    submodules = {path.stem if path.suffix else path.name for path in PACKAGE.iterdir()}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "agent_runtime" and not node.level:
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}"
                    for alias in node.names
                    if alias.name not in submodules
                ]
    assert not found, found


def test_the_table_says_what_each_command_says():
    real = {}
    for listed in COMMANDS.values():
        real.update(typer.main.get_group(registered(listed.modules)).commands)
    assert set(real) == set(COMMANDS), "a command module adds a command the table does not list"
    for name, listed in COMMANDS.items():
        command = real[name]
        assert (command.get_short_help_str(limit=sys.maxsize), command.hidden) == (
            listed.help,
            listed.hidden,
        ), name


def test_help_lists_every_command_as_the_loaded_commands_would():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:")[1]
    names = [line.split()[0] for line in listed.splitlines() if line.strip()]
    assert names == [name for name, entry in COMMANDS.items() if not entry.hidden]

    group = typer.main.get_command(app)
    ctx = group.make_context("agent-runtime", [], resilient_parsing=True)
    lazy = group.get_help(ctx)
    for name in COMMANDS:
        assert group.get_command(ctx, name) is not None  # now the real commands render the list
    assert group.get_help(ctx) == lazy
