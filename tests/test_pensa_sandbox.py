"""A hostile agent in the real Docker sandbox attacks the project's `.pensa/`; pn on the host
holds.

The agent works in a repository of its own, but it claims in the project's one database, so
the project's `.pensa/` folder is in its container (at /ralph/pensa). The agent (ralph's
scripted fake agent, run by ralph in a container) plants links and a trigger there. Then the
human does what humans do: `git commit` (the pre-commit hook runs `pn export`), `pn list`,
`pn close`, `pn doctor`. A file outside the project stands for `~/.bashrc`: nothing may be
written through to it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pensa import foreign

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

AGENT = Path(__file__).resolve().parents[1] / "packages/ralph/tests/agents/fake_agent.py"
BIN = Path(sys.executable).parent
SHARED = "/ralph/pensa"  # the project's .pensa/ in the agent's container
START_UP = "# the human's shell start-up file\n"
TRIGGER = (
    "CREATE TRIGGER rewrite AFTER UPDATE ON issues BEGIN "
    "UPDATE issues SET title = 'pwned' WHERE id != NEW.id; END"
)


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """A program as the human runs it on the host, pn and pre-commit on PATH."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PN_ACTOR": "human"}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def tracked(make_repo: Callable[..., Path], tmp_path: Path) -> Path:
    """A project set up with `pn init` (hooks installed), two issues committed, a remote."""
    project = make_repo("project")
    bare = tmp_path / "remote.git"
    assert run(tmp_path, "git", "init", "-q", "--bare", str(bare)).returncode == 0
    assert run(project, "git", "remote", "add", "origin", str(bare)).returncode == 0
    done = run(project, "pn", "init")
    assert done.returncode == 0, done.stderr
    for title in ("first", "second"):
        assert run(project, "pn", "create", title, "-t", "task").returncode == 0
    (project / "tools").mkdir()
    shutil.copy(AGENT, project / "tools" / "fake_agent.py")
    (project / "tools" / "fake_agent.py").chmod(0o755)
    assert run(project, "git", "add", "-A").returncode == 0
    done = run(project, "git", "commit", "-qm", "tracker")
    assert done.returncode == 0, done.stdout + done.stderr
    assert run(project, "git", "push", "-q", "-u", "origin", "main").returncode == 0
    return project


@pytest.fixture
def victim(isolated_home: Path) -> Path:
    """The human's shell start-up file, outside the project."""
    path = isolated_home / ".bashrc"
    path.write_text(START_UP)
    return path


def agent_runs(project: Path, base_image: str, *commands: str) -> str:
    """One ralph iteration in the Docker sandbox whose agent runs `commands` in a shell;
    what it printed."""
    steps: list[list[object]] = [["sh", command] for command in commands]
    steps += [["write", ".ralph-complete", "$RALPH_LOOP_ID"], ["result"]]
    env = {
        **os.environ,
        "RALPH_SANDBOX": "docker",
        "RALPH_TEMPLATE": base_image,
        "RALPH_COMMAND": str(project / "tools" / "fake_agent.py"),
        "RALPH_AUTO_PUSH": "false",
        "PATH": f"{BIN}:{os.environ['PATH']}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "ralph", "-a", "1", json.dumps({"default": steps})],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def next_pid(project: Path) -> int:
    return int(run(project, "sh", "-c", "echo $$").stdout)


@pytest.mark.parametrize(
    "plant",
    [
        "ln -s {victim} {shared}/.issues.jsonl.4242.tmp",  # where an old writer wrote through
        "rm -f {shared}/deps.jsonl; ln -s {victim} {shared}/deps.jsonl",
        "rm -f {shared}/db.sqlite-journal; ln -s {victim} {shared}/db.sqlite-journal",
        "mkfifo {shared}/.gitignore.new && mv {shared}/.gitignore.new {shared}/.gitignore",
    ],
)
def test_nothing_can_be_planted_beside_the_shared_database(
    tracked: Path, victim: Path, base_image: str, plant: str
) -> None:
    """Only the database's own files are in the container, each a mount of its own: a link,
    a FIFO or any new file in the project's `.pensa/` cannot be made, nor one of them
    replaced. The human's git and pn then work as ever."""
    said = agent_runs(tracked, base_image, plant.format(victim=victim, shared=SHARED))
    assert "sh rc=1" in said, said  # refused in there
    pensa = tracked / ".pensa"
    assert [p for p in pensa.rglob("*") if p.is_symlink() or not p.is_file()] == []
    assert run(tracked, "git", "status", "--porcelain").returncode == 0
    assert run(tracked, "pn", "create", "rm -rf ~ # a title", "-t", "task").returncode == 0
    (tracked / "work.txt").write_text("the human's work\n")
    run(tracked, "git", "add", "work.txt")
    done = run(tracked, "git", "commit", "-qm", "the human's commit")
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == START_UP
    listed = run(tracked, "pn", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 3


def test_a_trigger_planted_in_the_database_never_runs_on_the_host(
    tracked: Path, base_image: str
) -> None:
    db = tracked / ".pensa" / "db.sqlite"
    ids = dict(sqlite3.connect(db).execute("SELECT title, id FROM issues").fetchall())
    # the journal stays (PERSIST), as pensa keeps it: the folder takes no new file
    code = (
        f"import sqlite3; c = sqlite3.connect('{SHARED}/db.sqlite'); "
        f"c.execute('PRAGMA journal_mode = PERSIST'); c.execute({TRIGGER!r}); c.commit()"
    )
    packed = base64.b64encode(code.encode()).decode()  # the agent's code, minus shell quoting
    agent_runs(tracked, base_image, f"echo {packed} | base64 -d | python3")

    done = run(tracked, "pn", "close", ids["first"], "--reason", "done")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "trigger rewrite on issues" in line
    titles = sorted(t for (t,) in sqlite3.connect(db).execute("SELECT title FROM issues"))
    assert titles == ["first", "second"]

    doctor = run(tracked, "pn", "doctor")
    assert doctor.returncode == 0
    assert "[foreign_schema] trigger rewrite on issues" in doctor.stdout
    assert "no problems found" not in doctor.stdout
    assert run(tracked, "pn", "doctor", "--fix").returncode == 0
    assert run(tracked, "pn", "close", ids["first"], "--reason", "done").returncode == 0
    shown = {
        i["title"]: i for i in json.loads(run(tracked, "pn", "list", "--all", "--json").stdout)
    }
    assert shown["first"]["status"] == "closed"
    assert shown["second"]["status"] == "open"
    triggers = sqlite3.connect(db).execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
    )
    ours = [name for kind, name, _, _ in foreign.SCHEMA if kind == "trigger"]
    assert [n for (n,) in triggers] == ours  # pensa's own, as its schema check knows them


def test_a_database_marked_older_is_migrated_on_the_host_with_pensas_own_sql_only(
    tracked: Path, base_image: str
) -> None:
    """The agent marks the shared database as one an older pn made (so the host's next pn
    migrates it) and plants on `issues` an index and a column whose name is SQL. The
    migration rebuilds the table from pensa's own statements: nothing read from the
    database runs, the planted things go with the old table, the issues stay."""
    db = tracked / ".pensa" / "db.sqlite"
    code = (
        f"import sqlite3; c = sqlite3.connect('{SHARED}/db.sqlite', isolation_level=None); "
        "c.execute('PRAGMA journal_mode = PERSIST'); "
        "c.execute('CREATE INDEX sneaky ON issues (title)'); "
        """c.execute('ALTER TABLE issues ADD COLUMN "x) SELECT 1; --" TEXT'); """
        "c.execute(\"DELETE FROM migrations WHERE name = 'm011_id_index'\"); "
        "c.execute('PRAGMA user_version = 10')"
    )
    packed = base64.b64encode(code.encode()).decode()  # the agent's code, minus shell quoting
    # (ralph's own pn on the host, when the iteration ends, may be the one that migrates)
    agent_runs(tracked, base_image, f"echo {packed} | base64 -d | python3")

    listed = run(tracked, "pn", "list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(i["title"] for i in json.loads(listed.stdout)) == ["first", "second"]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone() == (11,)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'sneaky'").fetchall() == []
    assert "x) SELECT" not in str(conn.execute("PRAGMA table_info(issues)").fetchall())
    doctor = run(tracked, "pn", "doctor")
    assert doctor.returncode == 0
    assert "foreign_schema" not in doctor.stdout
