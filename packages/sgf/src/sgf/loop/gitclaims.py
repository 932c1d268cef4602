"""`claims = "git"`: loops on many machines, each in its own clone, meeting through git.

Claims travel on the remote's claims ref, never on the code branch (pensa.gitclaims). The host
publishes them: ralph claims each iteration's task with `pn claim-next` before the agent
starts (`RALPH_CLAIM`, the stage's own filters), and the agent's pn answers with that task
and claims nothing itself, so the sandbox needs neither the remote nor credentials for it.
sgf turns this on for the stages that claim with `pn claim-next`, and names each loop's actor
so machines never share one."""

from __future__ import annotations

import hashlib
import shlex
import socket
from pathlib import Path

from sgf import git
from sgf.config import Claims, Config
from sgf.errors import SgfError
from sgf.loop.loops import Launch


def machine(root: Path) -> str:
    """This clone's name among the machines: `git config sgf.machine`, else the host name
    and a hash of the clone's path (two clones on one host are two machines too)."""
    named = git.config_value(root, "sgf.machine")
    if named:
        return named
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:6]
    return f"{socket.gethostname()}-{digest}"


def claim_args(request: Launch) -> tuple[str, ...] | None:
    """The `pn claim-next` filters of the stage's prompt, with its spec; None for a stage
    that does not claim with claim-next."""
    found = request.stage.spec.claims or None
    if found is None:
        return None
    return (*found, "--spec", request.spec) if request.spec else found


def env(root: Path, config: Config, request: Launch, *, loop_id: str) -> dict[str, str]:
    """ralph's environment for `claims = "git"`, refused where it cannot hold.

    Loop ids have one-second resolution and carry no machine: two machines starting a loop
    in the same second would share an actor, and each take the other's published claim for
    its own. So the actor is `<loop-id>@<machine>`."""
    if config.claims is not Claims.GIT:
        return {}
    auto_push = config.auto_push if request.auto_push is None else request.auto_push
    if not auto_push:
        raise SgfError(
            'claims = "git" needs auto_push: closes reach the other machines with the '
            "work's commit; drop --no-push (or set auto_push = true)"
        )
    loop_env = {"PN_ACTOR": f"{loop_id}@{machine(root)}"}
    args = claim_args(request)
    if args is not None:
        loop_env.update(PN_CLAIMS="git", RALPH_CLAIM=shlex.join(args))
    return loop_env
