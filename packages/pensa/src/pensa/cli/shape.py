"""The options that give an issue its shape, declared once for `pn create` and `pn update`:
its parent, the issue it was discovered from, its size and its Ready Contract (objective,
artifact, verify commands). The command receives them as one `shape` value."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import click

from pensa.changes import Shape

if TYPE_CHECKING:
    from collections.abc import Callable


def shape_options(*, update: bool) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add --parent, --discovered-from, --size, --objective, --artifact and --verify; the
    command gets `shape` instead. For `update`, `""` clears a field and `--verify` replaces
    the list (`--verify ""` empties it)."""
    clears = ' ("" clears it)' if update else ""
    options = (
        click.option(
            "--parent",
            metavar="ID",
            help=f"The epic or feature (or task) this issue is part of{clears}.",
        ),
        click.option(
            "--discovered-from",
            metavar="ID",
            help=f"The issue whose work found this one{clears}.",
        ),
        click.option("--size", metavar="S|M|L", help=f"How big: S, M or L{clears}."),
        click.option("--objective", help=f"What the issue accomplishes{clears}."),
        click.option("--artifact", help=f"Where the change lands: files, paths{clears}."),
        click.option(
            "--verify",
            multiple=True,
            metavar="CMD",
            help="A shell command that proves the work done (repeatable, run in order"
            + ('; replaces the list, "" empties it).' if update else ")."),
        ),
    )

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(command)
        def with_shape(
            *args: Any,
            parent: str | None,
            discovered_from: str | None,
            size: str | None,
            objective: str | None,
            artifact: str | None,
            verify: tuple[str, ...],
            **kwargs: Any,
        ) -> None:
            commands = [c for c in verify if c] if verify else None
            shape = Shape(parent, discovered_from, size, objective, artifact, commands)
            command(*args, shape=shape, **kwargs)

        wrapped: Callable[..., None] = with_shape
        for option in reversed(options):
            wrapped = option(wrapped)
        return wrapped

    return decorate
