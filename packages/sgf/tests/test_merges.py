"""Merging into a user's .gitignore and Claude settings: add, never clobber."""

from __future__ import annotations

import json

import pytest

from sgf import merges
from sgf.errors import MergeError


def test_gitignore_keeps_user_lines_and_appends_missing_entries_once() -> None:
    mine = "node_modules/\n.pensa/db.sqlite\n"
    merged = merges.gitignore(mine, ["node_modules/", "/target"])
    assert merged.startswith(mine)
    assert merged.splitlines().count(".pensa/db.sqlite") == 1
    assert merged.splitlines().count("node_modules/") == 1
    for entry in (*merges.GITIGNORE, "/target"):
        assert entry in merged.splitlines()
    assert merges.gitignore(merged, ["node_modules/", "/target"]) == merged


def test_gitignore_without_final_newline_is_not_glued() -> None:
    merged = merges.gitignore("dist")
    assert merged.splitlines()[:3] == ["dist", "", "# Springfield"]


def test_settings_keep_user_rules_and_hooks_and_add_ours_once() -> None:
    mine = {
        "model": "opus",
        "permissions": {"allow": ["Bash(make:*)"], "deny": ["Read(./.env)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
    }
    merged = json.loads(merges.claude_settings(json.dumps(mine)))
    assert merged["model"] == "opus"
    assert merged["permissions"]["allow"] == ["Bash(make:*)"]
    assert merged["permissions"]["deny"] == ["Read(./.env)", "Edit(/.sgf/**)"]
    stop = [h["command"] for g in merged["hooks"]["Stop"] for h in g["hooks"]]
    assert stop == ["say done", merges.DING]
    note = [h["command"] for g in merged["hooks"]["Notification"] for h in g["hooks"]]
    assert note == [merges.DING]
    again = merges.claude_settings(json.dumps(merged, indent=2) + "\n")
    assert again == json.dumps(merged, indent=2) + "\n"


def test_settings_use_edit_rules_not_write_rules() -> None:
    merged = json.loads(merges.claude_settings(None))
    assert merged["permissions"]["deny"] == ["Edit(/.sgf/**)"]
    assert not any(rule.startswith("Write(") for rule in merged["permissions"]["deny"])


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        '{"permissions": "no"}',
        '{"permissions": {"deny": "x"}}',
        '{"hooks": []}',
        '{"hooks": {"Stop": {}}}',
        '{"hooks": {"Stop": [1]}}',
    ],
)
def test_unreadable_settings_are_an_error_not_overwritten(text: str) -> None:
    with pytest.raises(MergeError, match=r"\.claude/settings\.json"):
        merges.claude_settings(text)
