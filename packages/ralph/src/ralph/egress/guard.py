"""One run's guard: the key proxy on the host and, by default, the allow-list sidecar.

`Guard.plan` is called before the agent's configuration is written (it decides the URLs and
placeholders the agent sees, so it binds the key proxy's socket at once); `start` brings the
sidecar up once the Docker engine is known to answer; `close` takes everything down. A
sandbox takes from it what its agent containers are created with (`network`, `agent_env`,
`cap_drop`, `dns_options`) and, for the run record, `refusals()`.

Modes, from ralph's `--network`:
- unset: the allow-list. The agent's container is on the run's internal network; model
  requests go to the key proxy through the sidecar, everything else through squid.
- `open` (Docker's default network) or any other network NAME: the old network, open; the key
  proxy listens on that network's gateway address on the host (`host`: on 127.0.0.1), so keys
  still stay on the host.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.egress import policy, sidecar
from ralph.egress.policy import Allowed
from ralph.egress.refusals import Refusal
from ralph.errors import SandboxFailed
from ralph.keyproxy import routes
from ralph.keyproxy.login import TOKEN_URL, ClaudeLogin
from ralph.keyproxy.server import KeyProxy

if TYPE_CHECKING:
    from docker import DockerClient

OPEN = "open"  # --network open: Docker's default network, as before the allow-list
_PROXY = f"http://{sidecar.ALIAS}:{policy.PROXY_PORT}"
_NO_PROXY = f"{sidecar.ALIAS},localhost,127.0.0.1"


def proxy_env() -> dict[str, str]:
    """The variables that send the agent's tools (pip, npm, cargo, go, git, curl) to squid."""
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        env[name] = env[name.lower()] = _PROXY
    env["NO_PROXY"] = env["no_proxy"] = _NO_PROXY
    return env


# What the proxy would refuse anyway is not asked for, so the refusals are the agent's own:
# Claude Code's telemetry, error reports, feature flags and OAuth account look-ups go straight
# to api.anthropic.com, not through ANTHROPIC_BASE_URL.
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def extra_hosts(text: str) -> dict[str, str]:
    """`name:address,...` (RALPH_EGRESS_HOSTS, for tests: a stand-in registry's address)."""
    pairs = (item.partition(":") for item in text.split(",") if item.strip())
    return {name.strip(): address.strip() for name, _, address in pairs}


# A Unix socket's path holds at most 107 bytes; the key proxy's sits two levels under its
# folder, so a long TMPDIR (a test's, a CI runner's) falls back to /tmp.
SOCKET_PATH_MAX = 107


def socket_parent() -> str:
    """Where the key proxy's folder is made: the temporary folder, unless its socket's path
    would be too long for the system there."""
    tmp = tempfile.gettempdir()
    longest = len(os.fsencode(tmp)) + len("/ralph-egress-XXXXXXXX/socket/") + len(sidecar.SOCKET)
    return tmp if longest <= SOCKET_PATH_MAX else "/tmp"  # noqa: S108 (mkdtemp: a 0700 folder)


@dataclass
class Guard:
    """Keys on the host, and the agent's way out, for one run; see the module's docstring."""

    network: str | None  # the agent container's network (None: Docker's default)
    agent_env: dict[str, str]
    allow_list: bool  # the run's own network and the sidecar; else an open network
    allow: tuple[Allowed, ...]
    proxy: KeyProxy
    folder: Path  # private: the key proxy's socket, squid's config
    hosts: dict[str, str] = field(default_factory=dict)
    _sidecar: sidecar.Sidecar | None = None

    @classmethod
    def plan(
        cls,
        *,
        network: str | None,
        env: Mapping[str, str],
        allow: Iterable[Allowed] = (),
        gateway: Callable[[str], str] | None = None,
    ) -> Guard:
        """Bind the key proxy and decide what the agent sees. `gateway(network)` is the host's
        address on a Docker network (needed only for an open network other than `host`)."""
        engine = env.get("DOCKER_HOST", "")
        if network is None and engine and not engine.startswith("unix://"):
            raise SandboxFailed(
                f"the allow-list network needs a Docker engine on this machine (DOCKER_HOST is "
                f"{engine}): its proxy reaches ralph's key proxy through a socket here; "
                "run with --network open"
            )
        login = ClaudeLogin(
            routes.host_login(env), token_url=env.get("RALPH_CLAUDE_TOKEN_URL") or TOKEN_URL
        )
        planned = routes.plan(env, login=login)
        folder = Path(tempfile.mkdtemp(prefix="ralph-egress-", dir=socket_parent()))
        try:
            if network is None:
                (folder / "socket").mkdir(mode=0o700)
                proxy = KeyProxy(planned, listen=folder / "socket" / sidecar.SOCKET)
                url = f"http://{sidecar.ALIAS}:{policy.KEYPROXY_PORT}"
                agent_env = {**routes.agent_env(planned, url), **proxy_env(), **QUIET}
                name: str | None = f"ralph-egress-{folder.name.removeprefix('ralph-egress-')}"
            else:
                name = None if network == OPEN else network
                shares_host = name in ("host", "none") or (name or "").startswith("container:")
                # on `host` the agent shares the host's loopback; elsewhere it reaches the
                # host at its network's gateway address
                address = "127.0.0.1"
                if not shares_host and gateway is not None:
                    address = gateway(name or "bridge")
                proxy = KeyProxy(planned, listen=(address, 0))
                agent_env = routes.agent_env(planned, proxy.url)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        hosts = extra_hosts(env.get("RALPH_EGRESS_HOSTS", ""))
        return cls(name, agent_env, network is None, policy.normalise(allow), proxy, folder, hosts)

    @property
    def dns_options(self) -> list[str]:
        """The agent's resolver options: on the run's network only the sidecar's name
        resolves, and any other name fails after Docker's DNS gives up forwarding it, which
        glibc's defaults stretch to twenty seconds; one try of one second makes it two."""
        return ["timeout:1", "attempts:1"] if self.allow_list else []

    @property
    def cap_drop(self) -> list[str]:
        """Capabilities the agent's container goes without: on the run's network, raw
        sockets (crafted frames to the host's own addresses) are not the agent's to have."""
        return ["NET_RAW"] if self.allow_list else []

    def start(
        self,
        client: DockerClient,
        *,
        bases: tuple[str, ...],
        project: Path,
        note: Callable[[str], None],
    ) -> list[str]:
        """Serve the key proxy; in allow-list mode start the sidecar (building its image from
        the first of `bases` the engine has, once). Returns the leftovers it removed."""
        self.proxy.start()
        if not self.allow_list:
            return []
        removed = sidecar.remove_leftovers(client, project)
        config = self.folder / "config"
        config.mkdir(mode=0o700, exist_ok=True)
        (config / "squid.conf").write_text(policy.squid_conf(self.allow))
        assert self.network is not None
        self._sidecar = sidecar.Sidecar(
            client,
            image=sidecar.image(client, bases, note=note),
            project=project,
            config_dir=config,
            socket_dir=self.folder / "socket",
            name=self.network,
            extra_hosts=self.hosts,
        )
        self._sidecar.start()
        return removed

    def refusals(self) -> list[Refusal]:
        """The requests the egress proxy refused so far ([] on an open network)."""
        return self._sidecar.refusals() if self._sidecar is not None else []

    def describe(self) -> str:
        """One line for the start of a loop: what the agent can reach, where its keys are."""
        if self.allow_list:
            hosts = ", ".join(map(str, self.allow)) or "nothing else"
            return (
                "network: allow-list (the model through ralph's key proxy; "
                f"{hosts}); keys stay on the host"
            )
        where = self.network or "Docker's default network"
        return (
            f"network: open ({where}): the agent can reach whatever the container can; "
            "keys stay on the host"
        )

    def close(self) -> None:
        """Stop the sidecar, the key proxy, and remove the private folder (idempotent)."""
        sidecar_, self._sidecar = self._sidecar, None
        try:
            if sidecar_ is not None:
                sidecar_.close()
        finally:
            self.proxy.close()
            with contextlib.suppress(OSError):
                shutil.rmtree(self.folder)
