"""A hostile agent in the real Docker sandbox attacks `.pensa/`; pn on the host holds.

The agent (ralph's scripted fake agent, run by ralph in a container) plants links and a
trigger. Then the human does what humans do: `git commit` (the pre-commit hook runs `pn
export`), `pn list`, `pn close`, `pn doctor`. A file outside the project stands for
`~/.bashrc`: nothing may be written through to it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pensa.schema import dirty_triggers

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

AGENT = Path(__file__).resolve().parents[1] / "packages/ralph/tests/agents/fake_agent.py"
BIN = Path(sys.executable).parent
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


def agent_runs(project: Path, base_image: str, *commands: str) -> None:
    """One ralph iteration in the Docker sandbox whose agent runs `commands` in a shell."""
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
    assert "sh rc=0" in done.stdout, done.stdout[-3000:]  # the attack itself went through


def next_pid(project: Path) -> int:
    return int(run(project, "sh", "-c", "echo $$").stdout)


def test_planted_temp_file_links_do_not_redirect_the_pre_commit_export(
    tracked: Path, victim: Path, base_image: str
) -> None:
    """The old writer's temp file was `.issues.jsonl.<pid>.tmp`, git-ignored: links for a
    range of pids around the next ones, and the hook's `pn export` wrote into the target."""
    first = next_pid(tracked)
    plant = (
        'python3 -c "import os\n'
        f"for pid in range({first}, {first + 6000}):\n"
        "    for n in ('issues', 'deps', 'comments', 'deleted'):\n"
        f"        os.symlink('{victim}', f'.pensa/.{{n}}.jsonl.{{pid}}.tmp')\""
    )
    agent_runs(tracked, base_image, plant)
    assert run(tracked, "git", "status", "--porcelain", "--", ".pensa").stdout == ""  # unseen
    assert run(tracked, "pn", "create", "rm -rf ~ # a title", "-t", "task").returncode == 0
    (tracked / "work.txt").write_text("the human's work\n")
    run(tracked, "git", "add", "work.txt")
    done = run(tracked, "git", "commit", "-qm", "the human's commit")
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == START_UP
    shards = sorted((tracked / ".pensa").glob("issues*.jsonl"))
    assert not any(path.is_symlink() for path in shards)
    [holder] = [p for p in shards if "rm -rf ~ # a title" in p.read_text()]
    assert run(tracked, "git", "show", "--stat", "HEAD").stdout.count(f".pensa/{holder.name}") == 1
    listed = run(tracked, "pn", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 3


@pytest.mark.parametrize("planted", ["deps.jsonl", "db.sqlite-journal"])
def test_a_symlinked_jsonl_is_refused_with_one_line(
    tracked: Path, victim: Path, base_image: str, planted: str
) -> None:
    """deps.jsonl (or the journal) replaced by a link: every pn command on the host refuses
    it, naming it; the journal used to fail every write with "check the permissions"."""
    link = f".pensa/{planted}"
    agent_runs(tracked, base_image, f"rm -f {link} && ln -s {victim} {link}")
    exported = run(tracked, "pn", "export", "--json")  # what the pre-commit hook runs
    assert exported.returncode == 1
    (line,) = exported.stderr.splitlines()
    assert json.loads(line)["code"] == "unsafe_path"
    assert f"{link} is a symbolic link" in line
    (tracked / "work.txt").write_text("the human's work\n")
    run(tracked, "git", "add", "work.txt")
    # pre-commit stashes the unstaged change (the link) while its hooks run, and puts it back.
    run(tracked, "git", "commit", "-qm", "the human's commit")
    assert (tracked / link).is_symlink()
    for argv in (("pn", "list", "--json"), ("pn", "create", "x", "-t", "task", "--json")):
        done = run(tracked, *argv)
        assert done.returncode == 1, argv
        (line,) = done.stderr.splitlines()
        assert json.loads(line)["code"] == "unsafe_path"
    assert victim.read_text() == START_UP


def test_a_trigger_planted_in_the_database_never_runs_on_the_host(
    tracked: Path, base_image: str
) -> None:
    db = tracked / ".pensa" / "db.sqlite"
    ids = dict(sqlite3.connect(db).execute("SELECT title, id FROM issues").fetchall())
    code = f"import sqlite3\nsqlite3.connect('.pensa/db.sqlite').execute({TRIGGER!r})\n"
    (tracked / "tools" / "plant.py").write_text(code)  # the agent's code, minus shell quoting
    plant = "python3 tools/plant.py"
    agent_runs(tracked, base_image, plant)

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
    assert [n for (n,) in triggers] == sorted(name for name, _, _ in dirty_triggers())  # pensa's
