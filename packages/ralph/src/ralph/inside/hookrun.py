"""The hook program every agent CLI runs inside the sandbox (docs/guardrails.md).

`python3 -I hook.py --agent AGENT --options FILE EVENT` with the CLI's hook JSON on stdin
(dialect.py reads each CLI's). EVENT is `session-start` (a new task: the checklist starts
over), `pre-tool-use` (the guard, guard.py), `post-tool-use` and `post-tool-use-failure`
(edits, checks that passed or failed, bugs filed, the formatter) or `stop` (checklist.py);
`rerun -- ARGV...` runs a CLI that has no stop event and asks it again (rerun.py). FILE is the
run's options, which ralph writes into the read-only guard folder: where the state folder,
the record of the start and the project are, which checks apply, the formatter.

The guard decides on what the repository held when the iteration began, which ralph writes
before the agent starts into the guard folder (baseline.py); the hooks' own notes are the
agent's to rewrite (notes.py). It runs as the agent, with the agent's environment, in the
container (or on the host under `--sandbox none`), copied there with its package by ralph.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph.inside import backpressure, baseline, checklist, dialect, guard, repo, rerun
from ralph.inside.notes import Session, record

KEEP_FILE = "keep-changes"
_SHOWN = 100  # characters of a check's command line kept for the checklist's message


@dataclass(frozen=True, slots=True)
class Options:
    """The run's guardrails, as ralph wrote them into the guard folder (hooks.install)."""

    agent: str
    state: Path  # the hooks' notes and what fired (notes.py)
    baseline: Path  # ralph's record of the start (baseline.py)
    project: str  # where the agent works
    checks: str = ""  # the stop checklist's lines (checklist.parse)
    blocks: int = 3  # stops sent back before one is let go
    format: str = ""  # the formatter, run on each edited file
    guard: bool = True  # the command guard

    @classmethod
    def load(cls, agent: str, path: Path) -> Options:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            agent=agent,
            state=Path(raw["state"]),
            baseline=Path(raw["baseline"]),
            project=str(raw["project"]),
            checks=str(raw.get("checks", "")),
            blocks=int(raw.get("blocks", 3)),
            format=str(raw.get("format") or ""),
            guard=bool(raw.get("guard", True)),
        )


Handler = Callable[[Options, dialect.Call, Session], "str | None"]


def pre_tool_use(options: Options, call: dialect.Call, session: Session) -> str | None:
    """The guard's refusal of one tool call, or None to let it run."""
    if not options.guard:
        return None
    try:
        refusal = _refusal(options, call)
    except Exception as e:  # a guard that breaks refuses: it fails closed, and says why
        why = f"{type(e).__name__}: {e}"[:200]
        refusal = guard.Refusal("unreadable", f"refused: the guard failed on this ({why})")
    if refusal is None:
        return None
    shown = call.shown()[:300]
    record(options.state, hook="guard", rule=refusal.rule, reason=refusal.reason, tool=shown)
    return refusal.reason


def _refusal(options: Options, call: dialect.Call) -> guard.Refusal | None:
    facts = repo.Repo(options.project, baseline.load(options.baseline))
    cwd, home = call.cwd or options.project, os.environ.get("HOME") or "/"

    def check(tool: str, tool_input: dict[str, object]) -> guard.Refusal | None:
        project = options.project
        return guard.check_tool(tool, tool_input, project=project, cwd=cwd, facts=facts, home=home)

    if call.tool == dialect.SHELL:
        return check(dialect.SHELL, {"command": call.command})
    for path in call.paths:
        if refusal := check(call.tool, {"file_path": path}):
            return refusal
    return None


def post_tool_use(options: Options, call: dialect.Call, session: Session) -> str | None:
    """The checklist's notes on one tool call that ran; the formatter on the files it edited."""
    if call.tool in (dialect.EDIT, dialect.WRITE) and call.paths:
        session.data.update(edit=session.tick(), edited=_relative(call.paths[0], options.project))
        for path in call.paths if options.format else ():
            repo.run(["/bin/sh", "-c", options.format + ' "$0"', path], options.project)
    elif call.tool == dialect.SHELL:
        command = call.command
        # Claude Code says a command failed (PostToolUseFailure), gemini and opencode give its
        # exit code, codex its transcript; a check that exited 0 still failed when its output
        # carries a runner's failure summary (a check piped into `tail` exits 0)
        if backpressure.checks_in(command, Path(options.project)):
            if call.failed:
                session.data.update(failed=session.tick(), failed_by=_short(command))
            elif backpressure.passed(call.output):
                session.data.update(passed=session.tick(), passed_by=_short(command))
        if re.search(r"\bpn\s+(create|q)\b", command) and "bug" in command and not call.failed:
            session.data["bug_filed"] = True
    return None


def _short(command: str) -> str:
    line = " ".join(command.split())
    return line if len(line) <= _SHOWN else line[: _SHOWN - 3] + "..."


def _relative(path: str, project: str) -> str:
    return os.path.relpath(path, project) if path.startswith(project + "/") else path


def stop(options: Options, call: dialect.Call, session: Session) -> str | None:
    """The stop checklist's reason to send the model back, or None to let it stop."""
    checks = checklist.parse(options.checks)
    start = baseline.load(options.baseline)
    before = set(start.dirty or ()) if start else set()
    keep = options.state / KEEP_FILE
    edit = session.number("edit")
    unchecked = edit > session.number("passed")
    facts = checklist.Facts(
        claimed=_claimed(options) if checklist.Check.TASK in checks else None,
        changed=[p for p in repo.dirty(options.project) if p not in before],
        kept=keep.is_file() and keep.stat().st_size > 0,
        unchecked=(session.text("edited") or "a file") if unchecked else None,
        last_check=session.text("passed_by") or None,
        failed_check=session.text("failed_by") if session.number("failed") > edit else None,
        last_message=call.message,
        bug_filed=bool(session.data.get("bug_filed")),
    )
    items = checklist.missing(checks, facts, keep_file=str(keep))
    if not items:
        session.data["blocks"] = 0
        return None
    blocks = session.number("blocks")
    if blocks >= options.blocks:
        # bounded: a model that cannot satisfy the list is let go, and the record says why
        record(options.state, hook="stop", released=True, blocks=blocks, missing=items)
        session.data["blocks"] = 0
        return None
    session.data["blocks"] = blocks + 1
    record(options.state, hook="stop", released=False, blocks=blocks + 1, missing=items)
    return checklist.message(items, blocks=blocks + 1, limit=options.blocks)


def _claimed(options: Options) -> list[str] | None:
    """The in-progress issues of this loop's actor (None: pn cannot say)."""
    actor = os.environ.get("PN_ACTOR")
    out = repo.run(["pn", "list", "-a", actor, "--json"], options.project) if actor else None
    try:
        issues = json.loads(out) if out else None
    except ValueError:
        return None
    if not isinstance(issues, list):
        return None
    return [
        str(i["id"]) for i in issues if isinstance(i, dict) and i.get("status") == "in_progress"
    ]


def session_start(options: Options, call: dialect.Call, session: Session) -> str | None:
    if call.source not in ("compact", "resume"):  # a compaction is the same task
        session.begin()
    return None


HANDLERS: dict[str, Handler] = {
    "session-start": session_start,
    "pre-tool-use": pre_tool_use,
    "post-tool-use": post_tool_use,
    "post-tool-use-failure": post_tool_use,
    "stop": stop,
}
# How a handler's reason is said to the CLI: a refused call, a stop sent back.
ANSWERS = {"pre-tool-use": dialect.deny, "stop": dialect.block}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook; exit 0 always, so a broken hook never blocks a run by accident."""
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)
    parser = argparse.ArgumentParser(prog="ralph-hook")
    parser.add_argument("event", choices=[*HANDLERS, "rerun"])
    parser.add_argument("--agent", default="claude")
    parser.add_argument("--options", type=Path, required=True)
    parsed = parser.parse_args(args[:cut])
    options = Options.load(parsed.agent, parsed.options)
    if parsed.event == "rerun":
        return rerun.run(args[cut + 1 :], lambda sid, said: _stop(options, sid, said))
    try:
        raw = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        raw = {}
    call = dialect.read(options.agent, parsed.event, raw if isinstance(raw, dict) else {})
    session = Session(options.state, call.session)
    reason = HANDLERS[parsed.event](options, call, session)
    session.save()
    if reason is not None:
        print(ANSWERS[parsed.event](options.agent, reason))
    return 0


def _stop(options: Options, session_id: str, said: str) -> str | None:
    """The checklist at the end of one round of `rerun`."""
    session = Session(options.state, session_id)
    reason = stop(options, dialect.Call(session_id, message=said), session)
    session.save()
    return reason
