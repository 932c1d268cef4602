"""`sgf doctor`: everything a first loop needs, checked before it fails.

Each finding is one line that says what is wrong and how to fix it. `problem` findings make
`sgf doctor` exit 1; a `warning` (a base image the build cannot get by itself, little free
disk) does not.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from sgf import claude, pncli, preflight, proc
from sgf import config as config_mod
from sgf.config import SandboxKind
from sgf.errors import PnRefused, ProgramMissing, SgfError
from sgf.image import baseimage, engine, sandboximage
from sgf.loop import loops, runs

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
    docker = (config.sandbox or SandboxKind.DOCKER) is SandboxKind.DOCKER
    if not docker:
        found.append(ok("docker", 'sandbox = "none": agents run on this machine, no Docker needed'))
    elif proc.which("docker", env) is None:
        found.append(
            Finding(
                "docker",
                Level.PROBLEM,
                preflight.NO_DOCKER_CLI,
                "install Docker (docs.docker.com/engine/install), "
                'or set sandbox = "none" in .sgf/config.toml',
            )
        )
        docker = False  # nothing more to ask of it
    elif not engine.answers(env):
        found.append(
            Finding(
                "docker",
                Level.PROBLEM,
                "the Docker engine is not reachable",
                'start Docker (or check DOCKER_HOST), or set sandbox = "none" in .sgf/config.toml',
            )
        )
        docker = False
    else:
        found += [ok("docker", "the Docker engine answers"), *_images(root, config, env)]
    found.append(_network(config))
    found += _agents(root, config, env, docker=docker)
    found += _pensa(root, env)
    found.append(_pid_files(root))
    found.append(_disk(root))
    return found


def _network(config: config_mod.Config) -> Finding:
    """What the agents can reach: the allow-list, or the opt-out the project chose."""
    if config.sandbox is SandboxKind.NONE:
        return Finding(
            "network",
            Level.WARNING,
            'sandbox = "none": no allow-list and no key proxy; agents have this machine\'s '
            "network, files and keys",
            'remove sandbox = "none" from .sgf/config.toml to run agents in Docker',
        )
    if config.network:
        return Finding(
            "network",
            Level.WARNING,
            f"network = {config.network!r}: agents reach whatever the container can "
            "(keys still stay on the host)",
            "remove network from .sgf/config.toml for the allow-list",
        )
    hosts = ", ".join(loops.allowed_hosts(config)) or "nothing else"
    return ok(
        "network",
        f"allow-list: the model through ralph's key proxy, {hosts}; keys stay on the host",
    )


def _ralph(env: Mapping[str, str]) -> Finding:
    try:
        return ok("ralph", f"ralph is {preflight.find_ralph(env)}")
    except SgfError as e:
        return Finding("ralph", Level.PROBLEM, str(e), "install Springfield (README: Install)")


def _images(root: Path, config: config_mod.Config, env: Mapping[str, str]) -> list[Finding]:
    build = "run `sgf sandbox build`"
    image = config.docker_template
    labels = engine.labels(env, image)
    out = [_base(config, env, labels)]
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


def _base(
    config: config_mod.Config, env: Mapping[str, str], labels: Mapping[str, str] | None
) -> Finding:
    """The base the next `sgf sandbox build` starts from: `SPRINGFIELD_BASE_IMAGE`, the
    project's `base`, what the sandbox image was built from, else the default. Missing, it
    matters only to that build, and only when the build cannot get it by itself."""
    base = (
        env.get("SPRINGFIELD_BASE_IMAGE")
        or config.base
        or (labels or {}).get(sandboximage.BASE_LABEL)
        or baseimage.DEFAULT
    )
    if engine.exists(env, base):
        return ok("base_image", f"the base image {base} is here")
    how, by_itself = baseimage.how_to_get(base, env, claude.cache_dir(env))
    if labels is not None:  # the sandbox image is built: a missing base waits for a rebuild
        return ok("base_image", f"the base image {base} is not here; for a rebuild, {how}")
    if by_itself:
        return ok("base_image", f"the base image {base} is not here yet: {how}")
    return Finding("base_image", Level.WARNING, f"the base image {base} is not here", how)


def stages_by_agent(config: config_mod.Config) -> dict[str, list[str]]:
    """Each agent the stages run (`agent`, `[stages.<name>] agent`), with its stages."""
    from sgf.stages import Stage

    used: dict[str, list[str]] = {}
    for stage in Stage:
        used.setdefault(config.agent_for(stage.value) or "claude", []).append(stage.value)
    return used


def _agents(
    root: Path, config: config_mod.Config, env: Mapping[str, str], *, docker: bool
) -> list[Finding]:
    """What each agent the stages run needs: its key in the environment, and its CLI in
    the sandbox image (or, with sandbox = "none", on this machine)."""
    found = []
    labels = engine.labels(env, config.docker_template) if docker else None
    for agent, stages in sorted(stages_by_agent(config).items()):
        runs_what = f"{agent} runs {_stages_shown(stages)}"
        if agent == "claude":
            found.append(_credentials(env, runs_what))
            continue
        key = preflight.AGENT_KEYS[agent]
        if env.get(key):
            found.append(ok(f"{agent}_key", f"{key} is set ({runs_what})"))
        else:
            message = f"{key} is not set, and {agent} needs it ({runs_what})"
            fix = f"export {key} where you run sgf (ralph hands it to the agent in a file)"
            found.append(Finding(f"{agent}_key", Level.PROBLEM, message, fix))
        if config.sandbox is SandboxKind.NONE:
            found.append(_agent_on_path(agent, runs_what, env))
        elif labels is not None:  # (else the docker or image finding says what to do first)
            found.append(_agent_in_image(agent, runs_what, labels, config.docker_template))
    return found


def _agent_on_path(agent: str, runs_what: str, env: Mapping[str, str]) -> Finding:
    if proc.which(agent, env) is not None:
        return ok(agent, f"{agent} is on PATH ({runs_what} on this machine)")
    message = f'{agent} is not on PATH ({runs_what} on this machine: sandbox = "none")'
    return Finding(agent, Level.PROBLEM, message, f"install {agent} (scripts/ensure-agents.sh)")


def _agent_in_image(agent: str, runs_what: str, labels: dict[str, str], image: str) -> Finding:
    from sgf import agents

    if not agents.missing(labels, [agent], image):
        return ok(agent, f"the sandbox image {image} carries {agent}")
    message = f"the sandbox image {image} has no {agent} ({runs_what})"
    fix = "run `sgf sandbox build` (it adds every agent .sgf/config.toml names)"
    return Finding(agent, Level.PROBLEM, message, fix)


def _stages_shown(stages: list[str]) -> str:
    """`every stage`, `the build stage` or `the spec, build stages`."""
    from sgf.stages import Stage

    if len(stages) == len(Stage):
        return "every stage"
    return f"the {', '.join(stages)} stage" + ("s" if len(stages) > 1 else "")


def _credentials(env: Mapping[str, str], runs_what: str) -> Finding:
    if preflight.has_credentials(env):
        return ok("credentials", "Claude Code credentials found")
    return Finding(
        "credentials",
        Level.PROBLEM,
        f"no Claude Code credentials ({runs_what})",
        "set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (`claude setup-token`), or log in "
        "with `claude` so ~/.claude/.credentials.json exists; without an account, a stage's "
        '`--offline` needs none (README "Try it offline")',
    )


def _pensa(root: Path, env: Mapping[str, str]) -> list[Finding]:
    """pn's own doctor (hooks, merge driver, stale claims, drift, a damaged database), each
    finding in pn's words with the pn command that fixes it."""
    try:
        findings = pncli.doctor(root, env)
    except ProgramMissing as e:
        return [Finding("pensa", Level.PROBLEM, str(e), "install Springfield (README: Install)")]
    except PnRefused as e:
        fix = pncli.fix_named(str(e)) or "run `pn doctor` to see it"
        return [Finding("pensa", Level.PROBLEM, f"`pn doctor` could not run: {e}", fix)]
    except SgfError as e:  # (timed out)
        return [Finding("pensa", Level.PROBLEM, str(e), "run `pn doctor` to see it")]
    if not findings:
        return [ok("pensa", "pn's hooks, merge driver and tracker are in order")]
    return [Finding("pensa", Level.PROBLEM, f.message, f.fix()) for f in findings]


def _pid_files(root: Path) -> Finding:
    """A PID file whose sgf is gone: a loop that crashed, recovered at the next launch."""
    stale = [p for p in runs.scan(root) if not p.alive()]
    if not stale:
        return ok("pid_files", "no crashed loop left a PID file in .sgf/run/")
    names = ", ".join(str(p.path.relative_to(root)) for p in stale)
    return Finding(
        "pid_files",
        Level.WARNING,
        f"stale PID file{'s' if len(stale) > 1 else ''} {names}: the sgf that ran "
        f"{'those loops' if len(stale) > 1 else 'that loop'} is gone (it crashed)",
        "the next loop you start recovers it (stashes its leftovers as `sgf-recovery`, frees "
        "its claims, removes the file); `sgf status` shows it meanwhile",
    )


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
