"""Each package's import graph, drawn from the source with `ast`, has no cycle and no upward
import.

The graph has one node per module of `packages/<name>/src/<name>` (a package's `__init__` is
the package's node) and an edge for every import of a sibling module, wherever it is written:
at the top, inside a function or inside a `try`. Imports under `if TYPE_CHECKING:` are left
out: they never run, so they can neither form a cycle at import time nor make a module depend
on what it names.

"Upward" is defined by a declared layer order per package, `TOP`: the first name is the
highest layer (e.g. `cli`, the click layer, with its sub-modules), each following name the
next one down, and every module not named is below all of them. A module may import only
modules in its own layer or below, so nothing in the library reaches back up into the CLI
(or, in pensa, into the front door `session` that the CLI drives).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pensa", "ralph", "sgf")
# Highest layer first; a layer covers the module and, for a sub-package, everything in it.
TOP: dict[str, tuple[str, ...]] = {
    "pensa": ("__main__", "program", "cli", "session"),
    "ralph": ("__main__", "cli"),
    "sgf": ("__main__", "cli"),
}
# Cycles tolerated for now, each with why; empty means none.
KNOWN_CYCLES: dict[str, list[tuple[list[str], str]]] = {"pensa": [], "ralph": [], "sgf": []}


def source_root(package: str) -> Path:
    return ROOT / "packages" / package / "src"


def module_files(package: str, src: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package `__init__`)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return found


def type_only(tree: ast.AST) -> set[int]:
    """The ids of every node under an `if TYPE_CHECKING:` block."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        )
        for inner in ast.walk(node)
    }


def import_graph(package: str, src: Path) -> dict[str, set[str]]:
    """Module -> the sibling modules it imports (anywhere in its body, not type-only)."""
    modules = module_files(package, src)
    graph: dict[str, set[str]] = {}
    for name, (path, is_init) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = type_only(tree)
        here = name if is_init else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package:
                        targets.add(nearest_module(alias.name, modules))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                if base.split(".")[0] != package:
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in modules else nearest_module(base, modules))
        targets.discard(name)
        graph[name] = targets
    return graph


def nearest_module(dotted: str, modules: dict[str, tuple[Path, bool]]) -> str:
    while dotted not in modules and "." in dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(package: str, module: str) -> int:
    """0 for the highest declared layer, len(TOP) for the library below them all."""
    for rank, name in enumerate(TOP[package]):
        top = f"{package}.{name}"
        if module == top or module.startswith(top + "."):
            return rank
    return len(TOP[package])


def upward_imports(package: str, graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(package, target) < layer(package, module)
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package: str) -> None:
    known = [members for members, _why in KNOWN_CYCLES[package]]
    assert cycles(import_graph(package, source_root(package))) == known


@pytest.mark.parametrize("package", PACKAGES)
def test_no_upward_imports(package: str) -> None:
    assert upward_imports(package, import_graph(package, source_root(package))) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_declared_layer_exists(package: str) -> None:
    modules = module_files(package, source_root(package))
    assert all(f"{package}.{name}" in modules for name in TOP[package])


def write_package(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_graph_sees_a_cycle_inside_a_function_and_an_upward_import(tmp_path: Path) -> None:
    write_package(
        tmp_path / "packages" / "pensa" / "src" / "pensa",
        {
            "__init__.py": "",
            "__main__.py": "from pensa.cli import main\n",
            "cli/__init__.py": "from pensa import a\n",
            "a.py": "from pensa import b\n",
            "b.py": "def late():\n    from . import a\n",
            "c.py": "from pensa.cli import main\n",
            "d.py": "import typing\nif typing.TYPE_CHECKING:\n    from pensa import cli\n",
        },
    )
    graph = import_graph("pensa", tmp_path / "packages" / "pensa" / "src")
    assert cycles(graph) == [["pensa.a", "pensa.b"]]
    assert upward_imports("pensa", graph) == ["pensa.c imports pensa.cli"]
