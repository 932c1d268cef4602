"""A loop's original arguments, kept so `sgf top` can restart it.

sgf writes `.sgf/runs/<loop-id>.launch.json` (gitignored, beside ralph's run record) when it
runs a loop: the request as the user gave it, before config defaults. Restarting turns it back
into the same `sgf` command line, so config changes made since then apply as they would to
the user's own second launch. `--stash` is never replayed: stashing someone's work is a
decision for a person at the terminal.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

from sgf import safefile
from sgf.config import Isolation, SandboxKind
from sgf.loop import runs
from sgf.loop.loops import Launch
from sgf.stages import Stage


def launch_path(root: Path, loop_id: str) -> Path:
    """Where the loop's original arguments are kept."""
    return root / runs.RECORDS / f"{loop_id}.launch.json"


def save(root: Path, loop_id: str, request: Launch) -> None:
    """Keep `request` for a later restart (atomically: a reader never sees half a file)."""
    data = json.dumps(asdict(request)) + "\n"
    safefile.replace(launch_path(root, loop_id), data.encode(), root=root)


def load(root: Path, loop_id: str) -> Launch | None:
    """The loop's original request; None when it was not kept or cannot be read."""
    try:
        data = json.loads(launch_path(root, loop_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    known = {f.name for f in fields(Launch)}
    try:
        values = {k: v for k, v in data.items() if k in known}
        values["stage"] = Stage(values["stage"])
        if values.get("sandbox") is not None:
            values["sandbox"] = SandboxKind(values["sandbox"])
        if values.get("isolation") is not None:
            values["isolation"] = Isolation(values["isolation"])
        request = Launch(**values)
    except (KeyError, ValueError, TypeError):
        return None
    return request if _well_typed(request) else None


def _well_typed(r: Launch) -> bool:
    def opt(value: object, *types: type) -> bool:
        return value is None or (isinstance(value, types) and not isinstance(value, bool))

    return (
        isinstance(r.afk, bool)
        and isinstance(r.offline, bool)
        and opt(r.spec, str)
        and opt(r.iterations, int)
        and (r.auto_push is None or isinstance(r.auto_push, bool))
        and opt(r.template, str)
        and opt(r.network, str)
        and opt(r.max_cost, int, float)
        and opt(r.max_tokens, int)
        and opt(r.max_time, str)
    )


def sgf_args(request: Launch) -> list[str]:
    """The sgf arguments that make the same request again (`build --spec auth -a 5`)."""
    args = request.stage.command.split()[1:]
    if request.spec:
        args += ["--spec", request.spec]
    if request.afk:
        args.append("-a")
    if request.isolation is Isolation.WORKTREE:  # `--parallel` loops too: each had its own
        args.append("--worktree")
    if request.template:
        args += ["--template", request.template]
    if request.auto_push is not None:
        args.append("--push" if request.auto_push else "--no-push")
    if request.sandbox is not None:
        args += ["--sandbox", request.sandbox.value]
    if request.network:
        args += ["--network", request.network]
    if request.max_cost is not None:
        args += ["--max-cost", str(request.max_cost)]
    if request.max_tokens is not None:
        args += ["--max-tokens", str(request.max_tokens)]
    if request.max_time:
        args += ["--max-time", request.max_time]
    if request.offline:
        args.append("--offline")
    if request.iterations is not None:
        args.append(str(request.iterations))
    return args
