"""Claude Code hooks in every run: the guardrails' settings, programs and what fired.

ralph writes them per run, outside the project, so the agent cannot edit them (a project's
`.claude/settings.json` is the agent's to write): `<run>/guard/settings.json` goes to claude
as `--settings`, next to `hook.py` and a copy of the `ralph.inside` package it runs. Before
each iteration ralph writes `<run>/guard/baseline.json` too (`begin`): what the repository
held when the iteration began, which the guard decides on. The container mounts `<run>/guard`
read-only over the read-write run directory, so none of it is the agent's to rewrite; the
hooks write their notes in `<run>/guard-state`, which ralph reads back, bounded, after each
iteration. Under `--sandbox none` the same files run on the host, as the agent itself does.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path

from ralph import git, safefile
from ralph.inside import baseline
from ralph.models import Config, SandboxKind

GUARD, STATE = "guard", "guard-state"
MANAGED = Path("/etc/claude-code/managed-settings.json")
_EVENTS = "events.jsonl"
_MAX_EVENTS_BYTES = 256 * 1024  # the agent can write the file: never read more than this
_MAX_EVENTS = 50
_TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"
_SHIM = """import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from ralph.inside.hookrun import main
sys.exit(main())
"""


def settings(config: Config, *, state: Path, python: str, workdir: Path) -> dict[str, object]:
    """The `--settings` JSON: one command per hook event ralph uses."""
    g = config.guardrails
    base = [python, "-I", str(state / GUARD / "hook.py")]
    options = ["--state", str(state / STATE), "--baseline", str(state / GUARD / baseline.FILE)]
    options += ["--project", str(workdir)]
    options += ["--checks", ",".join(g.checks), "--blocks", str(g.stop_blocks)]
    if g.format_command:
        options += ["--format", g.format_command]

    def command(event: str) -> list[dict[str, object]]:
        line = shlex.join([*base, event, *options])
        return [{"type": "command", "command": line, "timeout": 120}]

    hooks: dict[str, list[dict[str, object]]] = {
        "SessionStart": [{"hooks": command("session-start")}],
        "PostToolUse": [{"matcher": _TOOLS, "hooks": command("post-tool-use")}],
        "PostToolUseFailure": [{"matcher": "Bash", "hooks": command("post-tool-use-failure")}],
    }
    if g.guard:
        hooks["PreToolUse"] = [{"matcher": _TOOLS, "hooks": command("pre-tool-use")}]
    if g.checks and g.stop_blocks > 0:
        hooks["Stop"] = [{"hooks": command("stop")}]
    return {"hooks": hooks}


def install(config: Config, *, state: Path, workdir: Path) -> Config:
    """Write the hook program and settings under `state`; `config` with `--settings` set.

    Only claude reads them: another `--command` (a test's fake agent) gets no new flag.
    """
    if Path(config.command).name != "claude":
        return config
    # in the container, the image's python3; on the host, the agent runs as we do
    python = sys.executable if config.sandbox is SandboxKind.NONE else "python3"
    lib = state / GUARD / "lib" / "ralph" / "inside"
    lib.mkdir(parents=True, exist_ok=True)
    (lib.parent / "__init__.py").write_text("")
    for module in resources.files("ralph.inside").iterdir():
        if module.name.endswith(".py"):
            (lib / module.name).write_text(module.read_text(encoding="utf-8"))
    (state / GUARD / "hook.py").write_text(_SHIM)
    (state / STATE).mkdir(exist_ok=True)
    path = state / GUARD / "settings.json"
    path.write_text(
        json.dumps(settings(config, state=state, python=python, workdir=workdir), indent=2)
    )
    return replace(config, settings=path)


def begin(
    config: Config,
    *,
    env: Mapping[str, str] | None = None,
    workspace: tuple[str, str] | None = None,
) -> None:
    """Record what the repository holds now, as the iteration begins, for the guard.

    Written on the host into `<run>/guard/`, which the container mounts read-only: the agent
    cannot make the guard think the commits a branch had were its own. A loop's workspace
    (`workspace`: its branch and the commit the iteration starts from) is the loop's alone
    and the host runs no git in it, so the record says what the host gave it: that commit
    on that branch, and no uncommitted work of anyone else's. Without a workspace (a folder
    that is no repository) a git that fails leaves the paths unknown, and the guard fails
    closed.
    """
    if config.settings is None:
        return
    if workspace is not None:
        branch, base = workspace
        record = baseline.Baseline(
            head=base, dirty=(), refs={f"refs/heads/{branch}": base} if base else {}
        )
    else:
        project = config.project
        status = git.command(project, *baseline.STATUS, env=env)
        refs = git.command(project, *baseline.REFS, env=env)
        record = baseline.Baseline(
            head=git.head(project, env=env) or "",
            dirty=tuple(baseline.status_paths(status.stdout)) if status.ok else None,
            refs=baseline.parse_refs(refs.stdout) if refs.ok else {},
        )
    safefile.replace(config.settings.parent / baseline.FILE, record.dumps().encode())


def mounts(state: Path) -> list[tuple[Path, Path]]:
    """(host path, container path) to mount read-only: the hook program, and the settings
    as Claude Code's managed settings. Managed settings outrank every other level, and a
    `disableAllHooks` the agent writes into the project's `.claude/` cannot turn them off
    (it does turn off `--settings` hooks: checked with the real claude)."""
    guard = state / GUARD
    if not guard.is_dir():
        return []
    return [(guard, guard), (guard / "settings.json", MANAGED)]


def fired(config: Config) -> list[dict[str, object]]:
    """What the hooks recorded since the last call (then forgotten); junk lines skipped.

    The agent can write `<run>/guard-state`: it may have made the folder or the file a
    symlink to anything on the host. So neither is followed (O_NOFOLLOW at each step), at
    most a bounded prefix is read, and only known fields of well-formed lines are kept.
    """
    if config.settings is None:
        return []
    state = config.settings.parent.parent
    flags = os.O_RDONLY | os.O_NOFOLLOW
    try:
        folder = os.open(state / STATE, flags | os.O_DIRECTORY)
    except OSError:
        return []
    try:
        fd = os.open(_EVENTS, flags | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        os.close(folder)
        return []
    try:
        data = os.read(fd, _MAX_EVENTS_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        os.unlink(_EVENTS, dir_fd=folder)
    finally:
        os.close(fd)
        os.close(folder)
    out: list[dict[str, object]] = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("hook") in ("guard", "stop"):
            out.append(_known(event))
        if len(out) >= _MAX_EVENTS:
            break
    return out


def _known(event: dict[str, object]) -> dict[str, object]:
    keep: dict[str, object] = {"hook": event["hook"]}
    for key in ("rule", "reason", "tool"):
        if isinstance(event.get(key), str):
            keep[key] = str(event[key])[:300]
    for key in ("released",):
        if isinstance(event.get(key), bool):
            keep[key] = event[key]
    if isinstance(event.get("blocks"), int):
        keep["blocks"] = event["blocks"]
    missing = event.get("missing")
    if isinstance(missing, list):
        keep["missing"] = [str(m)[:300] for m in missing[:10]]
    return keep


def describe(event: dict[str, object]) -> str:
    """One line for the transcript: what a guardrail did."""
    if event.get("hook") == "guard":
        return f"guard ({event.get('rule')}): {event.get('reason')}"
    listed = event.get("missing")
    missing = "; ".join(str(m) for m in listed) if isinstance(listed, list) else ""
    if event.get("released"):
        return f"stop checklist let the agent stop after {event.get('blocks')} blocks: {missing}"
    return f"stop checklist sent the agent back ({event.get('blocks')}): {missing}"
