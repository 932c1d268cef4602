"""The run's network and its one way out: a squid sidecar, in Docker.

The agent's container joins a network of the run's own that Docker creates `internal` (no
route out) and with `com.docker.network.bridge.inhibit_ipv4` (the bridge gets no address on
the host: on a plain internal network a container still reaches every port the host listens
on, through the bridge's gateway address). Its only neighbour is the sidecar, also on the
default bridge, running squid (the allow-list, policy.py) and socat, which forwards the
sidecar's port 8081 to the key proxy's unix socket on the host (mounted into the sidecar
only). Both listen only on the sidecar's address on the run's network. The image is built
once, from Debian's packages, on the sandbox image's own base (or the sandbox image).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralph import proc
from ralph.egress import policy
from ralph.egress.refusals import Refusal, lines, refused
from ralph.errors import SandboxFailed
from ralph.shared import pids

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container
    from docker.models.networks import Network

log = logging.getLogger(__name__)

ALIAS = "ralph-egress"  # the sidecar's name on the run's network
IMAGE = "springfield-egress"
ROLE = "springfield.role"  # "egress" on the sidecar and the network
PROJECT = "springfield.egress.project"  # not the agents' label: sgf's views list those
OWNER_PID, OWNER_START = "springfield.egress.ralph-pid", "springfield.egress.ralph-start"
CONFIG_DIR, SOCKET_DIR = "/etc/ralph-egress", "/run/ralph-keyproxy"
SOCKET = "keyproxy.sock"
DOCKERFILE = """FROM {base}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends squid socat \\
 && rm -rf /var/lib/apt/lists/*
LABEL springfield.egress="squid socat"
"""
# Listens only on the run's network (found by the sidecar's own alias there), forwards the key
# proxy's port, then becomes squid.
ENTRYPOINT = f"""set -eu
address=$(getent hosts {ALIAS} | cut -d' ' -f1 | head -n1)
[ -n "$address" ] || {{ echo "ralph-egress: no address on the run's network" >&2; exit 1; }}
sed "s/@ADDRESS@/$address/" {CONFIG_DIR}/squid.conf > /tmp/squid.conf
touch {policy.ACCESS_LOG} && chown proxy:proxy {policy.ACCESS_LOG}
socat TCP-LISTEN:{policy.KEYPROXY_PORT},bind="$address",fork,reuseaddr,nodelay \\
    UNIX-CONNECT:{SOCKET_DIR}/{SOCKET} &
exec squid -N -f /tmp/squid.conf
"""
READY = b"Accepting HTTP Socket connections"
LOG_LIMIT = "8m"  # Docker keeps at most this much of the sidecar's own log
ACCESS_LIMIT = 8 * 1024 * 1024  # the end of squid's access log that is read


def image(client: DockerClient, bases: Sequence[str], *, note: Callable[[str], None]) -> str:
    """The sidecar image, built (once) from the first of `bases` the engine has."""
    from docker.errors import BuildError, DockerException, ImageNotFound

    for base in bases:
        try:
            found = client.images.get(base)
        except ImageNotFound:
            continue
        dockerfile = DOCKERFILE.format(base=base)
        digest = hashlib.sha256(f"{found.id}\n{dockerfile}".encode()).hexdigest()[:12]
        tag = f"{IMAGE}:{digest}"
        try:
            client.images.get(tag)
        except ImageNotFound:
            note(f"building the egress proxy image {tag} from {base} (once; needs Debian's mirror)")
            try:
                client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
            except (BuildError, DockerException) as e:
                raise SandboxFailed(
                    f"cannot build the egress proxy image from {base}: {str(e)[:300]}; "
                    "it installs squid and socat from Debian's mirror once, or run with "
                    "--network open"
                ) from e
        return tag
    raise SandboxFailed(f"no image to build the egress proxy from (tried {', '.join(bases)})")


def gateway(client: DockerClient, network: str) -> str:
    """The host's address on a Docker network: its gateway (the default bridge's inspect may
    name only its subnet, whose first address the engine gives the bridge)."""
    import ipaddress

    from docker.errors import DockerException

    try:
        configs = client.networks.get(network).attrs.get("IPAM", {}).get("Config") or []
    except DockerException as e:
        raise SandboxFailed(f"cannot inspect the docker network {network!r}: {e}") from e
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"])
        if config.get("Subnet") and ":" not in config["Subnet"]:
            return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    raise SandboxFailed(f"the docker network {network!r} has no IPv4 gateway")


def owner() -> dict[str, str]:
    """Labels naming this ralph, so a leftover of a dead one is known as such."""
    pid = os.getpid()
    return {OWNER_PID: str(pid), OWNER_START: str(pids.start_time(pid) or "")}


def orphaned(labels: Mapping[str, str]) -> bool:
    """Whether the ralph named in `labels` is gone (or its PID now belongs to another)."""
    pid, start = labels.get(OWNER_PID, ""), labels.get(OWNER_START, "")
    if not (pid.isdigit() and proc.is_alive(int(pid))):
        return True
    return start.isdigit() and pids.start_time(int(pid)) != int(start)


class Sidecar:
    """The run's internal network and its squid sidecar; `start()`, then `close()`."""

    def __init__(
        self,
        client: DockerClient,
        *,
        image: str,
        project: Path,
        config_dir: Path,
        socket_dir: Path,
        name: str,
        extra_hosts: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.image = image
        self.labels = {ROLE: "egress", PROJECT: str(project), **owner()}
        self.config_dir = config_dir
        self.socket_dir = socket_dir
        self.extra_hosts = dict(extra_hosts or {})
        self.name = name
        self._network: Network | None = None
        self._container: Container | None = None

    def start(self, *, timeout: float = 60.0) -> None:
        """Create the network and the sidecar; return once squid accepts connections."""
        from docker.errors import DockerException
        from docker.types import LogConfig, Mount

        try:
            self._network = self.client.networks.create(
                self.name,
                driver="bridge",
                internal=True,
                options={"com.docker.network.bridge.inhibit_ipv4": "true"},
                labels=self.labels,
            )
            self._container = self.client.containers.create(
                self.image,
                entrypoint=["/bin/sh", "-c", ENTRYPOINT],
                command=[],
                name=self.name,
                labels=self.labels,
                mounts=[
                    Mount(CONFIG_DIR, str(self.config_dir), type="bind", read_only=True),
                    Mount(SOCKET_DIR, str(self.socket_dir), type="bind"),
                ],
                extra_hosts=self.extra_hosts,
                log_config=LogConfig(type="json-file", config={"max-size": LOG_LIMIT}),
                init=True,
                # what squid and socat need: squid drops to its own user, socat opens the
                # user's socket; nothing more for an agent that might break squid
                cap_drop=["ALL"],
                cap_add=["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE"],
                security_opt=["no-new-privileges"],
            )
            self._network.connect(self._container, aliases=[ALIAS])
            self._container.start()
        except DockerException as e:
            self.close()
            raise SandboxFailed(f"cannot start the egress proxy: {str(e)[:300]}") from e
        self._wait(timeout)

    @property
    def network(self) -> str:
        return self.name

    def _wait(self, timeout: float) -> None:
        """Read squid's log as it comes until it listens, the sidecar exits or time is up."""
        assert self._container is not None
        done = threading.Event()
        seen = bytearray()
        stream = self._container.logs(stream=True, follow=True, stdout=False, stderr=True)

        def watch() -> None:
            with contextlib.suppress(Exception):  # the stream ends with the container
                for chunk in stream:
                    seen.extend(chunk)
                    del seen[:-4096]
                    if READY in seen:
                        break
            done.set()

        threading.Thread(target=watch, name="egress-ready", daemon=True).start()
        done.wait(timeout)
        with contextlib.suppress(Exception):
            stream.close()
        if READY not in seen:
            tail = bytes(seen[-600:]).decode(errors="replace").strip()
            self.close()
            raise SandboxFailed(f"the egress proxy did not start: {tail or 'no output'}")

    def refusals(self) -> list[Refusal]:
        """What squid refused so far, from the end of its access log (squid writes each line
        as its request ends, so a refusal the agent just met is there)."""
        from docker.errors import DockerException

        if self._container is None:
            return []
        try:
            done = self._container.exec_run(
                ["tail", "-c", str(ACCESS_LIMIT), policy.ACCESS_LOG], stdout=True, stderr=False
            )
        except DockerException as e:
            log.warning("cannot read the egress proxy's log: %s", e)
            return []
        output = done.output if isinstance(done.output, bytes) else b""
        return refused(lines([output]))

    def close(self) -> None:
        """Remove the sidecar, then the network (idempotent); a failure is logged, not raised."""
        from docker.errors import DockerException, NotFound

        container, self._container = self._container, None
        network, self._network = self._network, None
        if container is not None:
            with contextlib.suppress(NotFound):
                try:
                    container.remove(force=True)
                except DockerException as e:
                    log.warning("cannot remove the egress proxy %s: %s", self.name, e)
        if network is not None:
            with contextlib.suppress(NotFound):
                try:
                    network.remove()
                except DockerException as e:
                    log.warning("cannot remove the network %s: %s", self.name, e)


def remove_leftovers(client: DockerClient, project: Path) -> list[str]:
    """Remove the sidecars and networks a dead ralph left for `project`."""
    from docker.errors import DockerException

    removed = []
    where: dict[str, str | list[str] | bool] = {"label": [f"{ROLE}=egress", f"{PROJECT}={project}"]}
    for container in client.containers.list(all=True, filters=where):
        if orphaned(container.labels):
            with contextlib.suppress(DockerException):
                container.remove(force=True)
                removed.append(f"egress proxy {container.name}")
    for network in client.networks.list(filters=where):
        if orphaned(network.attrs.get("Labels") or {}):
            with contextlib.suppress(DockerException):
                network.remove()
                removed.append(f"network {network.name}")
    return removed
