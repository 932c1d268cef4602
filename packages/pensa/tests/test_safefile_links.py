"""pensa never follows a link planted in `.pensa/`: every file goes through one writer that
creates an unguessable temp file (`O_EXCL|O_NOFOLLOW`) and renames it, and a link where
pensa reads or writes is refused with one line (`unsafe_path`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pensa.committed import mergefile
from pensa.errors import UnsafePath
from pensa.safefile import new_file, write_atomically
from pensa.shared import crash
from pensa.store import Store

from .conftest import Pn


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the project, standing for `~/.bashrc`."""
    path = tmp_path / "victim"
    path.write_text("# my shell start-up\n")
    return path


def test_planted_temp_names_are_never_written_through(tmp_path: Path, victim: Path) -> None:
    """The old temp name was `.<name>.<pid>.tmp`: links for every pid near ours change nothing."""
    target = tmp_path / "issues.jsonl"
    for pid in range(max(1, os.getpid() - 50), os.getpid() + 50):
        (tmp_path / f".issues.jsonl.{pid}.tmp").symlink_to(victim)
    assert write_atomically(target, "line\n")
    assert target.read_text() == "line\n"
    assert victim.read_text() == "# my shell start-up\n"
    assert not write_atomically(target, "line\n")  # the same content: not written again


def test_a_link_as_the_target_is_refused_and_left_alone(tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "issues.jsonl"
    target.symlink_to(victim)
    with pytest.raises(UnsafePath, match=r"issues\.jsonl is a symbolic link"):
        write_atomically(target, "line\n")
    assert victim.read_text() == "# my shell start-up\n"
    assert target.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_directory_or_fifo_as_the_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "issues.jsonl").mkdir()
    os.mkfifo(tmp_path / "deps.jsonl")
    for name in ("issues.jsonl", "deps.jsonl"):
        with pytest.raises(UnsafePath, match="not a regular file"):
            write_atomically(tmp_path / name, "x\n")


def test_a_link_as_the_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".pensa").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match=r"\.pensa is a symbolic link"):
        write_atomically(tmp_path / ".pensa" / "issues.jsonl", "x\n")
    assert list(elsewhere.iterdir()) == []


def test_a_new_file_is_pensas_own_whatever_was_planted(tmp_path: Path, victim: Path) -> None:
    (tmp_path / f"db.sqlite.import-{os.getpid()}.tmp").symlink_to(victim)
    made = Path(new_file(str(tmp_path), f"db.sqlite.import-{os.getpid()}."))
    assert made.is_file()
    assert not made.is_symlink()
    assert made.read_bytes() == b""
    assert made.name.startswith(f"db.sqlite.import-{os.getpid()}.")
    assert made.suffix == ".tmp"


@pytest.mark.parametrize("suffix", ["", "-journal", "-wal", "-shm", ".lock"])
def test_the_store_refuses_a_linked_database_journal_or_lock(
    tmp_path: Path, victim: Path, suffix: str
) -> None:
    db = tmp_path / "db.sqlite"
    if suffix:
        Store.open(db).close()
    Path(f"{db}{suffix}").unlink(missing_ok=True)
    Path(f"{db}{suffix}").symlink_to(victim)
    with pytest.raises(UnsafePath, match=f"db.sqlite{suffix} is a symbolic link"):
        Store.open(db)
    assert victim.read_text() == "# my shell start-up\n"


def test_a_crash_log_is_written_through_the_one_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    line = crash.report(ValueError("boom"), ["pn", "x"], version="0")
    (log,) = (tmp_path / "springfield" / "crashes").iterdir()
    assert str(log) in line
    assert "ValueError: boom" in log.read_text()


@pytest.mark.process
@pytest.mark.parametrize(
    "planted", ["issues.jsonl", "deps.jsonl", "deleted.jsonl", "db.sqlite-journal", ".gitignore"]
)
def test_pn_refuses_a_link_in_pensa_with_one_line(
    pn: Pn, repo: Path, victim: Path, planted: str
) -> None:
    assert pn("create", "first", "-t", "task").code == 0
    assert pn("export").code == 0
    path = repo / ".pensa" / planted
    path.unlink(missing_ok=True)
    path.symlink_to(victim)
    for args in (("export",), ("list",), ("create", "second", "-t", "task")):
        done = pn(*args, "--json")
        assert done.code == 1, (args, done.out)
        error = done.error()
        assert error["code"] == "unsafe_path"
        assert f".pensa/{planted} is a symbolic link" in error["error"]
    assert victim.read_text() == "# my shell start-up\n"


@pytest.mark.process
def test_pn_refuses_a_linked_pensa_directory(pn: Pn, repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".pensa").symlink_to(elsewhere)
    done = pn("create", "x", "-t", "task", "--json")
    assert done.code == 1
    assert done.error()["code"] == "unsafe_path"
    assert list(elsewhere.iterdir()) == []


@pytest.mark.process
def test_pn_init_writes_gitattributes_through_the_one_writer(
    pn: Pn, repo: Path, victim: Path
) -> None:
    (repo / ".gitattributes").symlink_to(victim)
    done = pn("init", "--json")
    assert done.code == 1
    assert done.error()["code"] == "unsafe_path"
    assert victim.read_text() == "# my shell start-up\n"


def test_the_merge_driver_refuses_a_linked_result(tmp_path: Path) -> None:
    base, theirs, empty = tmp_path / "base", tmp_path / "theirs", tmp_path / "empty"
    for path in (base, theirs, empty):
        path.write_text("")
    ours = tmp_path / ".merge_file_ours"
    ours.symlink_to(empty)  # read as it is (no lines), never written through
    with pytest.raises(UnsafePath, match=r"\.merge_file_ours is a symbolic link"):
        mergefile.merge_paths(str(base), str(ours), str(theirs), ".pensa/deps.jsonl")
    assert empty.read_text() == ""
