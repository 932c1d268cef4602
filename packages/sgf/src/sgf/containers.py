"""The loops' running containers as Docker lists them: how `sgf top --all` finds projects
whose loops run without sgf's loop index (a bare `ralph`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sgf import proc
from sgf.errors import SgfError


@dataclass(frozen=True, slots=True)
class LabelledLoop:
    """A running container of a loop, as its labels tell (`sgf top --all` finds projects so)."""

    project: str
    loop_id: str
    ralph_pid: int | None
    ralph_start: int | None


def labelled_loops(env: Mapping[str, str], *, timeout: float = 5) -> list[LabelledLoop]:
    """This machine's running containers labelled `springfield.project`; none without Docker."""
    if proc.which("docker", env) is None:
        return []
    fmt = "\t".join(
        f'{{{{.Label "{name}"}}}}'
        for name in (
            "springfield.project",
            "springfield.loop-id",
            "springfield.ralph-pid",
            "springfield.ralph-start",
        )
    )
    try:
        listed = proc.run(
            ["docker", "ps", "--filter", "label=springfield.project", "--format", fmt],
            cwd=Path("/"),
            env=env,
            check=False,
            timeout=timeout,
        )
    except SgfError:  # a hung engine: no containers this time
        return []
    if listed.returncode != 0:
        return []
    found = []
    for line in listed.stdout.splitlines():
        project, loop_id, pid, start = [*line.split("\t"), "", "", "", ""][:4]
        if project and loop_id:
            number = int(pid) if pid.isdigit() else None
            found.append(
                LabelledLoop(project, loop_id, number, int(start) if start.isdigit() else None)
            )
    return found
