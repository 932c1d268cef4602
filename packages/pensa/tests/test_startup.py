"""What each hot command loads: nothing it does not use (STYLE.md, issue 12)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def loaded(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pensa", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}


@pytest.mark.parametrize("command", [["import"], ["sync"], ["export"]])
def test_the_file_commands_load_neither_tracker_nor_views(repo: Path, command: list[str]) -> None:
    modules = loaded(command, repo)
    assert "pensa.jsonl" in modules or "pensa.sync" in modules
    assert not {"pensa.tracker", "pensa.views", "pensa.graph"} & modules


def test_ready_loads_no_write_path(repo: Path) -> None:
    modules = loaded(["ready", "--json"], repo)
    assert "pensa.views" in modules
    heavy = {"pensa.tracker", "pensa.jsonl", "pensa.sync", "sqlite_utils", "rich", "yaml"}
    assert not heavy & modules
