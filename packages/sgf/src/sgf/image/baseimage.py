"""The image the sandbox is built FROM: found, pulled, or made on this machine.

debian:bookworm-slim comes from Docker Hub. A machine that cannot reach a registry makes an
equivalent itself, the way Debian's own images are made: debootstrap writes a minimal bookworm
from Debian's mirror (which such machines often still reach) into a folder, with python3,
python3-venv, git and ca-certificates (pn and pre-commit need them, so the sandbox build has
nothing to fetch for them), and `docker import` turns it into `springfield-base:bookworm`. The
root file system is kept as a tarball in sgf's cache, so making the image again (after a
`docker rmi`, for a second project) is an import of seconds. debootstrap needs root.

Images named `springfield-base:*` are the ones sgf makes: a project whose remembered base is
one of them and gone gets it made again, never pulled.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from sgf import proc
from sgf.errors import ImageUnavailable
from sgf.image import engine
from sgf.image.buildprogress import Lines, Progress

DEFAULT = "debian:bookworm-slim"
MADE_REPOSITORY = "springfield-base"
MADE = f"{MADE_REPOSITORY}:bookworm"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
INCLUDE = ("python3", "python3-venv", "git", "ca-certificates")
TARBALL = "bookworm-minbase.tar"  # the name scripts/ensure-base-image.sh used: its cache holds
DEBOOTSTRAP_LOG = "debootstrap.log"


def made_here(image: str) -> bool:
    """Tell whether `image` is one sgf makes (`springfield-base:TAG`), not one it pulls."""
    return image.rsplit(":", 1)[0] == MADE_REPOSITORY and ":" in image


def tarball(cache: Path) -> Path:
    """Where the root file system debootstrap made is kept."""
    return cache / TARBALL


def cannot_make(env: Mapping[str, str], cache: Path, *, euid: int | None = None) -> str | None:
    """Why this machine cannot make a base image now (None: it can). A cached tarball needs
    only the engine; without one, debootstrap must be installed and run as root."""
    if tarball(cache).is_file():
        return None
    if proc.which("debootstrap", env) is None:
        return "debootstrap is not installed (`apt-get install debootstrap`)"
    if (os.geteuid() if euid is None else euid) != 0:
        return 'debootstrap needs root: run `sudo "$(command -v sgf)" sandbox base` once'
    return None


def how_to_get(image: str, env: Mapping[str, str], cache: Path) -> tuple[str, bool]:
    """What `sgf sandbox build` does about a missing base `image` (doctor's fix), and whether
    it can do it without help. (A pull cannot be known to work short of pulling.)"""
    why = cannot_make(env, cache)
    if made_here(image):
        if why is None:
            return "`sgf sandbox build` makes it again (Debian's mirror, debootstrap, cached)", True
        return f"`sgf sandbox build` would make it again, but {why}", False
    if image == DEFAULT:
        how = f"`sgf sandbox build` pulls it, or makes {MADE} instead when no registry answers"
        return (how, True) if why is None else (f"{how}, but for that {why}", False)
    how = f"`sgf sandbox build` pulls it; without a registry, `sgf sandbox base` makes {MADE}"
    return how, False


def make(
    image: str, *, env: Mapping[str, str], cache: Path, out: Progress, mirror: str = MIRROR
) -> None:
    """Make the base image `image` from the cached root file system, debootstrapping it
    from `mirror` first when there is none."""
    if not tarball(cache).is_file():
        if why := cannot_make(env, cache):
            raise ImageUnavailable(image, f"sgf cannot make it here: {why}")
        _debootstrap(image, env=env, cache=cache, out=out, mirror=mirror)
    out.phase(f"importing the Debian root file system as {image}", key="base-import")
    engine.import_tarball(env, tarball(cache), image)


def _debootstrap(
    image: str, *, env: Mapping[str, str], cache: Path, out: Progress, mirror: str
) -> None:
    """debootstrap a minimal bookworm into a scratch folder, then keep it as the tarball."""
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rootfs.", dir=cache))
    log = cache / DEBOOTSTRAP_LOG
    try:
        out.phase(f"debootstrap: a minimal Debian {SUITE} from {mirror}", key="base-debootstrap")
        argv = [
            proc.which("debootstrap", env) or "debootstrap",
            "--variant=minbase",
            f"--include={','.join(INCLUDE)}",
            SUITE,
            str(work / "rootfs"),
            mirror,
        ]
        with log.open("wb") as kept:
            code = proc.run_teed(argv, cwd=cache, env=env, sinks=[kept, Lines(out)])
        if code != 0:
            raise ImageUnavailable(
                image, f"debootstrap failed with exit code {code}; its output is in {log}"
            )
        out.phase("packing the root file system into sgf's cache", key="base-pack")
        partial = work / TARBALL  # beside the rootfs: renamed into place only when whole
        proc.run(["tar", "-C", str(work / "rootfs"), "-cf", str(partial), "."], cwd=cache, env=env,
                 timeout=1800)  # fmt: skip
        os.replace(partial, tarball(cache))
    finally:
        shutil.rmtree(work, ignore_errors=True)  # root's files: the folder is ours to remove


def ensure(
    wanted: str, *, fallback: str | None, env: Mapping[str, str], cache: Path, out: Progress
) -> str:
    """Return a base image the engine has: `wanted` when it is here, made (one of sgf's) or
    pulled; else `fallback`, found or made, when one is given (the default base, which no
    registry may answer for). Without a fallback, ImageUnavailable says how to make one."""
    if engine.exists(env, wanted):
        return wanted
    if made_here(wanted):
        make(wanted, env=env, cache=cache, out=out)
        return wanted
    out.phase(f"pulling {wanted}", key=None)
    try:
        for line in engine.pull(env, wanted):
            out.line(line)
    except ImageUnavailable as e:
        if fallback is None:
            raise ImageUnavailable(
                wanted,
                f"{e.why}; without a registry, `sgf sandbox base` makes {MADE} from Debian's "
                f"mirror, then build with `--base {MADE}`",
            ) from e
        out.abandon(f"{wanted} cannot be pulled ({e.why}); building from {fallback} instead")
        if not engine.exists(env, fallback):
            make(fallback, env=env, cache=cache, out=out)
        return fallback
    return wanted


def choose(explicit: str | None, remembered: str | None) -> tuple[str, str | None]:
    """The base to build from (`--base`, else the project's, else the default), and what
    stands in for it when it cannot be pulled: only the default has a stand-in (one named
    base is never swapped for another)."""
    if explicit or remembered:
        return str(explicit or remembered), None
    return DEFAULT, MADE


def remember(root: Path, used: str) -> bool:
    """Record `used` as the project's base (the default as no key); tell whether it changed."""
    from sgf import config

    return config.remember_base(root, None if used == DEFAULT else used)
