"""The stack presets `sgf init --stack` offers: backpressure file, sandbox image, ignores."""

from __future__ import annotations

from typing import NamedTuple

from sgf import resources
from sgf.errors import UnknownStack

DEFAULT_TEMPLATE = "springfield-sandbox:latest"


class Stack(NamedTuple):
    """One preset. Its backpressure file is templates/stacks/<name>/backpressure.md."""

    name: str
    description: str
    docker_template: str
    ignores: tuple[str, ...]

    def backpressure(self) -> str:
        """Return the stack's backpressure.md text."""
        return resources.read_text("stacks", self.name, "backpressure.md")


STACKS: dict[str, Stack] = {
    s.name: s
    for s in (
        Stack(
            "python",
            "Python with uv, pytest, ruff and mypy",
            DEFAULT_TEMPLATE,
            (".venv/", "__pycache__/", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/"),
        ),
        Stack("rust", "Rust with cargo, clippy and rustfmt", DEFAULT_TEMPLATE, ("/target",)),
        Stack(
            "typescript",
            "TypeScript with npm, tsc, vitest, eslint and prettier",
            DEFAULT_TEMPLATE,
            ("node_modules/", "dist/", ".env", ".env.local"),
        ),
        Stack("go", "Go with go build, go test, go vet and gofmt", DEFAULT_TEMPLATE, ()),
        Stack(
            "tauri",
            "Tauri: a Rust core with a TypeScript front end",
            DEFAULT_TEMPLATE,
            ("/target", "src-tauri/target/", "node_modules/", "dist/"),
        ),
        Stack(
            "generic",
            "Anything else: fill in your own commands",
            DEFAULT_TEMPLATE,
            (),
        ),
    )
}


def names() -> list[str]:
    """Return the stack names in their presentation order."""
    return list(STACKS)


def get(name: str | None) -> Stack:
    """Return the stack called `name`, or raise UnknownStack listing the choices."""
    if name is None or name not in STACKS:
        raise UnknownStack(name, names())
    return STACKS[name]
