"""`sgf sandbox build`: the sandbox template image ralph runs agents in.

Everything is assembled on the host into the build context (registries and PyPI may be out of
reach from inside a build): the pinned claude binary, a wheel of pensa built from the local
source (so `pn` inside matches the host) and wheels of its dependencies and of pre-commit,
matched to the base image's Python. The stack's toolchain (the Debian packages named in
templates/stacks/<stack>/sandbox.toml) is the one thing fetched inside the build, from Debian's
mirror. The image carries a label with a hash of all inputs, so a build with unchanged inputs is
skipped and `sgf build` can say when the image is stale.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from ralph.shared import backends, pids

from sgf import proc, resources, stacks
from sgf.errors import SgfError
from sgf.image import baseimage, engine, installed
from sgf.stacks import Stack

if TYPE_CHECKING:
    from sgf.image.buildprogress import Progress

DEFAULT_BASE = baseimage.DEFAULT
HASH_LABEL = "springfield.content-hash"
BASE_LABEL = "springfield.base"
CLAUDE_LABEL = "springfield.claude-version"
STACK_LABEL = "springfield.stack"
PN_LABEL = "springfield.pn-version"
EXTRA_REQUIREMENTS = ("pre-commit",)


def pensa_source(explicit: Path | None = None) -> Path:
    """Find pensa's source: `explicit`, else where the installed pensa was installed from.

    A workspace checkout installs pensa editable (direct_url.json points at the source). A
    wheel-installed pensa has no source left, so its installed files are written back as one
    (sgf.image.installed) under the temporary directory: no clone needed.
    """
    if explicit is not None:
        if not (explicit / "pyproject.toml").is_file():
            raise SgfError(f"--pensa-source {explicit} has no pyproject.toml")
        return explicit
    try:
        direct = metadata.distribution("pensa").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    if direct:
        url = urlparse(json.loads(direct).get("url", ""))
        path = Path(unquote(url.path))
        if url.scheme == "file" and (path / "pyproject.toml").is_file():
            return path
    try:
        dist = metadata.distribution("pensa")
    except metadata.PackageNotFoundError:
        raise SgfError(
            "cannot find pensa to build pn for the image: install it next to sgf, or pass "
            "--pensa-source DIR (a checkout of packages/pensa)"
        ) from None
    scratch = Path(tempfile.gettempdir()) / f"springfield-pensa-{dist.version}-{os.getuid()}"
    return installed.materialise(scratch)


def source_version(src: Path) -> str:
    """The `pn --version` the image will print: pyproject's version, else `__version__`.

    The workspace's pyproject reads its version from `__version__` (one source); a tree
    written back from an installed pensa (sgf.image.installed) states it in pyproject.
    """
    import re
    import tomllib

    with (src / "pyproject.toml").open("rb") as f:
        stated = tomllib.load(f)["project"].get("version")
    if stated:
        return str(stated)
    init = (src / "src" / "pensa" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', init, re.MULTILINE)
    return found.group(1) if found else ""


def host_pn_version() -> str | None:
    """The installed pensa's version, or None when pensa is not installed next to sgf."""
    try:
        return metadata.version("pensa")
    except metadata.PackageNotFoundError:
        return None


def version_mismatch(found: Mapping[str, str], image: str) -> list[str]:
    """Warn when the image's pn differs from the host's (the JSONL both write must agree)."""
    inside, host = found.get(PN_LABEL), host_pn_version()
    if not inside or not host or inside == host:
        return []
    return [
        f"the sandbox image {image} has pn {inside} but this machine has pn {host}; "
        "run `sgf sandbox build`"
    ]


def source_digest(src: Path) -> str:
    """Hash pensa's pyproject and source files (names and contents, in a stable order)."""
    digest = hashlib.sha256()
    files = [src / "pyproject.toml", *sorted((src / "src").rglob("*"))]
    for path in files:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(src)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def content_hash(
    *, base: str, claude_version: str, pensa_src: Path, packages: Sequence[str] = ()
) -> str:
    """The image's identity: Dockerfile, base, claude version, pensa source, extra tools and
    the stack's Debian packages."""
    digest = hashlib.sha256()
    for part in (
        resources.read_bytes("sandbox", "Dockerfile"),
        resources.read_bytes("sandbox", "run-silent"),
        base.encode(),
        claude_version.encode(),
        source_digest(pensa_src).encode(),
        " ".join(EXTRA_REQUIREMENTS).encode(),
        " ".join(packages).encode(),
    ):
        digest.update(part + b"\0")
    return digest.hexdigest()[:32]


def labels(root: Path, image: str, env: Mapping[str, str]) -> dict[str, str] | None:
    """Return an image's labels, or None when the image does not exist."""
    return engine.labels(env, image)


def staleness(root: Path, image: str, *, env: Mapping[str, str]) -> list[str]:
    """Warn when `image` was built by sgf from inputs that have changed since."""
    found = labels(root, image, env)
    if not found or HASH_LABEL not in found:
        return []  # missing (preflight says so) or not built by sgf: nothing to compare
    if mismatch := version_mismatch(found, image):
        return mismatch
    try:
        src = pensa_source()
    except SgfError:
        return []
    stack = stacks.STACKS.get(found.get(STACK_LABEL, ""))
    expected = content_hash(
        base=found.get(BASE_LABEL, DEFAULT_BASE),
        claude_version=found.get(CLAUDE_LABEL, ""),
        pensa_src=src,
        packages=stack.packages if stack else (),
    )
    from sgf import agents

    expected = agents.stamp(expected, agents.installed(found))
    if found[HASH_LABEL] == expected:
        return []
    return [f"the sandbox image {image} is stale (its inputs changed); run `sgf sandbox build`"]


@dataclass(frozen=True, slots=True)
class Built:
    """The outcome of `sgf sandbox build`."""

    image: str
    content_hash: str
    skipped: bool  # an up-to-date image already existed


def _python_tag(base: str, env: Mapping[str, str]) -> str:
    """Ask the base image for its Python version ("311"); the host's when it has none."""
    probe = ["python3", "-c", "import sys; print('%d%d' % sys.version_info[:2])"]
    tag = (engine.output_of(env, base, probe) or "").strip()
    return tag if tag.isdigit() else "{}{}".format(*sys.version_info[:2])


def _platforms() -> list[str]:
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower())
    arch = arch or platform.machine().lower()
    tags = [f"manylinux_2_{minor}_{arch}" for minor in (36, 34, 31, 28, 24, 17, 12, 5)]
    return [*tags, f"manylinux2014_{arch}", f"manylinux1_{arch}", f"linux_{arch}"]


def wheels(root: Path, dest: Path, *, pensa_src: Path, python: str, env: Mapping[str, str]) -> None:
    """Build pensa's wheel and download its dependencies and pre-commit for `python`."""
    if importlib.util.find_spec("pip") is None:
        raise SgfError(
            f"pip is missing from sgf's environment ({sys.executable}); it builds the image's "
            "wheels. Install it there (python -m ensurepip) and run again"
        )
    pip = [sys.executable, "-m", "pip"]
    proc.run(
        [*pip, "wheel", "--quiet", "--no-deps", "-w", str(dest), str(pensa_src)],
        cwd=root,
        env=env,
        timeout=900,
    )
    built = sorted(dest.glob("pensa-*.whl"))
    if not built:
        raise SgfError(f"pip built no pensa wheel from {pensa_src}")
    argv = [
        *pip,
        "download",
        "--quiet",
        "-d",
        str(dest),
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "cp",
    ]
    for tag in _platforms():
        argv += ["--platform", tag]
    proc.run([*argv, str(built[-1]), *EXTRA_REQUIREMENTS], cwd=root, env=env, timeout=900)


def build(
    root: Path,
    *,
    image: str,
    stack: Stack,
    base: str,
    claude_bin: Path,
    claude_version: str,
    pensa_src: Path,
    force: bool,
    env: Mapping[str, str],
    out: Progress,
    extra_agents: Mapping[str, tuple[str, Path]] | None = None,  # name -> (version, binary)
) -> Built:
    """Build `stack`'s sandbox image FROM `base` (which the engine must have) unless one with
    the same content hash exists (or `force`), its progress reported to `out`."""
    from sgf import agents

    extra_agents = extra_agents or {}
    digest = content_hash(
        base=base, claude_version=claude_version, pensa_src=pensa_src, packages=stack.packages
    )
    digest = agents.stamp(digest, {name: v for name, (v, _) in extra_agents.items()})
    existing = labels(root, image, env)
    if not force and existing is not None and existing.get(HASH_LABEL) == digest:
        return Built(image, digest, skipped=True)
    with tempfile.TemporaryDirectory(prefix="sgf-sandbox-") as tmp:
        ctx = Path(tmp)
        out.phase("gathering claude, pn's wheels and the agents into the build context")
        (ctx / "Dockerfile").write_bytes(resources.read_bytes("sandbox", "Dockerfile"))
        (ctx / "run-silent").write_bytes(resources.read_bytes("sandbox", "run-silent"))
        _place(claude_bin, ctx / "claude")
        (ctx / "agents").mkdir()
        for name, (_, path) in extra_agents.items():
            if path.is_dir():
                agents.place_install(name, path, ctx / "agents" / name)
            else:
                _place(path, ctx / "agents" / name)
        (ctx / "wheels").mkdir()
        python = _python_tag(base, env)
        wheels(root, ctx / "wheels", pensa_src=pensa_src, python=python, env=env)
        found = image_labels(stack=stack, base=base, claude_version=claude_version, digest=digest)
        found[PN_LABEL] = source_version(pensa_src)
        for name, (version, _) in extra_agents.items():
            found[backends.label(name)] = version
        out.phase(f"building {image}", key=f"build {stack.name}")
        args = build_args(stack, base)
        for line in engine.build(env, ctx, tag=image, buildargs=args, labels=found):
            out.line(line)
    return Built(image, digest, skipped=False)


def build_args(stack: Stack, base: str) -> dict[str, str]:
    """The Dockerfile's arguments: the base image and the stack's Debian packages."""
    return {"BASE": base, "PACKAGES": " ".join(stack.packages)}


def image_labels(*, stack: Stack, base: str, claude_version: str, digest: str) -> dict[str, str]:
    """The labels that record the image's inputs (`sgf build` and `sgf doctor` read them)."""
    return {
        HASH_LABEL: digest,
        BASE_LABEL: base,
        CLAUDE_LABEL: claude_version,
        STACK_LABEL: stack.name,
    }


def target(
    *, configured: tuple[str, str] | None, stack: str | None, image: str | None
) -> tuple[Stack, str]:
    """Decide which stack's image `sgf sandbox build` builds, and its tag.

    `configured` is the project's (stack, docker_template) when run in an initialised project.
    An explicit --stack wins over the project's; the tag is --image, else the project's
    docker_template when the stack is the project's, else the stack's default image.
    """
    name = stack or (configured[0] if configured else stacks.DEFAULT_STACK)
    chosen = stacks.get(name)
    if image:
        return chosen, image
    if configured and configured[0] == name:
        return chosen, configured[1]
    return chosen, chosen.docker_template


def _place(src: Path, dest: Path) -> None:
    """Hard-link the 380 MB binary into the context when possible, else copy it."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)
    dest.chmod(0o755)


def image_warnings(root: Path, env: Mapping[str, str]) -> list[str]:
    """`sgf status`'s check of the project's image: its pn against the host's.

    Quiet when the project is not initialised, runs without a sandbox, or has no Docker.
    """
    from sgf import config

    try:
        cfg = config.load(root)
    except SgfError:
        return []  # preflight reports a broken config when a loop starts
    if cfg.sandbox is config.SandboxKind.NONE:
        return []
    from sgf import agents

    found = labels(root, cfg.docker_template, env) or {}
    lacking = agents.missing(found, agents.wanted(cfg), cfg.docker_template) if found else []
    return [*version_mismatch(found, cfg.docker_template), *lacking]


def remove_orphans(root: Path, env: Mapping[str, str]) -> list[str]:
    """Remove this project's containers whose ralph is gone (a `kill -9`); their ids.

    ralph does the same at its next start; `sgf status` does it too, so a killed loop's agent
    does not keep running until then. Without a Docker engine there is nothing to do.
    """
    removed = []
    for container in engine.containers(env, f"springfield.project={root}", stopped=True):
        pid = container.labels.get("springfield.ralph-pid", "")
        start = container.labels.get("springfield.ralph-start", "")
        alive = pid.isdigit() and proc.pid_alive(int(pid))
        if alive and start.isdigit():
            alive = pids.start_time(int(pid)) == int(start)
        if not alive and engine.remove_container(env, container.id):
            removed.append(container.id[:12])
    return removed
