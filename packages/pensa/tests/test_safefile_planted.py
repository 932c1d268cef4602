"""A FIFO, a device, a socket or a huge file planted where pensa reads never hangs pn or makes
it read without end: it is refused with one line naming the path (`unsafe_path`), before
anything is read (`safefile.read_regular`, `refuse_unsafe`).

Without the defence a FIFO at `.pensa/issues.jsonl` hung `pn list` and the pre-commit hook,
and `/dev/zero` there had pn read past 4 GB: each run here is bounded in time and memory, so
such a regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pensa.errors import InvalidData, UnsafePath
from pensa.safefile import read_regular, refuse_unsafe

from .conftest import BIN, PN, Pn, git

# Enough for any pn run; a read of /dev/zero runs into it within a second.
MEMORY_LIMIT = 1 << 30
TIME_LIMIT = 30


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_bounded(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `argv` with pn on the PATH, within TIME_LIMIT seconds and MEMORY_LIMIT bytes."""
    env = {**os.environ, "PN_ACTOR": "agent-1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=TIME_LIMIT,
        preexec_fn=_bounded,  # a resource limit; the test starts no threads
    )


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero_device(path: Path) -> None:
    """A character device reading as /dev/zero, made with mknod as a root agent can; where
    this process may not, a link to /dev/zero stands in (refused as a link)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        path.symlink_to("/dev/zero")


PLANTS: dict[str, Callable[[Path], None]] = {"fifo": _fifo, "zero device": _zero_device}


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        yield path
    finally:
        server.close()


# --- the reader --------------------------------------------------------------------------


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_the_reader_refuses_a_fifo_or_a_device_without_reading(tmp_path: Path, plant: str) -> None:
    path = tmp_path / "issues.jsonl"
    PLANTS[plant](path)
    with pytest.raises(UnsafePath, match=r"issues\.jsonl is (a FIFO|a character device|a sym)"):
        read_regular(str(path))
    with pytest.raises(UnsafePath, match=r"issues\.jsonl is "):
        refuse_unsafe([str(path)])


def test_the_reader_refuses_a_socket_and_a_directory(tmp_path: Path, unix_socket: Path) -> None:
    with pytest.raises(UnsafePath, match="sock is a socket, not a regular file"):
        read_regular(str(unix_socket))
    (tmp_path / "dir").mkdir()
    with pytest.raises(UnsafePath, match="dir is a directory, not a regular file"):
        read_regular(str(tmp_path / "dir"))


def test_the_reader_reads_a_file_within_the_cap_and_refuses_a_bigger_one(tmp_path: Path) -> None:
    path = tmp_path / "issues.jsonl"
    assert read_regular(str(path)) is None
    path.write_bytes(b"x" * 100)
    assert read_regular(str(path), limit=100) == b"x" * 100
    with pytest.raises(InvalidData, match="larger than"):
        read_regular(str(path), limit=99)
    os.truncate(path, 600 << 20)  # sparse: nothing is written, and nothing may be read
    with pytest.raises(InvalidData, match=r"issues\.jsonl is larger than 512 MiB"):
        read_regular(str(path))


# --- pn on the host ----------------------------------------------------------------------


@pytest.fixture
def exported(repo: Path, pn: Pn) -> Path:
    """A project with an issue, a dependency and its files written."""
    a = pn("q", "a", "-t", "task").out.strip()
    b = pn("q", "b", "-t", "task").out.strip()
    assert pn("dep", "add", b, a).code == 0
    assert pn("export").code == 0
    return repo


@pytest.mark.process
@pytest.mark.parametrize("plant", sorted(PLANTS))
@pytest.mark.parametrize("planted", ["issues.jsonl", "deps.jsonl", "db.sqlite-journal"])
@pytest.mark.parametrize("command", ["list", "ready", "doctor", "export", "sync"])
def test_pn_refuses_a_fifo_or_device_in_pensa_with_one_line(
    exported: Path, planted: str, plant: str, command: str
) -> None:
    path = exported / ".pensa" / planted
    path.unlink(missing_ok=True)
    PLANTS[plant](path)
    done = run_bounded([PN, command, "--json"], exported)
    assert done.returncode == 1, (done.stdout, done.stderr)
    error = json.loads(done.stderr)
    assert error["code"] == "unsafe_path"
    assert f".pensa/{planted} is " in error["error"]


# Files git does not track: one it tracks, replaced, already fails git's own diff in the
# pre-commit framework before pn runs.
@pytest.mark.process
@pytest.mark.parametrize("plant", sorted(PLANTS))
@pytest.mark.parametrize("planted", ["deleted.jsonl", "db.sqlite-journal"])
def test_the_pre_commit_hook_refuses_a_fifo_or_device_and_the_commit_stops(
    inited: Path, pn: Pn, plant: str, planted: str
) -> None:
    assert pn("q", "tracked", "-t", "task").code == 0
    path = inited / ".pensa" / planted
    path.unlink(missing_ok=True)
    PLANTS[plant](path)
    (inited / "code.py").write_text("x = 1\n")
    git(inited, "add", "code.py")
    done = run_bounded(["git", "commit", "-qm", "code"], inited)
    assert done.returncode != 0
    assert f".pensa/{planted} is " in done.stdout + done.stderr
    assert git(inited, "log", "--format=%s", "-1") == "pensa\n"  # nothing was committed


@pytest.mark.process
@pytest.mark.parametrize("name", [".gitattributes", ".pre-commit-config.yaml"])
def test_doctor_and_init_refuse_a_fifo_as_a_set_up_file(inited: Path, name: str) -> None:
    path = inited / name
    path.unlink()
    os.mkfifo(path)
    for command in ("doctor", "init"):
        done = run_bounded([PN, command, "--json"], inited)
        assert done.returncode == 1, (command, done.stdout)
        assert json.loads(done.stderr)["code"] == "unsafe_path"
        assert f"{name} is a FIFO" in done.stderr


@pytest.mark.process
def test_a_write_after_a_fifo_as_gitattributes_neither_hangs_nor_stages(inited: Path) -> None:
    path = inited / ".gitattributes"
    path.unlink()
    os.mkfifo(path)
    done = run_bounded([PN, "q", "still works", "-t", "task"], inited)
    assert done.returncode == 0, done.stderr
