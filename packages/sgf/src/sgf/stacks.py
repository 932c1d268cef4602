"""The stack presets `sgf init --stack` offers: backpressure file, sandbox image, ignores.

Each stack's files live in templates/stacks/<name>/: `backpressure.md` (the commands agents
run) and `sandbox.toml` (the default sandbox image name and the Debian packages that image
installs so those commands work).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import NamedTuple

from sgf import resources
from sgf.errors import UnknownStack

DEFAULT_STACK = "generic"  # `sgf sandbox build` outside a project: the minimal image


class Stack(NamedTuple):
    """One preset: templates/stacks/<name>/backpressure.md and sandbox.toml."""

    name: str
    description: str
    ignores: tuple[str, ...]

    def backpressure(self) -> str:
        """Return the stack's backpressure.md text."""
        return resources.read_text("stacks", self.name, "backpressure.md")

    def _sandbox(self) -> dict[str, object]:
        return tomllib.loads(resources.read_text("stacks", self.name, "sandbox.toml"))

    @property
    def docker_template(self) -> str:
        """The default sandbox image for this stack (`docker_template` in the config)."""
        image = self._sandbox()["image"]
        assert isinstance(image, str)
        return image

    def project_image(self, root: Path) -> str:
        """The sandbox image `sgf init` names for the project at `root`.

        The stack's image with a tag naming the project: its directory name and a hash of its
        path, so two projects (or two checkouts) never rebuild each other's image.
        """
        repository = self.docker_template.rsplit(":", 1)[0]
        slug = re.sub(r"[^a-z0-9_.-]+", "-", root.name.lower()).strip(".-")[:40] or "project"
        digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]
        return f"{repository}:{slug}-{digest}"

    @property
    def registries(self) -> tuple[str, ...]:
        """The package registries its agents reach through the egress proxy by default."""
        registries = self._sandbox().get("registries", [])
        assert isinstance(registries, list)
        return tuple(str(r) for r in registries)

    @property
    def packages(self) -> tuple[str, ...]:
        """The Debian packages the stack's sandbox image installs for its toolchain."""
        packages = self._sandbox()["packages"]
        assert isinstance(packages, list)
        return tuple(str(p) for p in packages)


STACKS: dict[str, Stack] = {
    s.name: s
    for s in (
        Stack(
            "python",
            "Python with venv, pip, pytest, ruff and mypy",
            (".venv/", "__pycache__/", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/"),
        ),
        Stack("rust", "Rust with cargo, clippy and rustfmt", ("/target",)),
        Stack(
            "typescript",
            "TypeScript with npm, tsc, vitest, eslint and prettier",
            ("node_modules/", "dist/", ".env", ".env.local"),
        ),
        Stack("go", "Go with go build, go test, go vet and gofmt", ()),
        Stack(
            "tauri",
            "Tauri: a Rust core with a TypeScript front end",
            ("/target", "src-tauri/target/", "node_modules/", "dist/"),
        ),
        Stack("generic", "Anything else: fill in your own commands", ()),
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
