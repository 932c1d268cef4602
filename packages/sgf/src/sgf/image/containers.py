"""The loops' running containers as Docker lists them: how `sgf top --all` finds projects
whose loops run without sgf's loop index (a bare `ralph`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sgf.image import engine


@dataclass(frozen=True, slots=True)
class LabelledLoop:
    """A running container of a loop, as its labels tell (`sgf top --all` finds projects so)."""

    project: str
    loop_id: str
    ralph_pid: int | None
    ralph_start: int | None


def labelled_loops(env: Mapping[str, str], *, timeout: float = 5) -> list[LabelledLoop]:
    """This machine's running containers labelled `springfield.project`; none without Docker
    (or when the engine does not answer within `timeout` seconds)."""
    found = []
    for container in engine.containers(env, "springfield.project", timeout=timeout):
        project = container.labels.get("springfield.project", "")
        loop_id = container.labels.get("springfield.loop-id", "")
        pid = container.labels.get("springfield.ralph-pid", "")
        start = container.labels.get("springfield.ralph-start", "")
        if project and loop_id:
            found.append(
                LabelledLoop(
                    project,
                    loop_id,
                    int(pid) if pid.isdigit() else None,
                    int(start) if start.isdigit() else None,
                )
            )
    return found
