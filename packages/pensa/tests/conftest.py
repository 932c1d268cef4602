"""Fixtures for pensa's tests: a project in a git repo, pn as a real program, a library."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pensa.graph import Graph
from pensa.schema import MIGRATIONS
from pensa.store import Store
from pensa.tracker import Tracker

BIN = Path(sys.executable).parent
PN = str(BIN / "pn")


@dataclass
class Result:
    """A finished `pn` run."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, str]:
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        parsed: dict[str, str] = json.loads(lines[0])
        return parsed


Pn = Callable[..., Result]


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return its stdout."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def committed(folder: Path, kind: str = "issues") -> str:
    """Every line the committed files of one kind in `folder` (a `.pensa`) hold: its shards
    and its own file (`pensa.committed.disk`), in reading order."""
    from pensa.committed.disk import kind_of, ordered

    names = ordered(p.name for p in folder.iterdir() if kind_of(p.name) == f"{kind}.jsonl")
    return "".join((folder / name).read_text() for name in names)


def rewrite(path: Path, text: str) -> None:
    """Give `path` new content as git does (a new file in its place, which pn notices at once:
    `pensa.committed.disk.is_stale`), not by writing into it."""
    new = path.with_name(f".{path.name}.new")
    new.write_text(text)
    new.replace(path)


def committed_at(repo: Path, rev: str = "HEAD", kind: str = "issues") -> str:
    """What `committed` reads, as commit `rev` of the repository `repo` holds it."""
    from pensa.committed.disk import kind_of, ordered

    listed = git(repo, "ls-tree", "--name-only", f"{rev}:.pensa").split()
    names = ordered(n for n in listed if kind_of(n) == f"{kind}.jsonl")
    return "".join(git(repo, "show", f"{rev}:.pensa/{name}") for name in names)


def database_at_version(
    path: Path, version: int, insert: str, rows: Sequence[tuple[object, ...]] = ((),)
) -> Path:
    """`path`, a database as the first `version` migrations left it, holding `rows`."""
    conn = sqlite3.connect(path, isolation_level=None)
    for number, migration in enumerate(MIGRATIONS[:version], start=1):
        migration(conn)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.executemany(insert, rows)
    conn.close()
    return path


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    """An empty git repository."""
    return make_repo("repo", commit=False)


@pytest.fixture
def pn(repo: Path) -> Pn:
    """Run the real `pn` console script in `repo` (or `cwd=`); returns code, stdout, stderr."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
        full_env = {**os.environ, "PN_ACTOR": "agent-1", "PATH": f"{BIN}:{os.environ['PATH']}"}
        full_env.update(env or {})
        done = subprocess.run(
            [PN, *args],
            cwd=cwd or repo,
            env=full_env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
            timeout=60,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def inited(repo: Path, pn: Pn, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository set up by `pn init` and committed, with pn on the PATH for the hooks."""
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("PN_ACTOR", "agent-1")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    done = pn("init")
    assert done.code == 0, done.err
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pensa")
    return repo


@pytest.fixture
def pnj(pn: Pn) -> Callable[..., Any]:
    """Run `pn ... --json`, assert success, and return the parsed stdout."""

    def run(*args: str, **kwargs: Any) -> Any:
        result = pn(*args, "--json", **kwargs)
        assert result.code == 0, result.err
        return result.json()

    return run


class Clock:
    """A settable clock for library tests."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh database file."""
    with Store.open(tmp_path / "db.sqlite") as opened:
        yield opened


@pytest.fixture
def tracker(store: Store, clock: Clock) -> Tracker:
    return Tracker(store, now=clock)


@pytest.fixture
def graph(store: Store, clock: Clock) -> Graph:
    return Graph(store, now=clock)
