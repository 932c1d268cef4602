"""ralph's host writes never follow a link: each refusal is one line naming the path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ralph import claude_home, safefile, sentinel, workspace
from ralph.errors import LinkRefused
from ralph.record import Record
from ralph.sandbox import orphans

PRECIOUS = "precious\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text(PRECIOUS)
    return path


@pytest.fixture
def linked(tmp_path: Path, victim: Path) -> Path:
    """A link in a project folder, pointing at the victim."""
    folder = tmp_path / "project"
    folder.mkdir()
    link = folder / "target"
    link.symlink_to(victim)
    return link


def test_replace_writes_a_new_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    path = safefile.replace(folder / "a.json", b"{}\n", mode=0o600)
    assert path.read_bytes() == b"{}\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in folder.iterdir()] == ["a.json"]


def test_replace_refuses_a_link_in_one_line(linked: Path, victim: Path) -> None:
    with pytest.raises(LinkRefused) as caught:
        safefile.replace(linked, b"agent")
    assert str(caught.value).startswith(f"refusing to write {linked}: it is a symbolic link")
    assert "\n" not in str(caught.value)
    assert victim.read_text() == PRECIOUS
    assert linked.is_symlink()


def test_create_refuses_a_link(linked: Path, victim: Path) -> None:
    with pytest.raises(LinkRefused):
        safefile.create(linked, b"agent")
    assert victim.read_text() == PRECIOUS


@pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
def test_append_refuses_anything_but_a_plain_file(
    tmp_path: Path, linked: Path, victim: Path, kind: str
) -> None:
    path = linked
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    elif kind == "folder":
        path = tmp_path / "folder"
        path.mkdir()
    with pytest.raises(LinkRefused, match=f"refusing to write {path}"):
        safefile.append(path)  # a FIFO would block this open forever without O_NONBLOCK
    assert victim.read_text() == PRECIOUS


def test_append_adds_to_a_plain_file(tmp_path: Path) -> None:
    path = tmp_path / "log"
    for line in (b"one\n", b"two\n"):
        with safefile.append(path) as f:
            f.write(line)
    assert path.read_bytes() == b"one\ntwo\n"


def test_the_run_record_refuses_a_link(linked: Path, victim: Path) -> None:
    with pytest.raises(LinkRefused):
        Record(linked, loop_id="x").write("start")
    assert victim.read_text() == PRECIOUS


def test_the_claude_config_refuses_a_link(tmp_path: Path, victim: Path) -> None:
    home = tmp_path / "run-home"
    home.mkdir()
    (home / ".claude.json").symlink_to(victim)
    with pytest.raises(LinkRefused):
        claude_home.write(home, host_home=tmp_path / "nobody", project=tmp_path)
    assert victim.read_text() == PRECIOUS


def test_an_agent_record_is_written_without_following_a_link(tmp_path: Path) -> None:
    path = orphans.record(os.getpid(), where=tmp_path)
    assert json.loads(path.read_text())["pgid"] == os.getpid()
    orphans.forget(path)


def test_the_workspace_lock_refuses_a_link(tmp_path: Path) -> None:
    made = tmp_path / "made-by-the-lock"
    ws = workspace.Workspace(tmp_path / "ws")
    ws.home.mkdir()
    (ws.home / "lock").symlink_to(made)
    with pytest.raises(LinkRefused), ws.locked():
        pass
    assert not made.exists()


def test_a_sentinel_behind_a_linked_folder_is_nobodys(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / sentinel.COMPLETE).write_text("")
    (project / "escape").symlink_to(outside)
    assert sentinel.find(project) == []
    assert sentinel.clear(project, "loop") == 0
    assert (outside / sentinel.COMPLETE).exists()


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_sentinel_that_is_a_fifo_or_a_link_is_nobodys(
    tmp_path: Path, victim: Path, kind: str
) -> None:
    path = tmp_path / sentinel.COMPLETE
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(victim)
    assert sentinel.owner(path) is None  # the FIFO open does not block
    assert not sentinel.take(tmp_path, "loop")
    assert victim.read_text() == PRECIOUS
