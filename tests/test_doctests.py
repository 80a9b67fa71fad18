"""Every docstring example in agent_runtime runs, module by module.

The modules are found by walking the package for ``>>>`` (a new module with examples is picked
up without touching this file); each is imported by name and its examples run under
:mod:`doctest`, so a failure names the module and shows the example that broke.
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agent_runtime"

#: Not importable as a module: the CLI entry point runs the app, and atspi_dump is a script for
#: the system Python (it needs pyatspi, which a virtualenv does not have).
NOT_IMPORTED = {"agent_runtime.cli.__main__", "agent_runtime.devices.desktop.atspi_dump"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_with_examples() -> list[str]:
    names = (
        _module_name(path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if ">>>" in path.read_text(encoding="utf-8")
    )
    return [name for name in names if name not in NOT_IMPORTED]


def test_discovery_finds_the_modules_with_examples():
    found = modules_with_examples()
    assert len(found) >= 30
    assert {"agent_runtime.actions", "agent_runtime.config", "agent_runtime.evaluation"} <= set(found)
    assert not NOT_IMPORTED & set(found)


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # An optional extra that is not installed: skip. A missing agent_runtime module is a bug.
        if exc.name and exc.name.split(".")[0] != "agent_runtime":
            pytest.skip(f"{name} needs {exc.name!r}, which is not installed")
        raise


@pytest.mark.parametrize("name", modules_with_examples())
def test_module_doctests(name: str) -> None:
    module = _import(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.write)
    failed, attempted = runner.failures, runner.tries
    assert attempted > 0, f"{name} contains '>>>' but no docstring example of it ran"
    assert failed == 0, f"{failed} of {attempted} examples failed in {name}:\n{report.getvalue()}"
