"""The architecture, enforced: no package imports another; sgf calls pn and ralph as programs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "pensa": {"ralph", "sgf"},
    "ralph": {"pensa", "sgf"},
    "sgf": {"pensa", "ralph"},
}


def imported_top_levels(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(), filename=str(source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_stay_inside_their_boundary(package: str) -> None:
    crossings = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "packages" / package / "src").rglob("*.py"))
        for name in imported_top_levels(path) & FORBIDDEN[package]
    ]
    assert crossings == []


def git_argv_literals(source: Path) -> list[int]:
    """Line numbers of list/tuple literals whose first element is the string "git"."""
    tree = ast.parse(source.read_text(), filename=str(source))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.List | ast.Tuple)
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "git"
    ]


@pytest.mark.parametrize("package", ["ralph", "sgf"])
def test_every_host_git_command_goes_through_the_hardened_helper(package: str) -> None:
    """Issue 9: repository configuration is attacker input, so ralph and sgf spell the git
    command once, as git.HARDENED (hooks, fsmonitor, pager and ext:: off), and nowhere else."""
    src = ROOT / "packages" / package / "src" / package
    spelled = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(src.rglob("*.py"))
        if "testing" not in path.parts
        for line in git_argv_literals(path)
    }
    tree = ast.parse((src / "git.py").read_text())
    [hardened] = [
        node.value.lineno
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "HARDENED" for t in node.targets)
    ]
    assert spelled == {f"packages/{package}/src/{package}/git.py:{hardened}"}
    text = (src / "git.py").read_text()
    for flag in ("core.hooksPath=/dev/null", "core.fsmonitor=false", "protocol.ext.allow=never"):
        assert flag in text
