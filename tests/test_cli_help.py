"""Every command's ``--help`` works, as a person runs it: each command and subcommand (walked
from the app itself, so a new command is covered without editing this file) is asked for its
help by the real CLI in a subprocess (``python -m agent_runtime.cli ... --help``), several at a
time. Help text is plain text — ``TEMPLATE[/SEED]`` once crashed ``run --help`` with rich's
``MarkupError`` — and the installed dependencies are the ones pyproject.toml declares, so CI
proves the ranges the package promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from packaging.requirements import Requirement
from typer.testing import CliRunner

from agent_runtime.cli import app, plain_help

ROOT = Path(__file__).resolve().parents[1]
#: ``[word]`` as help text writes it (``TEMPLATE[/SEED]``, ``[safety]``, ``[y]es``): what rich
#: would read as a markup tag.
BRACKETED = re.compile(r"\[[^\[\]\s]+\]")


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command below ``cmd`` (itself included) with its argv path."""
    found = [(path, cmd)]
    if hasattr(cmd, "list_commands"):  # a group (click's, or the copy typer vendors)
        ctx = cmd.context_class(cmd)
        for name in cmd.list_commands(ctx):
            found += _commands(cmd.get_command(ctx, name), (*path, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))


def _own_text(cmd: Any) -> str:
    """The help text a command's own ``--help`` shows in full: its help and its parameters'."""
    texts = [(cmd.help or "").split("\f")[0], cmd.epilog or ""]
    texts += [getattr(param, "help", None) or "" for param in cmd.params]
    return "\n".join(texts)


def _help(path: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_runtime.cli", *path, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"},
    )


@pytest.fixture(scope="module")
def helps() -> dict[tuple[str, ...], subprocess.CompletedProcess[str]]:
    """Each command's help from its own real CLI process, four at a time."""
    paths = [path for path, _ in COMMANDS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(paths, pool.map(_help, paths), strict=True))


def test_the_walk_finds_every_command_and_subcommand():
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "run", "traces", "traces view", "memory search", "simphone tasks"} <= paths
    assert len(paths) > 20


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "(root)")
def test_help_renders_with_its_bracketed_text_literally(helps, path):
    proc = helps[path]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stdout.startswith("Usage:"), proc.stdout[:500]
    cmd = dict(COMMANDS)[path]
    shown = proc.stdout
    missing = [token for token in BRACKETED.findall(_own_text(cmd)) if token not in shown]
    assert not missing, f"help text lost {missing} (read as markup?)\n{shown}"


def test_run_help_shows_the_task_id_and_safety_brackets(helps):
    shown = " ".join(helps[("run",)].stdout.split())
    assert "TEMPLATE[/SEED]" in shown
    assert "[safety]" in shown and "simphone[:SEED]" in shown


def test_a_new_sub_app_with_markup_in_its_help_is_plain_text_too():
    """A sub-app a module adds later gets plain help as well (typer reads each sub-app's own
    markup mode, so switching markup off on the root alone would not do)."""
    root = typer.Typer(rich_markup_mode=None)
    sub = typer.Typer()  # rich markup by default, as every module's sub-app starts out

    @sub.command("go")
    def go(seed: int = typer.Option(0, help="A seed for TEMPLATE[/SEED]; [bold]not bold[/bold].")) -> None:
        """Go [y]es or [n]o."""

    @sub.command("stop")
    def stop() -> None:
        """Stop."""

    root.add_typer(sub, name="sub")
    plain_help(root)
    result = CliRunner().invoke(root, ["sub", "go", "--help"])
    assert result.exit_code == 0, result.output
    for literal in ("TEMPLATE[/SEED]", "[bold]not bold[/bold]", "[y]es"):
        assert literal in result.output


def _declared() -> list[Requirement]:
    """The requirements CI installs (``pip install -e .[dev]``): the core dependencies and every
    extra ``dev`` names, its ``agent-runtime[...]`` self-references followed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    found = [Requirement(text) for text in project["dependencies"]]
    todo, seen = ["dev"], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in extras[extra]:
            req = Requirement(text)
            if req.name == project["name"]:
                todo.extend(req.extras)
            else:
                found.append(req)
    return [req for req in found if req.marker is None or req.marker.evaluate()]


def test_every_installed_dependency_is_in_its_declared_range():
    """CI proves the ranges the package declares: what it installed and tested must satisfy
    pyproject.toml (a bound widened without a CI run on the new release fails here)."""
    declared = _declared()
    assert {"typer", "rich", "pydantic", "httpx"} <= {req.name for req in declared}
    outside = []
    for req in declared:
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            outside.append(f"{req}: not installed")
            continue
        if not req.specifier.contains(version, prereleases=True):
            outside.append(f"{req}: {version} installed")
    assert not outside, "installed versions outside pyproject.toml's ranges: " + "; ".join(outside)


@pytest.mark.parametrize("name", ["typer", "rich", "pydantic", "httpx", "jinja2", "pyyaml", "pillow"])
def test_core_dependencies_have_an_upper_bound(name):
    """A new major (or, for 0.x, minor) release must not reach users before CI has run it."""
    (req,) = [req for req in _declared() if req.name == name]
    assert any(spec.operator in ("<", "<=", "==") for spec in req.specifier), str(req)
