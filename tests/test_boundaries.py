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
