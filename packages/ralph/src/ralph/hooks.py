"""The guardrails' hooks in every run, for every agent CLI: the program, its settings, what fired.

ralph writes them per run, outside the project, so the agent cannot edit them (a project's
`.claude/`, `.codex/`, `.gemini/` or `opencode.json` is the agent's to write): `<run>/guard/`
holds `hook.py` and a copy of the `ralph.inside` package it runs, `options.json` (where the
state and the project are, which checks apply) and the CLI's hook settings (agents/, `wire`).
Before each iteration ralph writes `<run>/guard/baseline.json` too (`begin`): what the
repository held when the iteration began, which the guard decides on. The container mounts
`<run>/guard` read-only over the read-write run directory, and each of its containers gets the
CLI's settings as its managed settings, files root owns (`managed`), so none of it is the
agent's to rewrite; the hooks write their notes in `<run>/guard-state`, which ralph reads back,
bounded, after each iteration. Under `--sandbox none` the same files run on the host, as the
agent itself does, from the run's own user settings or a flag.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import sys
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path, PurePosixPath

from ralph import git, safefile
from ralph.agents import hookset
from ralph.agents.hookset import HookSet
from ralph.inside import baseline
from ralph.models import Config, SandboxKind

GUARD, STATE = "guard", "guard-state"
_EVENTS = "events.jsonl"
_MAX_EVENTS_BYTES = 256 * 1024  # the agent can write the file: never read more than this
_MAX_EVENTS = 50
_SHIM = """import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from ralph.inside.hookrun import main
sys.exit(main())
"""
_COPIED = (".py", ".js")  # the hook program's package: its modules and opencode's plugin


def install(config: Config, *, state: Path, workdir: Path) -> Config:
    """Write the hook program, its options and the CLI's hook settings under `state`;
    `config` with its `hooks` set.

    Only the agent's own CLI gets them: another `--command` (a test's fake agent) gets none.
    """
    if Path(config.command).name != config.agent:
        return config
    g = config.guardrails
    # in the container, the image's python3; on the host, the agent runs as we do
    python = sys.executable if config.sandbox is SandboxKind.NONE else "python3"
    folder = state / GUARD
    hooks = HookSet(
        folder=str(folder),
        python=python,
        agent=config.agent,
        guard=g.guard,
        stop=bool(g.checks) and g.stop_blocks > 0,
    )
    lib = folder / hookset.INSIDE
    lib.mkdir(parents=True, exist_ok=True)
    (lib.parent / "__init__.py").write_text("")
    for module in resources.files("ralph.inside").iterdir():
        if module.name.endswith(_COPIED):
            (lib / module.name).write_text(module.read_text(encoding="utf-8"))
    (folder / hookset.PROGRAM).write_text(_SHIM)
    (state / STATE).mkdir(exist_ok=True)
    options = {
        "state": str(state / STATE),
        "baseline": str(folder / baseline.FILE),
        "project": str(workdir),
        "checks": ",".join(g.checks),
        "blocks": g.stop_blocks,
        "format": g.format_command or "",
        "guard": g.guard,
    }
    (folder / hookset.OPTIONS).write_text(json.dumps(options, indent=2))
    wiring = config.backend().wire(hooks)
    (folder / PurePosixPath(wiring.managed).name).write_bytes(wiring.content)
    return replace(config, hooks=hooks)


def managed(config: Config) -> list[tuple[str, bytes]]:
    """The files one container gets as root's: the CLI's managed settings with ralph's hooks,
    their names fresh for the container (HookSet.nonce)."""
    if config.hooks is None:
        return []
    hooks = replace(config.hooks, nonce=secrets.token_hex(6))
    wiring = config.backend().wire(hooks)
    return [(wiring.managed, wiring.content)]


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
    if config.hooks is None:
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
    safefile.replace(Path(config.hooks.folder) / baseline.FILE, record.dumps().encode())


def mounts(state: Path) -> list[tuple[Path, Path]]:
    """(host path, container path) to mount read-only: the hook program and its settings."""
    guard = state / GUARD
    return [(guard, guard)] if guard.is_dir() else []


def fired(config: Config) -> list[dict[str, object]]:
    """What the hooks recorded since the last call (then forgotten); junk lines skipped.

    The agent can write `<run>/guard-state`: it may have made the folder or the file a
    symlink to anything on the host. So neither is followed (O_NOFOLLOW at each step), at
    most a bounded prefix is read, and only known fields of well-formed lines are kept.
    """
    if config.hooks is None:
        return []
    state = Path(config.hooks.folder).parent
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
