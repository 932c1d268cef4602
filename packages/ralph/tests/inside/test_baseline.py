"""The record of the iteration's start that ralph writes and the guard reads (baseline.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ralph.inside import baseline

from ..conftest import git


@pytest.mark.process
def test_status_paths_read_renames_odd_names_and_leave_the_sentinels_out(repo: Path) -> None:
    (repo / 'a b\n"c".txt').write_text("x\n")
    (repo / ".ralph-complete").write_text("loop\n")
    git(repo, "mv", "a.txt", "moved.txt")
    out = subprocess.run(
        ["git", *baseline.STATUS], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert sorted(baseline.status_paths(out)) == ['a b\n"c".txt', "moved.txt"]


def test_a_written_record_reads_back(tmp_path: Path) -> None:
    record = baseline.Baseline("abc", ("x.py",), {"refs/heads/main": "abc"})
    path = tmp_path / baseline.FILE
    path.write_text(record.dumps())
    assert baseline.load(path) == record


@pytest.mark.parametrize(
    "text",
    ["", "[]", "not json", json.dumps({"head": 1, "dirty": [], "refs": {}}),
     json.dumps({"head": "", "dirty": [1], "refs": {}}), json.dumps({"head": "", "dirty": []})],
)  # fmt: skip
def test_a_record_that_is_not_ralphs_is_no_record(tmp_path: Path, text: str) -> None:
    path = tmp_path / baseline.FILE
    path.write_text(text)
    assert baseline.load(path) is None
    assert baseline.load(tmp_path / "missing.json") is None
