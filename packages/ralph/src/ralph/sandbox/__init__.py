"""Where the agent runs: a Docker container per iteration (`docker.py`, the security
boundary) or the host itself (`host.py`, `--sandbox none`), behind one Protocol (`base.py`).

In Docker no credential enters the container (egress/guard.py plans placeholders, the key
proxy and the network before the backend writes its configuration); each backend's
configuration files go into the run's HOME (agents/). The workspace steps script is written
into the run's directory here, once, before any agent runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from ralph.models import Config, SandboxKind
from ralph.sandbox.base import SCRIPT, Place, Running, Sandbox, Share

__all__ = ["Place", "Running", "Sandbox", "Share", "make"]


def write_script(state: Path) -> Path:
    """The workspace steps (inside/workspace.sh) in the run's `bin/`, for the sandbox."""
    folder = state / "bin"
    folder.mkdir(exist_ok=True)
    path = folder / SCRIPT
    path.write_text(
        resources.files("ralph.inside").joinpath(SCRIPT).read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def make(config: Config, *, env: Mapping[str, str], state: Path, place: Place | None) -> Sandbox:
    """The sandbox `config.sandbox` asks for, with the backend's files in the run's HOME."""
    from ralph.egress.guard import Guard
    from ralph.sandbox.docker import DockerSandbox
    from ralph.sandbox.host import HostSandbox

    home = state / "home"
    home.mkdir(parents=True, exist_ok=True)
    write_script(state)
    if config.sandbox is SandboxKind.NONE:
        agent_vars = config.backend(env).setup(home, env, config.hooks)  # hooks: no managed file
        return HostSandbox(config, env, state, place=place, agent_vars=agent_vars)
    box = DockerSandbox(config, env, state, place=place)
    # the guard binds the key proxy now: the agent's files name its URLs and placeholders
    allow = list(config.allowed())  # git claims are the host's: the agent needs no remote
    box.guard = Guard.plan(network=config.network, env=env, allow=allow, gateway=box.gateway)
    try:
        box.agent_vars = config.backend(env).setup(home, {**env, **box.guard.agent_env})
    except BaseException:
        box.guard.close()
        raise
    return box
