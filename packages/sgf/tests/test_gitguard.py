"""gitguard.py: a pointer an agent planted in the git directory stops sgf before any git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

Run = Any


@pytest.mark.parametrize("name", ["commondir", "gitdir"])
@pytest.mark.parametrize("command", [["status"], ["build", "-a", "1"]])
def test_a_planted_pointer_is_moved_aside_and_sgf_refuses_in_one_line(
    project: Path, sgf: Run, fake_ralph: Any, tmp_path: Path, name: str, command: list[str]
) -> None:
    evil = tmp_path / "evil"
    (project / ".git" / name).write_text(f"{evil}\n")
    done = sgf(project, *command, env=fake_ralph.env())
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {project}/.git/{name} existed; moved to {name}.quarantined-")
    assert not (project / ".git" / name).exists()
    [kept] = (project / ".git").glob(f"{name}.quarantined-*")
    assert kept.read_text() == f"{evil}\n"  # kept for the human to read
    assert not fake_ralph.record.exists()  # ralph never started
    assert sgf(project, "status").returncode == 0  # git never reads the quarantined name


def test_every_launch_sets_the_submodule_settings_again(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    git(project, "config", "--local", "--unset", "diff.ignoreSubmodules")
    git(project, "config", "--local", "submodule.recurse", "true")
    assert sgf(project, "build", "-a", "1", env=fake_ralph.env()).returncode == 0
    assert git(project, "config", "--local", "diff.ignoreSubmodules").strip() == "all"
    assert git(project, "config", "--local", "submodule.recurse").strip() == "false"


def test_a_commondir_that_leads_to_its_own_folder_is_ralphs_and_stays(
    project: Path, sgf: Run
) -> None:
    (project / ".git" / "commondir").write_text(".\n")
    assert sgf(project, "status").returncode == 0
    assert (project / ".git" / "commondir").read_text() == ".\n"
