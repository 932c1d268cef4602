"""Claude Code's user config for the agent's per-run HOME: no first-run screens.

Claude Code keeps onboarding, theme and per-folder trust in `~/.claude.json` (outside
`~/.claude/`; see the reference notes, "Where credentials live"). A fresh HOME without it shows
the theme picker, the trust dialog and the bypass-permissions warning on every interactive
session. Only the host's display preferences carry over (an allowlist): the same file holds the
OAuth account, API-key answers and every other project's history, none of which the agent may
read. Credentials travel as described in docs/security.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from ralph import safefile

DEFAULT_THEME = "dark"
# The host's preferences worth keeping; everything else in its `.claude.json` stays on the host.
CARRIED_OVER = ("theme", "editorMode", "verbose", "preferredNotifChannel", "diffTool")


def onboarded(host_config: str | None, *, project: Path) -> dict[str, object]:
    """The `.claude.json` to write: the host's preferences with first-run screens done."""
    try:
        host = json.loads(host_config) if host_config else {}
    except json.JSONDecodeError:
        host = {}
    if not isinstance(host, dict):
        host = {}
    config: dict[str, object] = {k: host[k] for k in CARRIED_OVER if k in host}
    config["hasCompletedOnboarding"] = True
    config.setdefault("theme", DEFAULT_THEME)
    config["bypassPermissionsModeAccepted"] = True  # the sandbox is why prompts are bypassed
    config["autoUpdates"] = False  # the image pins its claude version
    config["projects"] = {
        str(project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    }
    return config


def write(home: Path, *, host_home: Path, project: Path) -> Path:
    """Write `home/.claude.json` from the host's, onboarding done; return its path."""
    source = host_home / ".claude.json"
    text = source.read_text() if source.is_file() else None
    target = home / ".claude.json"
    data = json.dumps(onboarded(text, project=project), indent=2) + "\n"
    return safefile.replace(target, data.encode(), mode=0o600)
