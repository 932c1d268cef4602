"""pensa.shared.safefile, the one link-refusing writer of pn, ralph and sgf: what it refuses,
in the words of the tool that asked, and what it trusts (a `root`, or the folder as named)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pensa.shared.safefile import LINK, NOT_A_FOLDER, SafeFiles, kind

PRECIOUS = b"precious\n"


class Refused(Exception):
    """A tool's refusal, as the writer builds it."""

    def __init__(self, path: str, *, what: str) -> None:
        self.path, self.what = path, what
        super().__init__(f"{path} is {what}")


FILES = SafeFiles(Refused)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "victim"
    path.parent.mkdir()
    path.write_bytes(PRECIOUS)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.mark.parametrize("kind_of", ["fifo", "folder", "link"])
def test_replace_refuses_anything_but_a_regular_file_in_the_callers_words(
    root: Path, victim: Path, kind_of: str
) -> None:
    target = root / "target"
    if kind_of == "fifo":
        os.mkfifo(target)
    elif kind_of == "folder":
        target.mkdir()
    else:
        target.symlink_to(victim)
    with pytest.raises(Refused) as caught:
        FILES.replace(target, b"agent", root=root)
    assert caught.value.path == str(target)
    expected = {"fifo": "a FIFO (named pipe), not a regular file", "link": LINK}
    assert caught.value.what == expected.get(kind_of, "a directory, not a regular file")
    assert victim.read_bytes() == PRECIOUS
    assert sorted(p.name for p in root.iterdir()) == ["target"]  # no temporary left


def test_below_a_root_no_folder_may_be_a_link_and_missing_ones_are_made(
    root: Path, victim: Path
) -> None:
    (root / "logs").symlink_to(victim.parent)
    with pytest.raises(Refused) as caught:
        FILES.append(root / "logs" / "victim", root=root)
    assert (caught.value.path, caught.value.what) == (str(root / "logs"), LINK)
    (root / "file").write_text("in the way")
    with pytest.raises(Refused, match=f"{root / 'file'} is {NOT_A_FOLDER}"):
        FILES.replace(root / "file" / "x", b"agent", root=root)
    assert FILES.replace(root / "a" / "b" / "c.txt", b"x", root=root).read_bytes() == b"x"
    assert victim.read_bytes() == PRECIOUS


def test_the_root_itself_and_a_folder_named_without_root_are_the_callers_to_trust(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real)  # e.g. a cache folder the user keeps elsewhere
    FILES.replace(tmp_path / "linked" / "a", b"1", root=tmp_path / "linked")
    with FILES.append(tmp_path / "linked" / "b") as f:
        f.write(b"2")
    assert (real / "a").read_bytes() == b"1"
    assert (real / "b").read_bytes() == b"2"
    with pytest.raises(Refused, match="linked is a symbolic link"):
        FILES.replace(tmp_path / "linked" / "c", b"3", root=tmp_path)


def test_update_writes_only_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    assert FILES.update(path, b"one\n")
    os.utime(path, ns=(1, 1))
    assert not FILES.update(path, b"one\n")
    assert path.stat().st_mtime_ns == 1
    assert FILES.update(path, b"two\n")
    assert path.read_bytes() == b"two\n"


def test_create_never_overwrites_and_refuses_a_link(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(Refused, match="is a symbolic link"):
        FILES.create(tmp_path / "link", b"agent")
    (tmp_path / "taken").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        FILES.create(tmp_path / "taken", b"agent")
    assert FILES.create(tmp_path / "new", b"x", mode=0o600).stat().st_mode & 0o777 == 0o600
    assert victim.read_bytes() == PRECIOUS
    assert (tmp_path / "taken").read_bytes() == b"mine"


def test_a_fifo_opened_in_place_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for opener in (FILES.append, FILES.truncate):
        with pytest.raises(Refused, match="a FIFO"):
            opener(tmp_path / "fifo")


def test_a_folder_outside_the_root_is_a_mistake_of_the_caller(root: Path) -> None:
    with pytest.raises(ValueError, match="is not below"):
        FILES.folder(root.parent / "elsewhere", root=root)


def test_kind_names_what_stands_there() -> None:
    assert kind(os.lstat("/dev/null").st_mode) == "a character device, not a regular file"
    assert kind(os.lstat("/").st_mode) == "a directory, not a regular file"
