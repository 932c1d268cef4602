"""The pinned Claude Code binary for the sandbox image, from npm, cached between builds.

npm ships Claude Code as a native binary in a per-platform package
(`@anthropic-ai/claude-code-linux-x64`). We install just that package into
`<cache>/claude-code-<version>` (the same layout scripts/ensure-claude.sh uses, so the caches
are shared) and reuse it when it is there.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Mapping
from pathlib import Path

from sgf import proc
from sgf.errors import ProgramMissing, SgfError

VERSION = "2.1.330"
ARCHES = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64"}
ARCHES["arm64"] = "linux-arm64"


def cache_dir(env: Mapping[str, str]) -> Path:
    """SPRINGFIELD_CACHE, else $XDG_CACHE_HOME/springfield, else ~/.cache/springfield."""
    if env.get("SPRINGFIELD_CACHE"):
        return Path(env["SPRINGFIELD_CACHE"])
    xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")) / ".cache")
    return Path(xdg).expanduser() / "springfield"


def package(machine: str | None = None) -> str:
    """The npm package holding the native binary for this machine."""
    machine = (machine or platform.machine()).lower()
    if machine not in ARCHES:
        raise SgfError(f"no Claude Code build for {machine}; pass --claude-binary")
    return f"@anthropic-ai/claude-code-{ARCHES[machine]}"


def binary(version: str, *, env: Mapping[str, str]) -> Path:
    """Return the cached claude binary of `version`, installing it with npm when missing."""
    dir_ = cache_dir(env) / f"claude-code-{version}"
    pkg = package()
    path = dir_ / "node_modules" / pkg / "claude"
    if path.is_file() and os.access(path, os.X_OK):
        return path
    if proc.which("npm", env) is None:
        raise ProgramMissing("npm", "needed once to fetch Claude Code; or pass --claude-binary")
    tmp = dir_.with_name(dir_.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # --ignore-scripts: the binary is the package's payload; the postinstall only relinks it.
    proc.run(
        [
            "npm",
            "install",
            "--prefix",
            str(tmp),
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
            f"{pkg}@{version}",
        ],
        cwd=tmp,
        env=env,
        timeout=1800,
    )
    if not (tmp / "node_modules" / pkg / "claude").is_file():
        raise SgfError(f"npm installed {pkg}@{version} but no claude binary came with it")
    if dir_.exists():  # a partial or older layout: keep it out of the way, do not merge
        shutil.rmtree(dir_)
    os.replace(tmp, dir_)
    return path
