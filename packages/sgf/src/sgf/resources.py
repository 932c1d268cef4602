"""The one place that knows where sgf's templates live.

templates/ sits at the workspace root; `src/sgf/templates` is a symlink to it, so an editable
install and a built wheel (which carries a real copy) both expose it as package data of `sgf`.
Nobody else computes paths to it.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


def root() -> Traversable:
    """Return the templates directory shipped with sgf."""
    return resources.files("sgf") / "templates"


def template(*parts: str) -> Traversable:
    """Return one file under templates/, e.g. `template("prompts", "build.md")`."""
    node = root()
    for part in parts:
        node = node / part
    return node


def read_text(*parts: str) -> str:
    """Read one template file as UTF-8 text."""
    return template(*parts).read_text(encoding="utf-8")


def read_bytes(*parts: str) -> bytes:
    """Read one template file as bytes (for hashing the sandbox Dockerfile)."""
    return template(*parts).read_bytes()


def names(*parts: str) -> list[str]:
    """List the entries of one template directory, sorted."""
    return sorted(entry.name for entry in template(*parts).iterdir())


def path(*parts: str) -> Path:
    """One template file as a path on disk, for a program that reads it itself (ralph's
    `--scenario`); templates ship as plain files in the wheel, never zipped."""
    node = template(*parts)
    if not isinstance(node, Path):  # pragma: no cover - sgf is never imported from a zip
        raise FileNotFoundError(f"sgf's templates are not files on disk: {node}")
    return node
