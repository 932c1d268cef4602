"""Claude Code's user config for the agent's per-run HOME: no first-run screens (issue 11).

Claude Code keeps onboarding, theme and per-folder trust in `~/.claude.json` (outside
`~/.claude/`; see the reference notes, "Where credentials live"). A fresh HOME without it shows
the theme picker, the trust dialog and the bypass-permissions warning on every interactive
session. The host's file is the starting point (its theme and settings carry over); the keys
that skip those screens are set on top. Credentials never live in this file: they travel as
described in the README's security model.
"""

from __future__ import annotations

import json
from pathlib import Path

DEFAULT_THEME = "dark"


def onboarded(host_config: str | None, *, project: Path) -> dict[str, object]:
    """The `.claude.json` to write: the host's (if it parses) with first-run screens done."""
    try:
        config = json.loads(host_config) if host_config else {}
    except json.JSONDecodeError:
        config = {}
    if not isinstance(config, dict):
        config = {}
    config["hasCompletedOnboarding"] = True
    config.setdefault("theme", DEFAULT_THEME)
    config["bypassPermissionsModeAccepted"] = True  # the sandbox is why prompts are bypassed
    projects = config.get("projects")
    projects = dict(projects) if isinstance(projects, dict) else {}
    entry = projects.get(str(project))
    entry = dict(entry) if isinstance(entry, dict) else {}
    entry["hasTrustDialogAccepted"] = True
    entry["hasCompletedProjectOnboarding"] = True
    projects[str(project)] = entry
    config["projects"] = projects
    return config


def write(home: Path, *, host_home: Path, project: Path) -> Path:
    """Write `home/.claude.json` from the host's, onboarding done; return its path."""
    source = host_home / ".claude.json"
    text = source.read_text() if source.is_file() else None
    target = home / ".claude.json"
    target.write_text(json.dumps(onboarded(text, project=project), indent=2) + "\n")
    target.chmod(0o600)
    return target
