"""`claims = "git"`: loops on many machines, each in its own clone, meeting through git (issue
14). pn publishes every claim before the agent works on it (pensa.gitclaims); sgf turns it
on for ralph and its agents, and names each loop's actor so machines never share one."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

from sgf import git
from sgf.config import Claims, Config
from sgf.errors import SgfError
from sgf.loops import Launch


def machine(root: Path) -> str:
    """This clone's name among the machines: `git config sgf.machine`, else the host name
    and a hash of the clone's path (two clones on one host are two machines too)."""
    named = git.config_value(root, "sgf.machine")
    if named:
        return named
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:6]
    return f"{socket.gethostname()}-{digest}"


def env(
    root: Path, config: Config, request: Launch, *, loop_id: str, isolated: bool
) -> dict[str, str]:
    """ralph's environment for `claims = "git"`, refused where it cannot hold.

    Loop ids have one-second resolution and carry no machine: two machines starting a loop
    in the same second would share an actor, and each take the other's published claim for
    its own. So the actor is `<loop-id>@<machine>`."""
    if config.claims is not Claims.GIT:
        return {}
    if isolated:
        raise SgfError(
            'claims = "git" publishes each clone\'s claims: run one loop per clone in its '
            "shared tree, not in worktrees (--worktree, --parallel, isolation)"
        )
    auto_push = config.auto_push if request.auto_push is None else request.auto_push
    if not auto_push:
        raise SgfError(
            'claims = "git" needs auto_push: closes reach the other machines with the '
            "work's commit; drop --no-push (or set auto_push = true)"
        )
    return {"PN_CLAIMS": "git", "PN_ACTOR": f"{loop_id}@{machine(root)}"}
