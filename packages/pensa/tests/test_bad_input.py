"""Every bad byte, file or disk is a one-line error, never a traceback.

The mount cases need root (CI runs as root); they use real read-only binds and a real
tiny tmpfs, not chmod, which root ignores.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pensa.committed.disk import file_name

from .conftest import PN, Pn, Result, rewrite

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def one_line_error(done: Result, *, as_json: bool) -> dict[str, str] | str:
    code, err = done.code, done.err
    assert code == 1, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if as_json:
        parsed: dict[str, str] = json.loads(lines[0])
        return parsed
    assert lines[0].startswith("error: ")
    return lines[0]


def run_bytes(
    repo: Path, *args: bytes, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PN.encode(), *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_an_argument_that_is_not_utf8_is_one_line(repo: Path, as_json: bool) -> None:
    args = [b"create", b"bad \xff", b"-t", b"task", *([b"--json"] if as_json else [])]
    done = run_bytes(repo, *args)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    expected = "argument 2 (bad \\xff) is not valid UTF-8"
    if as_json:
        assert json.loads(done.stderr) == {"error": expected, "code": "invalid_argument"}
    else:
        assert done.stderr == f"error: {expected}\n"


@pytest.mark.parametrize("name", ["PN_ACTOR", "PN_DIR"])
def test_an_environment_variable_that_is_not_utf8_is_one_line(repo: Path, name: str) -> None:
    env = {k: v for k, v in os.environ.items()}
    environb = {k.encode(): v.encode() for k, v in env.items()}
    environb[name.encode()] = b"a\xff"
    done = subprocess.run(
        [PN, "list", "--json"], cwd=repo, env=environb, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert json.loads(done.stderr) == {
        "error": f"environment variable {name} is not valid UTF-8",
        "code": "invalid_argument",
    }


@pytest.mark.parametrize("command", ["export", "import", "sync"])
def test_a_directory_where_a_jsonl_file_belongs_is_one_line(
    repo: Path, pn: Pn, command: str
) -> None:
    pn("q", "x", "-t", "task")
    assert pn("export").code == 0
    deps = repo / ".pensa" / "deps.jsonl"
    deps.unlink()
    deps.mkdir()
    error = one_line_error(pn(command, "--json"), as_json=True)
    assert isinstance(error, dict)
    assert "deps.jsonl is a directory" in error["error"]


def test_a_bad_committed_line_warns_but_does_not_stop_reads_or_claims(repo: Path, pn: Pn) -> None:
    issue = pn("q", "x", "-t", "task").out.strip()
    assert pn("export").code == 0
    path = repo / ".pensa" / file_name("issues.jsonl", issue)
    rewrite(path, path.read_text() + "{not json\n")  # (as a pull or checkout writes it)
    done = pn("claim-next", "--json")
    assert done.code == 0, done.err
    assert done.json()["title"] == "x"
    assert f"pn: warning: .pensa/*.jsonl not merged: {path.name}:2: not valid JSON" in done.err
    assert one_line_error(pn("sync"), as_json=False)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="real mounts need root")


@contextlib.contextmanager
def mounted(*argv: str) -> Iterator[None]:
    subprocess.run(["mount", *argv], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["umount", argv[-1]], check=False, capture_output=True)


@needs_root
def test_a_read_only_mount_is_one_line_for_every_write(tmp_path: Path, pn: Pn) -> None:
    source, view = tmp_path / "src", tmp_path / "ro"
    source.mkdir()
    view.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=source, check=True)
    assert pn("q", "x", "-t", "task", cwd=source).code == 0
    assert pn("export", cwd=source).code == 0
    with mounted("--bind", str(source), str(view)), mounted("-o", "remount,ro,bind", str(view)):
        assert pn("list", cwd=view).code == 0  # reads still work
        for args in (("create", "y", "-t", "task"), ("init",), ("import",), ("doctor", "--fix")):
            error = one_line_error(pn(*args, "--json", cwd=view), as_json=True)
            assert isinstance(error, dict)
            assert error["code"] == "read_only", (args, error)


@needs_root
def test_a_full_disk_is_one_line(tmp_path: Path, pn: Pn) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=160k", "tmpfs", str(disk)):
        subprocess.run(["git", "init", "-q"], cwd=disk, check=True)
        long = "x" * 2000
        last = None
        for n in range(200):
            last = pn(
                "create", f"{n} {long}", "-t", "task", "--description", long, "--json", cwd=disk
            )
            if last.code != 0:
                break
        assert last is not None
        error = one_line_error(last, as_json=True)
        assert isinstance(error, dict)
        assert error["code"] in ("storage_error", "read_only"), error
        assert "full" in error["error"] or "disk" in error["error"], error
        filler = disk / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as f:
            f.write(b"\0" * 1_000_000)
        assert "Traceback" not in pn("export", "--json", cwd=disk).err
