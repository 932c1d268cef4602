"""The agent CLIs besides claude that a project's config names, for its sandbox image.

codex and opencode ship native binaries in npm platform packages, as Claude Code does: each is
installed once into `<cache>/<name>-<version>` (the layout scripts/ensure-agents.sh uses, so the
caches are shared) and copied into the image, which records the version in a label ralph checks
before it runs that agent (`springfield.agent.<name>`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from sgf import proc
from sgf.claude import cache_dir
from sgf.config import Config
from sgf.errors import ProgramMissing, SgfError

# name -> (version, npm package spec, binary inside the install)
PINNED: dict[str, tuple[str, str, str]] = {
    "codex": (
        "0.169.0",
        "@openai/codex@{version}-linux-x64",
        "node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex",
    ),
    "opencode": (
        "1.18.33",
        "opencode-linux-x64@{version}",
        "node_modules/opencode-linux-x64/bin/opencode",
    ),
}
# gemini-cli is JavaScript for node >= 20: the offline base has no node and Debian bookworm's
# is 18, so the image cannot carry it yet.
_BLOCKED = {"gemini": "gemini-cli needs node >= 20 in the image, which sgf cannot install"}


def label(name: str) -> str:
    return f"springfield.agent.{name}"


def wanted(cfg: Config) -> list[str]:
    """The agents other than claude that the config names, for all stages or one."""
    names = {cfg.agent, *(table.get("agent") for table in (cfg.stages or {}).values())}
    return sorted(n for n in names if n and n != "claude")


def missing(found: Mapping[str, str], names: Iterable[str], image: str) -> list[str]:
    """A warning per configured agent that the image's labels say it lacks."""
    return [
        f"the sandbox image {image} has no {name}, which .sgf/config.toml names; "
        "run `sgf sandbox build`"
        for name in names
        if label(name) not in found
    ]


def stamp(digest: str, versions: Mapping[str, str]) -> str:
    """The content hash of an image that also carries these agents' versions."""
    if not versions:
        return digest
    parts = ";".join(f"{name}={versions[name]}" for name in sorted(versions))
    return hashlib.sha256(f"{digest};{parts}".encode()).hexdigest()[:32]


def installed(found: Mapping[str, str]) -> dict[str, str]:
    """The agents' versions an image's labels record."""
    prefix = label("")
    return {k.removeprefix(prefix): v for k, v in found.items() if k.startswith(prefix)}


def binary(name: str, *, env: Mapping[str, str]) -> tuple[str, Path]:
    """The pinned version of agent `name` and its cached binary, installed by npm when missing."""
    if name in _BLOCKED:
        raise SgfError(f"cannot put {name} in the sandbox image: {_BLOCKED[name]}")
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise SgfError(f"no pinned {name} build for {platform.machine()}")
    version, spec, inside = PINNED[name]
    dir_ = cache_dir(env) / f"{name}-{version}"
    path = dir_ / inside
    if path.is_file() and os.access(path, os.X_OK):
        return version, path
    if proc.which("npm", env) is None:
        raise ProgramMissing("npm", f"needed once to fetch {name}")
    tmp = dir_.with_name(dir_.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # --ignore-scripts: the binary is the platform package's payload
    argv = ["npm", "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--ignore-scripts"]
    proc.run([*argv, "--loglevel=error", spec.format(version=version)], cwd=tmp, env=env)
    if not (tmp / inside).is_file():
        raise SgfError(f"npm installed {spec.format(version=version)} but no {name} came with it")
    if dir_.exists():
        shutil.rmtree(dir_)
    os.replace(tmp, dir_)
    return version, path
