"""sgf's host writes inside the project never follow a link; a folder where a file belongs is
one line too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sgf import proc, safefile
from sgf.errors import PathRefused
from sgf.loop import prompts, relaunch, runs
from sgf.loop.loops import Launch
from sgf.stages import Stage

from .conftest import FakeRalph, Git, Run

PRECIOUS = "precious\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".sgf").mkdir(parents=True)
    return path


def test_replace_makes_missing_folders_and_leaves_no_temporary(root: Path) -> None:
    path = safefile.replace(root / ".sgf" / "a" / "b.txt", b"x", root=root)
    assert path.read_bytes() == b"x"
    assert [p.name for p in path.parent.iterdir()] == ["b.txt"]


def test_a_linked_file_is_refused_in_one_line(root: Path, victim: Path) -> None:
    link = root / ".sgf" / "file"
    link.symlink_to(victim)
    with pytest.raises(PathRefused) as caught:
        safefile.replace(link, b"agent", root=root)
    assert str(caught.value).startswith(f"refusing to write {link}: it is a symbolic link")
    assert "\n" not in str(caught.value)
    assert victim.read_text() == PRECIOUS


def test_a_linked_folder_on_the_way_is_refused(root: Path, victim: Path) -> None:
    (root / ".sgf" / "logs").symlink_to(victim.parent)
    with pytest.raises(PathRefused, match=r"\.sgf/logs: it is a symbolic link"):
        safefile.append(root / ".sgf" / "logs" / "victim.txt", root=root)
    assert victim.read_text() == PRECIOUS


@pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
def test_append_and_truncate_refuse_anything_but_a_plain_file(
    root: Path, victim: Path, kind: str
) -> None:
    path = root / ".sgf" / "log"
    if kind == "link":
        path.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    for opener in (safefile.append, safefile.truncate):
        with pytest.raises(PathRefused, match=f"refusing to write {path}"):
            opener(path, root=root)
    assert victim.read_text() == PRECIOUS


def test_a_folder_where_the_pid_file_belongs_is_one_line(root: Path) -> None:
    runs.pid_path(root, "build-1").mkdir(parents=True)
    with (
        pytest.raises(PathRefused, match=r"build-1\.pid: it is a directory, not a regular file"),
        runs.pid_file(root, "build-1", os.getpid()),
    ):
        pass


@pytest.mark.parametrize(
    "write",
    [
        lambda root: runs.pid_file(root, "build-1", os.getpid()).__enter__(),
        lambda root: runs.record(root, runs.Outcome("build-1", "a", "b", 0, "complete")),
        lambda root: relaunch.save(root, "build-1", Launch(Stage.BUILD)),
        lambda root: prompts.write(root, "build", "text"),
    ],
    ids=["pid file", "history", "relaunch", "assembled prompt"],
)
def test_every_bookkeeping_file_refuses_a_link(root: Path, victim: Path, write: object) -> None:
    targets = [
        runs.pid_path(root, "build-1"),
        root / runs.HISTORY,
        relaunch.launch_path(root, "build-1"),
        prompts.assembled(root, "build"),
    ]
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(victim)
    assert callable(write)
    with pytest.raises(PathRefused):
        write(root)
    assert victim.read_text() == PRECIOUS


@pytest.mark.process
def test_sgf_build_with_a_file_where_the_run_folder_belongs_is_one_line(
    project: Path, sgf: Run, fake_ralph: FakeRalph, isolated_home: Path, git: Git
) -> None:
    (project / ".sgf" / "run").write_text("in the way\n")
    git(project, "add", "-f", ".sgf/run")
    git(project, "commit", "-qm", "a file where sgf keeps its PID files")
    done = sgf(project, "build", "-a", "1", env=fake_ralph.env())
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: refusing to write {project / '.sgf' / 'run'}: it is not a folder (sgf never "
        "writes through a link, which an agent may have planted); look at it, remove it, run again"
    ]
    assert not (isolated_home / ".cache" / "springfield" / "crashes").exists()


def test_a_restart_never_writes_its_output_through_a_link(tmp_path: Path, victim: Path) -> None:
    output = tmp_path / "restarts" / "build-1.out"
    output.parent.mkdir()
    output.symlink_to(victim)
    with pytest.raises(PathRefused):
        proc.spawn_detached(["true"], cwd=tmp_path, env={}, output=output)
    assert victim.read_text() == PRECIOUS


def test_create_refuses_a_link_and_never_overwrites_a_file(root: Path, victim: Path) -> None:
    link = root / ".sgf" / "new"
    link.symlink_to(victim)
    with pytest.raises(PathRefused, match="it is a symbolic link"):
        safefile.create(link, b"agent")
    taken = root / ".sgf" / "taken"
    taken.write_text("mine")
    with pytest.raises(FileExistsError):
        safefile.create(taken, b"agent")
    assert victim.read_text() == PRECIOUS
    assert taken.read_text() == "mine"
