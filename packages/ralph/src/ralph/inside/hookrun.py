"""The hook program Claude Code runs inside the sandbox (docs/guardrails.md).

`python3 hook.py EVENT --state DIR --baseline FILE --project DIR [--checks ...] [--blocks N]
[--format CMD]` with the hook's JSON on stdin. EVENT is `session-start` (a new task: the
checklist starts over), `pre-tool-use` (guard.py), `post-tool-use` (edits, checks that passed,
bugs filed, the formatter), `post-tool-use-failure` (checks that failed) or `stop`
(checklist.py). What fired is appended to `events.jsonl` in the state directory, which ralph
copies into the run record after the iteration.

The guard decides on FILE, what the repository held when the iteration began, which ralph
writes before the agent starts into the read-only `guard/` folder (baseline.py). The state
directory is the agent's to write, since the hooks run as the agent: it keeps only the
checklist's notes on the session, which an agent can at most use to fool its own checklist.

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

from ralph.inside import backpressure, baseline, checklist, guard

KEEP_FILE = "keep-changes"
EVENTS = "events.jsonl"
_SESSION = re.compile(r"[^A-Za-z0-9_-]")
# The repository's config is the agent's to write: run none of what it could name.
GIT = ("git", "--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
_SHOWN = 100  # characters of a check's command line kept for the checklist's message


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
    return baseline.status_paths(_run([*GIT, *baseline.STATUS], project) or "")


class Repo:
    """guard.Facts: the repository now, against what ralph recorded before the iteration."""

    def __init__(self, project: str, start: baseline.Baseline | None) -> None:
        self.project = project
        self.start = start

    def foreign_changes(self) -> list[str]:
        now = dirty(self.project)
        if self.start is None or self.start.dirty is None:
            return now  # no record of the start: any change may be someone else's
        before = set(self.start.dirty)
        return [p for p in now if p in before]

    def keeps_commits(self, ref: str, target: str | None) -> bool:
        if self.start is None:  # no record: the commit it holds now is one to keep
            had = (self._rev(ref) or "").strip()
        else:
            had = self.start.head if ref == "HEAD" else self.start.refs.get(ref, "")
        if not had:
            return True  # a ref this iteration made, or a HEAD with no commit yet
        argv = [*GIT, "merge-base", "--is-ancestor", "--end-of-options", had, target or "HEAD"]
        return _run(argv, self.project) is not None

    def names_commit(self, word: str) -> bool:
        return self._rev(word + "^{commit}") is not None

    def _rev(self, name: str) -> str | None:
        return _run([*GIT, "rev-parse", "--verify", "-q", "--end-of-options", name], self.project)


class Session:
    """One Claude Code session's checklist notes, kept in `<state>/session-<id>.json`."""

    def __init__(self, state: Path, session_id: str) -> None:
        self.path = state / f"session-{_SESSION.sub('', session_id) or 'unknown'}.json"
        try:
            loaded = json.loads(self.path.read_text())
        except (OSError, ValueError):
            loaded = None
        self.data: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
        if "seq" not in self.data:  # no SessionStart seen: start counting now
            self.begin()

    def begin(self) -> None:
        self.data = {"seq": 0, "edit": 0, "passed": 0, "failed": 0, "blocks": 0}
        self.data.update(edited="", passed_by="", failed_by="", bug_filed=False)

    def tick(self) -> int:
        self.data["seq"] = int(self.data.get("seq", 0)) + 1
        return int(self.data["seq"])

    def number(self, key: str) -> int:
        value = self.data.get(key, 0)
        return value if isinstance(value, int) else 0

    def text(self, key: str) -> str:
        return str(self.data.get(key) or "")

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)


def record(state: Path, **event: object) -> None:
    with (state / EVENTS).open("a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


def pre_tool_use(args: argparse.Namespace, hook: dict[str, Any], session: Session) -> int:
    tool_input = hook.get("tool_input")
    try:
        refusal = guard.check_tool(
            str(hook.get("tool_name", "")),
            tool_input if isinstance(tool_input, dict) else {},
            project=args.project,
            cwd=str(hook.get("cwd") or args.project),
            facts=Repo(args.project, baseline.load(args.baseline)),
            home=os.environ.get("HOME") or "/",
        )
    except Exception as e:  # a guard that breaks refuses: it fails closed, and says why
        why = f"{type(e).__name__}: {e}"[:200]
        refusal = guard.Refusal("unreadable", f"refused: the guard failed on this ({why})")
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
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        session.data.update(edit=session.tick(), edited=_relative(path, args.project))
        if args.format and isinstance(path, str):
            _run(["/bin/sh", "-c", args.format + ' "$0"', path], args.project, timeout=60)
    elif tool == "Bash":
        command = str(tool_input.get("command", ""))
        # Claude Code runs PostToolUse only when the command exited 0 (PostToolUseFailure
        # otherwise): a check here passed unless its output says it did not.
        if backpressure.checks_in(command, Path(args.project)) and backpressure.passed(
            _output(hook.get("tool_response"))
        ):
            session.data.update(passed=session.tick(), passed_by=_short(command))
        if re.search(r"\bpn\s+(create|q)\b", command) and "bug" in command:
            session.data["bug_filed"] = True
    return 0


def post_tool_use_failure(args: argparse.Namespace, hook: dict[str, Any], session: Session) -> int:
    tool_input = hook.get("tool_input") if isinstance(hook.get("tool_input"), dict) else {}
    assert isinstance(tool_input, dict)
    command = str(tool_input.get("command", ""))
    if hook.get("tool_name") == "Bash" and backpressure.checks_in(command, Path(args.project)):
        session.data.update(failed=session.tick(), failed_by=_short(command))
    return 0


def _short(command: str) -> str:
    line = " ".join(command.split())
    return line if len(line) <= _SHOWN else line[: _SHOWN - 3] + "..."


def _output(response: object) -> str:
    if isinstance(response, dict):
        return f"{response.get('stdout', '')}\n{response.get('stderr', '')}"
    return json.dumps(response, ensure_ascii=False)


def _relative(path: object, project: str) -> str:
    text = str(path or "")
    return os.path.relpath(text, project) if text.startswith(project + "/") else text


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
    start = baseline.load(args.baseline)
    before = set(start.dirty or ()) if start else set()
    keep = args.state / KEEP_FILE
    edit = session.number("edit")
    unchecked = edit > session.number("passed")
    facts = checklist.Facts(
        claimed=claimed,
        changed=[p for p in dirty(args.project) if p not in before],
        kept=keep.is_file() and keep.stat().st_size > 0,
        unchecked=(session.text("edited") or "a file") if unchecked else None,
        last_check=session.text("passed_by") or None,
        failed_check=session.text("failed_by") if session.number("failed") > edit else None,
        last_message=str(hook.get("last_assistant_message") or ""),
        bug_filed=bool(session.data.get("bug_filed")),
    )
    items = checklist.missing(checks, facts, keep_file=str(keep))
    if not items:
        session.data["blocks"] = 0
        return 0
    blocks = session.number("blocks")
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


HANDLERS = {
    "pre-tool-use": pre_tool_use,
    "post-tool-use": post_tool_use,
    "post-tool-use-failure": post_tool_use_failure,
    "stop": stop,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook; exit 0 always, so a broken hook never blocks a run by accident."""
    parser = argparse.ArgumentParser(prog="ralph-hook")
    parser.add_argument("event", choices=["session-start", *HANDLERS])
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, required=True)
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
    session = Session(args.state, str(hook.get("session_id", "")))
    if args.event == "session-start":
        if hook.get("source") not in ("compact", "resume"):  # a compaction is the same task
            session.begin()
        code = 0
    else:
        code = HANDLERS[args.event](args, hook, session)
    session.save()
    return code
