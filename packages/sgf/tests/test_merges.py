"""Merging into a user's .gitignore, Claude settings and pre-commit config: add, never clobber."""

from __future__ import annotations

import json

import pytest
import yaml

from sgf import merges, resources
from sgf.errors import MergeError

TEMPLATE = resources.read_text("scaffold", "pre-commit-config.yaml")


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


def test_a_new_precommit_config_is_the_template() -> None:
    assert merges.precommit_config(None, TEMPLATE) == TEMPLATE
    hooks = yaml.safe_load(TEMPLATE)["repos"][0]["hooks"]
    assert [h["id"] for h in hooks] == ["pensa-export", "pensa-import"]
    assert all(h["pass_filenames"] is False for h in hooks)
    assert hooks[0]["stages"] == ["pre-commit"]
    assert hooks[1]["stages"] == ["post-merge", "post-checkout", "post-rewrite"]


def test_existing_precommit_config_keeps_its_text_and_comments() -> None:
    mine = (
        "# my hooks\n"
        "default_stages: [pre-commit]\n"
        "repos:\n"
        "-   repo: https://github.com/psf/black\n"
        "    rev: 24.1.0  # pinned\n"
        "    hooks:\n"
        "    -   id: black\n"
    )
    merged = merges.precommit_config(mine, TEMPLATE)
    assert merged.startswith(mine)
    data = yaml.safe_load(merged)
    assert data["default_stages"] == ["pre-commit"]
    assert [r["repo"] for r in data["repos"]] == ["https://github.com/psf/black", "local"]
    assert [h["id"] for h in data["repos"][1]["hooks"]] == ["pensa-export", "pensa-import"]
    assert merges.precommit_config(merged, TEMPLATE) == merged


def test_precommit_config_with_one_hook_gets_only_the_other() -> None:
    mine = "repos:\n  - repo: local\n    hooks:\n      - {id: pensa-export, entry: pn export}\n"
    merged = yaml.safe_load(merges.precommit_config(mine, TEMPLATE))
    ids = [h["id"] for r in merged["repos"] for h in r["hooks"]]
    assert ids == ["pensa-export", "pensa-import"]


def test_unreadable_precommit_config_is_an_error() -> None:
    with pytest.raises(MergeError, match="not valid YAML"):
        merges.precommit_config("repos: [\n", TEMPLATE)


@pytest.mark.parametrize("text", ["repos: [5]", "repos: [{hooks: 5}]"])
def test_precommit_config_with_wrong_shapes_is_an_error(text: str) -> None:
    with pytest.raises(MergeError, match=r"\.pre-commit-config\.yaml"):
        merges.precommit_config(text, resources.read_text("scaffold", "pre-commit-config.yaml"))
