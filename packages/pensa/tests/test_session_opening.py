"""pensa.session's opening rules: which store a command opens, and the catch-up before it works."""

from __future__ import annotations

from pathlib import Path

import pytest

from pensa import session as opening
from pensa.committed import jsonl
from pensa.models import IssueType
from pensa.project import at
from pensa.store import Store
from pensa.tracker import Tracker

from .conftest import Clock


@pytest.mark.parametrize(
    ("files", "write", "expected"),
    [
        ((), False, opening.Choice(on_disk=False, first_use=False)),  # a read creates nothing
        ((), True, opening.Choice(on_disk=True, first_use=False)),
        (("db.sqlite",), False, opening.Choice(on_disk=True, first_use=False)),
        (("issues.jsonl",), False, opening.Choice(on_disk=True, first_use=True)),  # fresh clone
        (("db.sqlite", "issues.jsonl"), False, opening.Choice(on_disk=True, first_use=False)),
    ],
)
def test_the_store_a_command_opens(
    tmp_path: Path, files: tuple[str, ...], write: bool, expected: opening.Choice
) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    for name in files:
        (Path(project.dir) / name).write_text("")
    assert opening.choose(project, write=write)[:2] == expected[:2]
    assert opening.choose(None, write=write) == opening.Choice(on_disk=False, first_use=False)


def test_a_shared_database_is_opened_and_never_a_first_use(tmp_path: Path) -> None:
    project = at(tmp_path / "worktree" / ".pensa")
    project.ensure()
    (Path(project.dir) / "issues.jsonl").write_text("")
    main = tmp_path / "main.sqlite"
    main.write_text("")
    chosen = opening.choose(project, write=False, shared=str(main))
    assert chosen == opening.Choice(on_disk=True, first_use=False, db=str(main))


def test_catch_up_merges_changed_files_and_says_a_first_use(tmp_path: Path, clock: Clock) -> None:
    source = at(tmp_path / "a" / ".pensa")
    source.ensure()
    with Store.open(source.db) as store:
        Tracker(store, now=clock).create("shared", issue_type=IssueType.TASK, actor="a")
        jsonl.export(store, source)
    clone = at(tmp_path / "b" / ".pensa")
    clone.ensure()
    for path in Path(source.dir).glob("*.jsonl"):
        (Path(clone.dir) / path.name).write_bytes(path.read_bytes())
    with Store.open(clone.db) as store:
        said = opening.merge_changed_files(store, clone, first_use=True, write=False)
        assert said == f"pn: first use here: imported 1 issues from {clone.dir}"
        assert (
            opening.merge_changed_files(store, clone, first_use=False, write=False) is None
        )  # in step


def test_a_bad_committed_line_is_said_once_and_the_database_used(
    tmp_path: Path, clock: Clock
) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    Path(project.issues_jsonl).write_text("not json\n")
    with Store.open(project.db) as store:
        said = opening.merge_changed_files(store, project, first_use=False, write=True)
    assert said is not None
    assert said.startswith("pn: warning: .pensa/*.jsonl not merged: issues.jsonl:1:")
