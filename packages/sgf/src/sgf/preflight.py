"""Checks made before anything is launched: ralph, Docker, the template image, credentials,
and ralph's options.

SGF_SKIP_PREFLIGHT=1 skips the Docker, image and credential checks (tests, and users who run
with `sandbox = "none"` and their own login); ralph must always be found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ralph.shared import backends

from sgf import proc
from sgf.config import SandboxKind
from sgf.errors import OptionsRefused, PreflightError, ProgramMissing
from sgf.image import engine

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN")
# The key each other agent reads (ralph passes it through its credentials file).
# the agents that need an API key of their own, by name: that key's variable
AGENT_KEYS = {name: key for name, key in backends.BACKENDS.items() if key}


NO_DOCKER_CLI = "the `docker` command is not installed (not on PATH)"


def find_ralph(env: Mapping[str, str]) -> str:
    """Return the ralph executable: SGF_RALPH if set, else `ralph` on PATH."""
    named = env.get("SGF_RALPH")
    if named:
        if proc.which(named, env) is None:
            raise ProgramMissing(named, "SGF_RALPH names no executable file")
        return named
    found = proc.which("ralph", env)
    if found is None:
        raise ProgramMissing("ralph", "install Springfield's ralph or set SGF_RALPH")
    return found


def has_credentials(env: Mapping[str, str]) -> bool:
    """Tell whether Claude Code can authenticate: an env token or the host's login file."""
    if any(env.get(name) for name in CREDENTIAL_VARS):
        return True
    config_dir = env.get("CLAUDE_CONFIG_DIR") or str(Path(env.get("HOME", "~")) / ".claude")
    return (Path(config_dir).expanduser() / ".credentials.json").is_file()


def missing_credentials(agent: str, env: Mapping[str, str]) -> list[str]:
    """What `agent` lacks to reach its model: its key, or Claude Code's credentials."""
    if agent in AGENT_KEYS:
        return (
            []
            if env.get(AGENT_KEYS[agent])
            else [f"no {agent} credentials: set {AGENT_KEYS[agent]}"]
        )
    if has_credentials(env):
        return []
    return [
        "no Claude Code credentials: set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN "
        "(`claude setup-token`), or log in with `claude` so ~/.claude/.credentials.json exists"
    ]


def check(
    root: Path,
    *,
    template: str,
    sandbox: SandboxKind | None,
    env: Mapping[str, str],
    agent: str = "claude",
    offline: bool = False,
) -> str:
    """Run every check; return the ralph executable or raise PreflightError naming all gaps.

    An `offline` run needs no credential: ralph makes up the one its scripted model takes."""
    ralph = find_ralph(env)
    if env.get("SGF_SKIP_PREFLIGHT") == "1":
        return ralph
    problems = []
    if sandbox is not SandboxKind.NONE:
        if proc.which("docker", env) is None:
            problems.append(
                f'{NO_DOCKER_CLI}; install Docker, or set sandbox = "none" in '
                ".sgf/config.toml to run agents on this machine"
            )
        elif not engine.answers(env):
            problems.append(
                "the Docker engine is not reachable; start Docker (or check DOCKER_HOST), "
                'or set sandbox = "none" in .sgf/config.toml to run agents on this machine'
            )
        elif not engine.exists(env, template):
            problems.append(f"the sandbox image {template} is missing; run `sgf sandbox build`")
        elif agent != "claude":
            from sgf import agents

            problems += agents.missing(engine.labels(env, template) or {}, [agent], template)
    if not offline:
        problems += missing_credentials(agent, env)
    if problems:
        raise PreflightError("cannot launch:\n  - " + "\n  - ".join(problems))
    return ralph


def check_options(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> None:
    """Ask ralph whether it takes `argv` (its command line for a loop), before the loop gets an
    id, a log or a PID file; OptionsRefused with ralph's own reason when it does not.

    ralph owns its option grammar (a duration such as 90m, a size such as 8g, the agents it
    knows), so sgf asks it rather than keep a second copy that could drift."""
    done = proc.run(
        [argv[0], "--check-options", *argv[1:]], cwd=cwd, env=env, check=False, timeout=120
    )
    if done.returncode == 0:
        return
    said = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    reason = said[-1].removeprefix("error: ") if said else f"exit {done.returncode}"
    raise OptionsRefused(reason)
