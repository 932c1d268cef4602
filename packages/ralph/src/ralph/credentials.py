"""Credentials for the container: secrets reach the agent through a file, never container env.

`docker inspect` prints a container's environment to anyone who can reach the Docker engine,
so tokens are not container env. They go into a 0600 file in ralph's per-run directory,
bind-mounted read-only, and a POSIX sh wrapper sources it and `exec`s the agent: the agent
keeps sh's pid, so its exit status and the signals sent to the container are unchanged.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

SECRET_VARS = (
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",  # codex and opencode (agents/)
    "GEMINI_API_KEY",
)
PLAIN_VARS = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_MODEL",
)
# Passed through from the host when set; they never appear in labels or ralph's output.
CREDENTIAL_VARS = SECRET_VARS + PLAIN_VARS
# `sh -c SCRIPT FILE AGENT...`: "$0" is the secrets file, "$@" the agent's argv
_SOURCE_THEN_EXEC = '. "$0" && exec "$@"'
_PREFIX, _SUFFIX = "credentials-", ".sh"


def secrets(host: Mapping[str, str]) -> dict[str, str]:
    """The secret credentials set (non-empty) in `host`."""
    return {name: host[name] for name in SECRET_VARS if host.get(name)}


def plain(host: Mapping[str, str]) -> dict[str, str]:
    """The non-secret credential settings set in `host`: fine as container env."""
    return {name: host[name] for name in PLAIN_VARS if host.get(name)}


def write(directory: Path, values: Mapping[str, str], *, uid: int, gid: int) -> Path:
    """Write `values` as `export NAME='value'` lines to a new 0600 file owned by uid:gid."""
    fd, name = tempfile.mkstemp(prefix=_PREFIX, suffix=_SUFFIX, dir=directory)
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if (uid, gid) != (os.getuid(), os.getgid()):
                os.fchown(f.fileno(), uid, gid)  # root running another uid: it must read it
            f.writelines(f"export {key}={shlex.quote(value)}\n" for key, value in values.items())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def wrap(argv: Sequence[str], path: Path) -> list[str]:
    """`argv` run by a POSIX sh that first sources the secrets file at `path`."""
    return ["/bin/sh", "-c", _SOURCE_THEN_EXEC, str(path), *argv]


def mounted(mounts: Iterable[Mapping[str, object]]) -> list[Path]:
    """The secrets files among a container's mounts, as `docker inspect` lists them."""
    return [
        Path(str(m["Source"]))
        for m in mounts
        if m.get("Type") == "bind"
        and m.get("RW") is False
        and m.get("Source") == m.get("Destination")
        and Path(str(m["Source"])).name.startswith(_PREFIX)
        and str(m["Source"]).endswith(_SUFFIX)
    ]
