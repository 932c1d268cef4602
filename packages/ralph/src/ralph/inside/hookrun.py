"""The hook program Claude Code runs inside the sandbox (README "Guardrails").

`python3 hook.py EVENT --state DIR --project DIR [--checks ...] [--blocks N] [--format CMD]`
with the hook's JSON on stdin. EVENT is `session-start` (remember HEAD and what was already
uncommitted), `pre-tool-use` (guard.py), `post-tool-use` (edits, passing backpressure, bugs
filed, the formatter) or `stop` (checklist.py). What fired is appended to `events.jsonl` in
the state directory, which ralph copies into the run record after the iteration.

ralph writes this file and its package read-only into the run's directory; it runs as the
agent, with the agent's environment, in the container (or on the host under
`--sandbox none`). It starts git, pn and the formatter itself: it cannot use ralph's proc.py,
which is not in the sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ralph.inside import checklist, guard

RUN_SILENT = "run-silent"
PASSED, FAILED = "\u2713 ", "\u2717 "  # run-silent's first characters: ✓ and ✗
KEEP_FILE = "keep-changes"
EVENTS = "events.jsonl"
_SESSION = re.compile(r"[^A-Za-z0-9_-]")
# The repository's config is the agent's to write: run none of what it could name.
GIT = ("git", "--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def _run(argv: Sequence[str], cwd: str, timeout: float = 60) -> str | None:
    """stdout of a command that succeeded, or None."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def dirty(project: str) -> list[str]:
    """Uncommitted paths (changed, staged or untracked), sentinel files left out."""
    out = _run([*GIT, "status", "--porcelain", "--untracked-files=all"], project) or ""
    paths = [line[3:].split(" -> ")[-1].strip('"') for line in out.splitlines() if line]
    return [p for p in paths if p not in checklist.IGNORED]


class Session:
    """One Claude Code session's facts, kept in `<state>/session-<id>.json`."""

    def __init__(self, state: Path, session_id: str, project: str) -> None:
        self.path = state / f"session-{_SESSION.sub('', session_id) or 'unknown'}.json"
        self.project = project
        try:
            loaded = json.loads(self.path.read_text())
        except (OSError, ValueError):
            loaded = None
        self.data: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
        if "head" not in self.data:  # no SessionStart seen: what is there now is the baseline
            self.begin()

    def begin(self) -> None:
        head = _run([*GIT, "rev-parse", "HEAD"], self.project)
        self.data.update(
            head=(head or "").strip(), dirty=dirty(self.project), seq=0, edit=0, passed=0
        )
        self.data.update(blocks=0, bug_filed=False)

    def tick(self) -> int:
        self.data["seq"] = int(self.data.get("seq", 0)) + 1
        return int(self.data["seq"])

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)

    # guard.Facts
    def foreign_changes(self) -> list[str]:
        before = set(self.data.get("dirty", []))
        return [p for p in dirty(self.project) if p in before]

    def keeps_commits(self, target: str) -> bool:
        head = self.data.get("head") or ""
        if not head:
            return True
        argv = [*GIT, "merge-base", "--is-ancestor", head, target]
        return _run(argv, self.project) is not None


def record(state: Path, **event: object) -> None:
    with (state / EVENTS).open("a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


def pre_tool_use(args: argparse.Namespace, hook: dict[str, Any], session: Session) -> int:
    tool_input = hook.get("tool_input")
    refusal = guard.check_tool(
        str(hook.get("tool_name", "")),
        tool_input if isinstance(tool_input, dict) else {},
        project=args.project,
        cwd=str(hook.get("cwd") or args.project),
        facts=session,
    )
    if refusal is None:
        return 0
    shown = json.dumps(tool_input)[:300]
    record(args.state, hook="guard", rule=refusal.rule, reason=refusal.reason, tool=shown)
    decision = {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
    decision["permissionDecisionReason"] = refusal.reason
    print(json.dumps({"hookSpecificOutput": decision}))
    return 0


def post_tool_use(args: argparse.Namespace, hook: dict[str, Any], session: Session) -> int:
    tool = str(hook.get("tool_name", ""))
    tool_input = hook.get("tool_input") if isinstance(hook.get("tool_input"), dict) else {}
    assert isinstance(tool_input, dict)
    if tool in guard.FILE_TOOLS:
        session.data["edit"] = session.tick()
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if args.format and isinstance(path, str):
            _run(["/bin/sh", "-c", args.format + ' "$0"', path], args.project, timeout=60)
    elif tool == "Bash":
        command = str(tool_input.get("command", ""))
        response = json.dumps(hook.get("tool_response"), ensure_ascii=False)
        if RUN_SILENT in command and PASSED in response and FAILED not in response:
            session.data["passed"] = session.tick()
        if re.search(r"\bpn\s+(create|q)\b", command) and "bug" in command:
            session.data["bug_filed"] = True
    return 0


def stop(args: argparse.Namespace, hook: dict[str, Any], session: Session) -> int:
    checks = checklist.parse(args.checks)
    claimed = None
    actor = os.environ.get("PN_ACTOR")
    if checklist.Check.TASK in checks and actor:
        out = _run(["pn", "list", "-a", actor, "--json"], args.project)
        try:
            issues = json.loads(out) if out else None
        except ValueError:
            issues = None
        if isinstance(issues, list):
            claimed = [
                str(i["id"])
                for i in issues
                if isinstance(i, dict) and i.get("status") == "in_progress"
            ]
    before = set(session.data.get("dirty", []))
    keep = args.state / KEEP_FILE
    facts = checklist.Facts(
        claimed=claimed,
        changed=[p for p in dirty(args.project) if p not in before],
        kept=keep.is_file() and keep.stat().st_size > 0,
        edited_after_pass=int(session.data.get("edit", 0)) > int(session.data.get("passed", 0)),
        last_message=str(hook.get("last_assistant_message") or ""),
        bug_filed=bool(session.data.get("bug_filed")),
    )
    items = checklist.missing(checks, facts, keep_file=str(keep))
    if not items:
        session.data["blocks"] = 0
        return 0
    blocks = int(session.data.get("blocks", 0))
    if blocks >= args.blocks:
        # bounded: a model that cannot satisfy the list is let go, and the record says why
        record(args.state, hook="stop", released=True, blocks=blocks, missing=items)
        session.data["blocks"] = 0
        return 0
    session.data["blocks"] = blocks + 1
    record(args.state, hook="stop", released=False, blocks=blocks + 1, missing=items)
    reason = checklist.message(items, blocks=blocks + 1, limit=args.blocks)
    print(json.dumps({"decision": "block", "reason": reason}))
    return 0


HANDLERS = {"pre-tool-use": pre_tool_use, "post-tool-use": post_tool_use, "stop": stop}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook; exit 0 always, so a broken hook never blocks a run by accident."""
    parser = argparse.ArgumentParser(prog="ralph-hook")
    parser.add_argument("event", choices=["session-start", *HANDLERS])
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--checks", default="")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--format", default="")
    args = parser.parse_args(argv)
    try:
        hook = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        hook = {}
    if not isinstance(hook, dict):
        hook = {}
    session = Session(args.state, str(hook.get("session_id", "")), args.project)
    if args.event == "session-start":
        if hook.get("source") not in ("compact", "resume"):  # a compaction is the same task
            session.begin()
        code = 0
    else:
        code = HANDLERS[args.event](args, hook, session)
    session.save()
    return code
