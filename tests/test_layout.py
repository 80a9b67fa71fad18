"""The package layout: the tree the architecture is read from, and no import cycle between its parts.

Every ``import`` / ``from … import`` under ``agent_runtime/`` counts — at the top, inside
functions, under ``TYPE_CHECKING`` — because a lazy import is still a dependency: a cycle hidden
in a function body is a cycle all the same. Each file belongs to a first-level unit
(``agent_runtime/simphone/ui/view.py`` → ``simphone``; ``agent_runtime/config.py`` →
``config``), and the units form a graph that must have no cycle through two subpackages.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_runtime"
ROOT = PACKAGE.name

#: Where each import between two units is written: (importer, imported) → ["file:line module"].
Edges = dict[tuple[str, str], list[str]]

TREE = {
    "simphone": ["phone.py", "app.py", "execute.py", "ui/", "apps/", "adb/", "tasks/"],
    "devices": ["android/", "desktop/", "registry.py", "settle.py"],
    "trainers": [
        "data/",
        "demos/",
        "online/",
        "hi_agent/",
        "critics/",
        "iterations.py",
        "distill.py",
        "artifacts.py",
    ],
}


def _unit(path: Path) -> str:
    first = path.relative_to(PACKAGE).parts[0]
    return first.removesuffix(".py")


def _imported_modules(source: str, package: list[str]) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, a module of ``package``
    (``["agent_runtime", "simphone", "ui"]``); ``from agent_runtime import x`` names
    ``agent_runtime.x``, since ``x`` is a unit of its own."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module == ROOT:
                for alias in node.names:
                    yield node.lineno, f"{ROOT}.{alias.name}"
            else:
                yield node.lineno, module


def import_graph() -> Edges:
    edges: Edges = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _unit(path)
        package = [ROOT, *path.relative_to(PACKAGE).parts[:-1]]
        for line, module in _imported_modules(path.read_text(encoding="utf-8"), package):
            parts = module.split(".")
            if parts[0] != ROOT:
                continue
            there = parts[1] if len(parts) > 1 else "__init__"
            if there != here:
                edges[(here, there)].append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    return dict(edges)


def subpackages() -> set[str]:
    return {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def _strongly_connected(nodes: set[str], edges: Edges) -> list[set[str]]:
    """Tarjan's components, iteratively (a recursion limit is no reason for a test to fail)."""
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _cycle_through(start: str, component: set[str], edges: Edges) -> list[str]:
    """A shortest cycle from ``start`` back to itself inside ``component`` (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for a, b in sorted(edges):
                if a != node or b not in component:
                    continue
                if b == start:
                    path = [start, node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1]
                if b not in previous:
                    previous[b] = node
                    following.append(b)
        frontier = following
    return []


def _describe(cycle: list[str], edges: Edges) -> str:
    lines = [" -> ".join(cycle)]
    for a, b in zip(cycle, cycle[1:], strict=False):
        lines.append(f"  {a} -> {b}:")
        lines.extend(f"    {where}" for where in edges[(a, b)])
    return "\n".join(lines)


def test_no_import_cycle_between_subpackages() -> None:
    """A cycle counts when it runs through two subpackages, even by way of a top-level module
    (``evaluation -> runtime -> models -> trainers -> evaluation``); one among top-level
    modules alone is not a layering question."""
    edges = import_graph()
    packages = subpackages()
    nodes = {unit for edge in edges for unit in edge}
    problems = []
    for component in _strongly_connected(nodes, edges):
        inside = sorted(component & packages)
        if len(inside) >= 2:
            shortest = min((_cycle_through(p, component, edges) for p in inside), key=len)
            problems.append(_describe(shortest, edges))
    assert not problems, "import cycles between subpackages:\n" + "\n\n".join(problems)


def test_the_checker_sees_a_cycle() -> None:
    """The cycle search is only as good as its graph walk: a made-up back-arrow must be caught."""
    edges: Edges = {
        ("models", "trainers"): ["m.py:1"],
        ("trainers", "models"): ["t.py:1"],
        ("trainers", "config"): ["t.py:2"],
    }
    components = [c for c in _strongly_connected({"models", "trainers", "config"}, edges) if len(c) > 1]
    assert components == [{"models", "trainers"}]
    assert _cycle_through("models", components[0], edges) == ["models", "trainers", "models"]


def test_imports_inside_functions_and_type_checking_count() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from agent_runtime.models import make_chat_model\n"
        "def lazy():\n"
        "    from ..trainers import distill\n"
        "    import agent_runtime.simphone.phone\n"
        "from . import harness\n"
        "from agent_runtime import config\n"
    )
    found = {module for _, module in _imported_modules(source, [ROOT, "evaluation"])}
    assert found >= {
        "agent_runtime.models",
        "agent_runtime.trainers",
        "agent_runtime.simphone.phone",
        "agent_runtime.evaluation",
        "agent_runtime.config",
    }


def test_the_tree_the_architecture_is_read_from() -> None:
    def present(path: Path, entry: str) -> bool:
        return path.is_dir() if entry.endswith("/") else path.is_file()

    missing = [
        f"agent_runtime/{package}/{entry}"
        for package, entries in TREE.items()
        for entry in entries
        if not present(PACKAGE / package / entry, entry)
    ]
    assert not missing, f"missing from the layout: {missing}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def file_graph() -> Edges:
    """Edges between files: an import names the longest module it reaches
    (``from agent_runtime.simphone import phone`` → ``agent_runtime.simphone.phone``;
    ``from agent_runtime.simphone import Phone`` → the package's ``__init__``)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        while parts:
            if ".".join(parts) in modules:
                return ".".join(parts)
            parts.pop()
        return None

    edges: Edges = defaultdict(list)
    for here, path in sorted(modules.items()):
        package = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                names = [f"{module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                there = resolve(name) if name.split(".")[0] == ROOT else None
                if there and there != here:
                    edges[(here, there)].append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return dict(edges)


def test_no_file_imports_itself_through_others() -> None:
    """No circle at all between files, lazy and ``TYPE_CHECKING`` imports included: a module
    that reaches itself through others cannot be read, tested or loaded on its own."""
    edges = file_graph()
    nodes = {module for edge in edges for module in edge}
    problems = [
        _describe(min((_cycle_through(m, c, edges) for m in sorted(c)), key=len), edges)
        for c in _strongly_connected(nodes, edges)
        if len(c) > 1
    ]
    assert not problems, f"{len(problems)} import circles between files:\n" + "\n\n".join(problems)


def test_the_file_graph_resolves_names_to_modules() -> None:
    edges = file_graph()
    assert (
        "agent_runtime.cli.setup",
        "agent_runtime.demo_model",
    ) in edges  # `from agent_runtime import demo_model`
    assert all(a != b for a, b in edges)


#: The most lines one function may span, decorators excluded: past this a reader loses the thread.
MAX_FUNCTION_LINES = 120


def test_no_function_over_120_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(
                        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({lines} lines)"
                    )
    assert not long, "functions over 120 lines:\n" + "\n".join(long)


def test_the_runtime_facade_stays_thin() -> None:
    lines = len((PACKAGE / "runtime.py").read_text(encoding="utf-8").splitlines())
    assert lines <= 600, f"agent_runtime/runtime.py has {lines} lines (at most 600)"
