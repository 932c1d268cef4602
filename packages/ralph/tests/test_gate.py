"""Merge only on PASS: the check command on a fresh checkout of one commit (gate.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralph import gate, proc, workspace
from ralph.git import objects_dir
from ralph.models import Config, Prompt, SandboxKind
from ralph.sandbox import Place
from ralph.sandbox.host import HostSandbox

from .conftest import git


def check(repo: Path, commit: str, command: str) -> gate.Ran:
    config = Config(project=repo, prompt=Prompt("x"), sandbox=SandboxKind.NONE)
    ws = workspace.Workspace(repo.parent / "ws")
    place = Place(ws, repo, "main", objects_dir(repo), None)
    box = HostSandbox(config, dict(os.environ), repo.parent, place=place)
    try:
        with proc.Interrupts() as interrupts:
            return gate.check(box, commit, command, interrupts=interrupts, timeout=60)
    finally:
        box.close()


@pytest.mark.process
def test_the_check_sees_the_commit_not_the_work_tree(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "BROKEN").write_text("uncommitted: not part of the commit\n")
    assert check(repo, first, "test ! -e BROKEN && test -e a.txt").passed
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "break it")
    failed = check(repo, git(repo, "rev-parse", "HEAD"), "test ! -e BROKEN || echo broken; false")
    assert (failed.passed, failed.status, failed.output) == (False, 1, "broken")


@pytest.mark.process
def test_a_long_failure_is_trimmed_to_head_and_tail(repo: Path) -> None:
    commit = git(repo, "rev-parse", "HEAD")
    verdict = check(repo, commit, "seq 1 500; exit 3")
    lines = verdict.output.splitlines()
    assert verdict.status == 3
    assert lines[:2] == ["1", "2"]
    assert lines[20] == "... 420 lines left out ..."
    assert lines[-1] == "500"


def test_trimmed_keeps_short_text_whole() -> None:
    assert gate.trimmed("a\nb") == "a\nb"
    assert gate.trimmed("\n".join(map(str, range(10))), head=2, tail=2) == (
        "0\n1\n... 6 lines left out ...\n8\n9"
    )
