"""`sgf doctor`: everything a first loop needs, checked before it fails.

Each finding is one line that says what is wrong and how to fix it. `problem` findings make
`sgf doctor` exit 1; a `warning` (a base image not pulled yet, little free disk) does not.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from sgf import claude, preflight, proc, sandboximage
from sgf import config as config_mod
from sgf.config import SandboxKind
from sgf.errors import SgfError

LOW_DISK = 5 * 1024**3  # bytes free below which a build or a loop may run out (warning)
FULL_DISK = 1 * 1024**3  # below which it will (problem)


class Level(StrEnum):
    """How bad a finding is."""

    OK = "ok"
    WARNING = "warning"
    PROBLEM = "problem"


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's result: what was found, and the fix (None when all is well)."""

    check: str
    level: Level
    message: str
    fix: str | None = None

    def to_json(self) -> dict[str, str | None]:
        """The `--json` shape, keys in a fixed order."""
        return {k: str(v) if isinstance(v, StrEnum) else v for k, v in asdict(self).items()}


def ok(check: str, message: str) -> Finding:
    """A check that passed."""
    return Finding(check, Level.OK, message)


def examine(root: Path, *, env: Mapping[str, str]) -> list[Finding]:
    """Run every check for the project at `root`, in the order a first run needs them."""
    config = config_mod.load(root)
    found = [_ralph(env)]
    if (config.sandbox or SandboxKind.DOCKER) is SandboxKind.NONE:
        found.append(ok("docker", 'sandbox = "none": agents run on this machine, no Docker needed'))
    elif not preflight.docker_answers(root, env):
        found.append(
            Finding(
                "docker",
                Level.PROBLEM,
                "the Docker engine is not reachable (`docker info` failed)",
                'start Docker (or check DOCKER_HOST), or set sandbox = "none" in .sgf/config.toml',
            )
        )
    else:
        found += [ok("docker", "the Docker engine answers"), *_images(root, config, env)]
    found.append(_credentials(env))
    found += _pensa(root, env)
    found.append(_disk(root))
    return found


def _ralph(env: Mapping[str, str]) -> Finding:
    try:
        return ok("ralph", f"ralph is {preflight.find_ralph(env)}")
    except SgfError as e:
        return Finding("ralph", Level.PROBLEM, str(e), "install Springfield (README: Install)")


def _images(root: Path, config: config_mod.Config, env: Mapping[str, str]) -> list[Finding]:
    image = config.docker_template
    base = env.get("SPRINGFIELD_BASE_IMAGE") or sandboximage.DEFAULT_BASE
    build = "run `sgf sandbox build`"
    out = []
    if preflight.image_exists(root, base, env):
        out.append(ok("base_image", f"the base image {base} is here"))
    else:
        out.append(
            Finding(
                "base_image",
                Level.WARNING,
                f"the base image {base} is not pulled yet",
                "`sgf sandbox build` pulls it; without a registry, name a local one with "
                "`--base IMAGE` or SPRINGFIELD_BASE_IMAGE",
            )
        )
    labels = sandboximage.labels(root, image, env)
    if labels is None:
        return [
            *out,
            Finding("image", Level.PROBLEM, f"the sandbox image {image} is missing", build),
        ]
    stale = []
    inside, host = labels.get(sandboximage.PN_LABEL), sandboximage.host_pn_version()
    if inside and host and inside != host:
        stale.append(f"has pn {inside}, this machine has pn {host}")
    want = env.get("CLAUDE_CODE_VERSION") or claude.VERSION
    if (has := labels.get(sandboximage.CLAUDE_LABEL)) and has != want:
        stale.append(f"has claude {has}, sgf pins claude {want}")
    if stale:
        message = f"the sandbox image {image} is out of date: {'; '.join(stale)}"
        return [*out, Finding("image", Level.PROBLEM, message, build)]
    return [*out, ok("image", f"the sandbox image {image} matches pn {host} and claude {want}")]


def _credentials(env: Mapping[str, str]) -> Finding:
    if preflight.has_credentials(env):
        return ok("credentials", "Claude Code credentials found")
    return Finding(
        "credentials",
        Level.PROBLEM,
        "no Claude Code credentials",
        "set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (`claude setup-token`), or log in "
        "with `claude` so ~/.claude/.credentials.json exists",
    )


def _pensa(root: Path, env: Mapping[str, str]) -> list[Finding]:
    """pn's own doctor: hooks, merge driver, claims, drift (`pn doctor` says how to fix)."""
    try:
        done = proc.run(["pn", "doctor", "--json"], cwd=root, env=env, check=False, timeout=120)
        report = json.loads(done.stdout)
    except (SgfError, ValueError) as e:
        return [Finding("pensa", Level.PROBLEM, f"`pn doctor` failed: {e}", "install pn")]
    findings = [
        f for f in report.get("findings", []) if isinstance(f, dict) and f.get("check") != "claim"
    ]
    if not findings:
        return [ok("pensa", "pn's hooks, merge driver and tracker are in order")]
    return [
        Finding("pensa", Level.PROBLEM, str(f.get("message")), f"`pn doctor` ({f.get('check')})")
        for f in findings
    ]


def _disk(root: Path) -> Finding:
    free = shutil.disk_usage(root).free
    shown = f"{free / 1024**3:.1f} GiB free where the project is"
    if free < FULL_DISK:
        return Finding("disk", Level.PROBLEM, shown, "free some space (`docker system prune`)")
    if free < LOW_DISK:
        return Finding("disk", Level.WARNING, shown, "free some space (`docker system prune`)")
    return ok("disk", shown)


def healthy(findings: list[Finding]) -> bool:
    """Tell whether nothing is a problem."""
    return all(f.level is not Level.PROBLEM for f in findings)
