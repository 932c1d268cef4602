"""The mount probe: a remote Docker engine must see ralph's folders at their own paths.

Bind mounts name paths on the engine's machine; docker.py runs this before the first
container when the engine may be another machine (DOCKER_HOST, RALPH_PROBE_MOUNTS=1).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from ralph import safefile
from ralph.errors import SandboxFailed
from ralph.sandbox.base import OBJECTS, OUT, PENSA

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from docker import DockerClient
    from docker.types import Mount

    from ralph.models import Config
    from ralph.sandbox.base import Place


class Probed(Protocol):
    """What the probe needs of the sandbox it checks (sandbox.docker.DockerSandbox)."""

    config: Config
    state: Path
    place: Place | None
    env: Mapping[str, str]
    uid: int
    gid: int

    def labels(self) -> dict[str, str]: ...

    def probe_mounts(self) -> list[Mount]: ...


log = logging.getLogger(__name__)


def check(box: Probed, client: DockerClient) -> None:
    """Refuse an engine that does not see the project at its own path.

    Bind mounts name paths on the engine's machine: a remote engine (DOCKER_HOST) without
    the project on shared storage at the same path would mount an empty directory, and
    the agent would work on nothing. A marker written here must read back in there."""
    import secrets

    from docker.errors import DockerException

    token = secrets.token_hex(8)
    # (on the host, in the container)
    markers = [(box.state / "probe", str(box.state / "probe"))]
    objects, found = "", ""
    if box.place is None:  # the folder itself is mounted
        marker = box.config.project / f".ralph-probe-{token}"
        markers.append((marker, str(marker)))
    else:
        markers.append((box.place.workspace.out / "probe", f"{OUT}/probe"))
        if box.place.objects is not None:
            objects, found = f" && test -d {OBJECTS}/pack && printf objects", "objects"
        if box.place.pensa is not None:  # its files are mounted one by one; the database is one
            objects += f" && test -s {PENSA}/db.sqlite && printf pensa"
            found += "pensa"
    seen, failure = b"", ""
    expected = (token * len(markers) + found).encode()
    try:
        for marker, _ in markers:
            safefile.create(marker, token.encode())
        # An engine hiccup is not a verdict: ask again before refusing. That includes a
        # wrong answer with no error: a CI run with the local engine, which sees every
        # path, once got one (likely output the log had not caught before the exit).
        for _ in range(3):
            try:
                seen = client.containers.run(
                    box.config.template,
                    command=[
                        "/bin/sh",
                        "-c",
                        f"cat {' '.join(inside for _, inside in markers)}{objects}",
                    ],
                    entrypoint=[],
                    labels=box.labels(),
                    user=f"{box.uid}:{box.gid}",
                    mounts=box.probe_mounts(),
                    network_mode="none",
                    remove=True,
                    stdout=True,
                    stderr=False,
                )
                if seen == expected:
                    break
                log.warning("mount probe read back %r, not the markers", seen[:80])
            except DockerException as e:
                log.warning("mount probe failed: %s", e)
                failure = f" ({str(e).splitlines()[0][:200]})"
    finally:
        for marker, _ in markers:
            marker.unlink(missing_ok=True)
    if seen != expected:
        host = box.env.get("DOCKER_HOST") or "the configured engine"
        raise SandboxFailed(
            f"the Docker engine at {host} does not see {box.config.project} (its .git and "
            f".pensa), ralph's run directory {box.state.parent} or its workspaces at the same "
            "path: containers would get empty directories. Put them on storage that machine "
            "mounts at the same path (the project, TMPDIR, RALPH_WORKSPACES), or unset "
            f"DOCKER_HOST to use the local engine{failure}"
        )
