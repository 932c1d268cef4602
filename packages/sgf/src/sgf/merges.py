"""Merging sgf's needs into files the user may already have, never clobbering them.

Each function takes the current text (None when the file does not exist) and returns the new
text, or the same text when nothing is missing, so running `sgf init` twice changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sgf.errors import MergeError

GITIGNORE_HEADER = "# Springfield"
GITIGNORE = (
    ".pensa/db.sqlite",
    ".pensa/db.sqlite-journal",
    ".sgf/logs/",
    ".sgf/run/",
    ".sgf/runs/",
    ".sgf/prompts/.assembled/",
    ".ralph-complete",
    ".ralph-ding",
)

# `/` anchors at the project root in project settings; Write(...) path rules are never
# consulted by Claude Code, Edit(...) rules cover every built-in tool that edits files
# (claude-code-notes §4.1).
DENY = ("Edit(/.sgf/**)",)
DING = 'touch "${CLAUDE_PROJECT_DIR:-.}/.ralph-ding"'
DING_EVENTS = ("Notification", "Stop")


def gitignore(text: str | None, extra: Sequence[str] = ()) -> str:
    """Append the missing Springfield entries under a `# Springfield` header."""
    text = text or ""
    present = {line.strip() for line in text.splitlines()}
    missing = [entry for entry in (*GITIGNORE, *extra) if entry not in present]
    if not missing:
        return text
    block = ([GITIGNORE_HEADER] if GITIGNORE_HEADER not in present else []) + missing
    sep = "" if not text or text.endswith("\n") else "\n"
    blank = "\n" if text.strip() else ""
    return text + sep + blank + "\n".join(block) + "\n"


def claude_settings(text: str | None, *, source: str = ".claude/settings.json") -> str:
    """Add the `.sgf/**` deny rules and the ding hooks to Claude Code project settings."""
    try:
        data = json.loads(text) if text and text.strip() else {}
    except json.JSONDecodeError as e:
        raise MergeError(f"{source} is not valid JSON ({e}); fix it and run sgf init again") from e
    if not isinstance(data, dict):
        raise MergeError(f"{source} must hold a JSON object")
    before = json.dumps(data, sort_keys=True)
    permissions = _typed(data, "permissions", dict, source)
    deny = _typed(permissions, "deny", list, f"{source}: permissions")
    deny.extend(rule for rule in DENY if rule not in deny)
    hooks = _typed(data, "hooks", dict, source)
    for event in DING_EVENTS:
        groups = _typed(hooks, event, list, f"{source}: hooks")
        if not all(isinstance(g, dict) and isinstance(g.get("hooks", []), list) for g in groups):
            raise MergeError(f'{source}: hooks.{event} must be a list of {{"hooks": [...]}}')
        commands = [
            h.get("command") for g in groups for h in g.get("hooks", []) if isinstance(h, dict)
        ]
        if DING not in commands:
            groups.append({"hooks": [{"type": "command", "command": DING}]})
    if text and json.dumps(data, sort_keys=True) == before:
        return text
    return json.dumps(data, indent=2) + "\n"


def _typed(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    """`data[key]`, created empty when missing; MergeError when it has another JSON type."""
    value = data.setdefault(key, kind())
    if not isinstance(value, kind):
        name = "an object" if kind is dict else "a list"
        raise MergeError(f"{where}: {key} must be {name}; fix it and run sgf init again")
    return value
