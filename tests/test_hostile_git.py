"""A hostile agent in the real Docker sandbox, through sgf, alone and as one of `--parallel`
loops: whatever it does in its repository, nothing runs on the host, nothing is written
through a link, no control-plane change reaches the branch or the remote, and its ordinary
work arrives (docs/security.md).

Each attack (tests/agents/hostile.py) is followed by the human's ordinary work on the host
(plain git, `pn list`, `sgf status`, the next loop) and by a fresh clone of the remote doing
the same. The agent's trap appends the mount namespace it runs in to a host path: the file
never appears on the host. The victims stand for files of the user's outside the project.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests import loops_harness
from tests.loops_harness import Loops

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

AGENT = Path(__file__).parent / "agents" / "hostile.py"
PRECIOUS = "precious, outside the project\n"
EVIL = "planted by the agent"
MODES = {"alone": [], "parallel": ["--parallel", "2"]}


class Hostile:
    """A project whose loops run the hostile agent in Docker, a bare remote, a teammate."""

    def __init__(self, loops: Loops, tmp_path: Path, base_image: str, attack: str) -> None:
        self.loops = loops
        self.base_image = base_image
        self.tmp = tmp_path
        self.mark = Path(f"/tmp/springfield-mark-{uuid.uuid4().hex}")
        victims = tmp_path / "victims"
        victims.mkdir()
        self.victims = [victims / f"victim-{n}.txt" for n in range(6)]
        for victim in self.victims:
            victim.write_text(PRECIOUS)
        self.remote = tmp_path / "remote.git"
        loops.run("git", "init", "-q", "--bare", str(self.remote))
        tools = loops.root / "tools"
        tools.mkdir()
        shutil.copy(AGENT, tools / "hostile.py")
        (tools / "hostile.py").chmod(0o755)
        config = {"attack": attack, "mark": str(self.mark), "victims": list(map(str, self.victims))}
        (tools / "hostile.json").write_text(json.dumps(config))
        loops.env["RALPH_COMMAND"] = str(tools / "hostile.py")
        with (loops.root / ".sgf" / "config.toml").open("a") as sgf_config:
            sgf_config.write('memory = "512m"\npids = 256\n')  # a bomb or a hog hits them soon
        loops.git("add", "-A")
        loops.git("commit", "-qm", "chore: the agent")
        loops.git("remote", "add", "origin", str(self.remote))
        loops.git("push", "-q", "-u", "origin", "main")

    def loop(self, *extra: str, iterations: int = 3) -> subprocess.CompletedProcess[str]:
        argv = ["build", "-a", "--sandbox", "docker", "--template", self.base_image, *extra]
        return self.loops.sgf(*argv, str(iterations))

    def calm_down(self) -> None:
        """The agent's next loops only do ordinary work."""
        path = self.loops.root / "tools" / "hostile.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "attack": "none"}))
        self.loops.git("commit", "-qam", "chore: no more attacks")

    def teammate_pushes(self) -> None:
        """Another machine pushes first: the loop's push is rejected and must replay."""
        mate = self.tmp / "teammate"
        self.loops.run("git", "clone", "-q", str(self.remote), str(mate))
        (mate / "TEAM.md").write_text("the teammate's work\n")
        self.loops.git("add", "TEAM.md", cwd=mate)
        self.loops.git("-c", "core.hooksPath=/dev/null", "commit", "-qm", "docs: team", cwd=mate)
        self.loops.git("push", "-q", cwd=mate)

    def nothing_ran_on_the_host(self) -> None:
        assert not self.mark.exists(), self.mark.read_text()
        for victim in self.victims:
            assert not victim.is_symlink()
            assert victim.read_text() == PRECIOUS, victim

    def control_plane_is_the_humans(self, where: Path, ref: str = "HEAD") -> None:
        config = self.loops.git("show", f"{ref}:.sgf/config.toml", cwd=where)
        assert EVIL not in config
        hooks = self.loops.run(
            "git", "show", f"{ref}:.pre-commit-config.yaml", cwd=where, check=False
        ).stdout
        assert "readlink /proc/self/ns/mnt" not in hooks

    def human_works(self, where: Path) -> None:
        """What a developer does next, with plain git and the tools on PATH: none of it may
        run the agent's code or write through its links."""
        run = self.loops.run
        for argv in (
            ["git", "status"],
            ["git", "diff"],
            ["git", "log", "-p", "-3"],
            ["git", "switch", "-c", "look"],
            ["git", "switch", "main"],
            ["git", "rebase", "--continue"],  # refused: no rebase of the agent's is here
            ["git", "pull", "--no-rebase", "-q"],
            ["pn", "list"],
            ["pn", "doctor"],
        ):
            run(*argv, cwd=where, check=False)
        (where / "notes.txt").write_text("the developer's notes\n")
        run("git", "add", "notes.txt", cwd=where)
        run("git", "commit", "-qm", "docs: notes", cwd=where, check=False)
        run("sgf", "status", cwd=where, check=False)

    def fresh_clone_works(self) -> Path:
        clone = self.tmp / "fresh"
        self.loops.run("git", "clone", "-q", str(self.remote), str(clone))
        self.loops.run("pn", "init", cwd=clone)  # installs pensa's hooks: pre-commit's config
        self.control_plane_is_the_humans(clone)
        self.human_works(clone)
        return clone


@pytest.fixture
def hostile(request: pytest.FixtureRequest, tmp_path: Path, base_image: str) -> Hostile:
    loops = loops_harness.make(tmp_path, os.environ)
    return Hostile(loops, tmp_path, base_image, request.param)


def work_arrived(hostile: Hostile, ref: str = "main") -> list[str]:
    listed = hostile.loops.git("ls-tree", "--name-only", f"{ref}:work")
    return listed.split()


def after(hostile: Hostile) -> None:
    """The human carries on, a fresh clone carries on, the next loop works: all on a clean
    host, with the control plane as the human left it."""
    hostile.nothing_ran_on_the_host()
    hostile.control_plane_is_the_humans(hostile.loops.root)
    hostile.control_plane_is_the_humans(hostile.loops.root, "origin/main")
    hostile.human_works(hostile.loops.root)
    hostile.fresh_clone_works()
    hostile.nothing_ran_on_the_host()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hostile", ["rebase"], indirect=True)
def test_planted_rebase_state_and_a_rejected_push_never_move_the_branch_to_the_agents_commit(
    hostile: Hostile, mode: str
) -> None:
    hostile.teammate_pushes()
    done = hostile.loop(*MODES[mode])
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "armed: " in said  # the trap ran in the container
    assert "pushed after replaying onto the remote" in said, said
    arrived = work_arrived(hostile, "origin/main")
    assert len(arrived) >= (4 if mode == "parallel" else 2), arrived
    assert hostile.loops.git("log", "-1", "--format=%s", "origin/main~0").startswith("feat:")
    after(hostile)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hostile", ["replace"], indirect=True)
def test_a_replace_ref_hides_nothing_from_the_quarantine(hostile: Hostile, mode: str) -> None:
    done = hostile.loop(*MODES[mode])
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "protected paths (.pre-commit-config.yaml, .sgf/config.toml)" in said, said
    assert hostile.loops.git("for-each-ref", "refs/replace/") == ""
    quarantined = hostile.loops.git("for-each-ref", "--format=%(refname)", "refs/sgf/quarantine/")
    assert quarantined
    ref = quarantined.split()[0]
    assert EVIL in hostile.loops.git("log", "-p", ref, "--", ".sgf/config.toml")
    after(hostile)
    for ref in quarantined.split():  # reviewed and thrown away, the next loop works
        hostile.loops.git("update-ref", "-d", ref)
    hostile.calm_down()
    nxt = hostile.loop()
    assert nxt.returncode == 0, nxt.stdout + nxt.stderr
    assert len(work_arrived(hostile)) >= 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hostile", ["links"], indirect=True)
def test_links_in_the_agents_git_directory_are_never_written_through(
    hostile: Hostile, mode: str
) -> None:
    hostile.teammate_pushes()  # a fetch and a replay: FETCH_HEAD, reflogs, ORIG_HEAD
    done = hostile.loop(*MODES[mode])
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert said.count("mkdir -p $(dirname .git/") >= 6, said  # the links were made
    assert len(work_arrived(hostile, "origin/main")) >= (2 if mode == "parallel" else 1)
    after(hostile)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hostile", ["pensa"], indirect=True)
def test_the_tracker_folder_gets_no_fifo_or_device_to_hang_the_host_on(
    hostile: Hostile, mode: str
) -> None:
    """The agent claims in the project's database, so its files are in the container: only
    they, one by one. It can plant nothing beside them (a FIFO as `.pensa/.gitignore` would
    hang the human's `git status`), nor make a device node anywhere (no CAP_MKNOD)."""
    done = hostile.loop(*MODES[mode])
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "mknod /ralph/pensa/zero c 1 5] rc=1" in said, said
    assert "armed: " in said
    tracker = hostile.loops.root / ".pensa"
    assert [p for p in tracker.rglob("*") if not (p.is_file() or p.is_dir())] == []
    listed = hostile.loops.run("pn", "list", "--all", check=False, timeout=60)
    assert listed.returncode == 0, listed.stderr
    after(hostile)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hostile", ["nested"], indirect=True)
def test_a_nested_repository_committed_as_a_gitlink_never_lands(
    hostile: Hostile, mode: str
) -> None:
    done = hostile.loop(*MODES[mode])
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "protected paths (sub)" in said, said
    assert not (hostile.loops.root / "sub").exists()
    after(hostile)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hostile", ["forkbomb", "memhog"], indirect=True)
def test_a_fork_bomb_or_a_memory_hog_ends_its_iteration_and_nothing_else(
    hostile: Hostile, mode: str
) -> None:
    done = hostile.loop(*MODES[mode], "--max-time", "10m")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "stopped the iteration: the sandbox's" in said, said
    assert len(work_arrived(hostile)) >= (4 if mode == "parallel" else 2)
    after(hostile)
