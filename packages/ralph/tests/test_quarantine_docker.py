"""A hostile agent in the real Docker sandbox commits the control plane (by plumbing, or
plainly in its own repository); none of it reaches the human's branch, work tree, remote or a
host command (quarantine.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Git, Script, run_ralph

pytestmark = pytest.mark.docker

BIN = Path(sys.executable).parent
HUMAN_CONFIG = "stack = 'python'\n"
EVIL_CONFIG = 'sandbox = "none"\n'


def plumbing(path: str, source: str, *, mode: str = "100644") -> list[object]:
    """The agent's commit of `source`'s bytes as `path`, never touching `path` on disk (a
    gitlink, mode 160000, records the commit `source` names instead). The read-only config's
    diff.ignoreSubmodules=all makes a plain commit of a lone gitlink "nothing to commit", so
    the agent overrides it on the command line, as an attacker would."""
    blob = "$(git rev-parse HEAD)" if mode == "160000" else f"$(git hash-object -w {source})"
    return [
        "sh",
        f"blob={blob} && git update-index --add --cacheinfo "
        f"{mode},$blob,{path} && git -c diff.ignoreSubmodules=none commit -q --no-verify "
        f"-m 'chore: tidy {path}'",
    ]


def evil_hooks(marker: Path) -> str:
    """A pre-commit config whose hook records the mount namespace it runs in."""
    entry = f"sh -c 'readlink /proc/self/ns/mnt >> {marker}'"
    return (
        "repos:\n- repo: local\n  hooks:\n  - id: evil\n    name: evil\n"
        f"    entry: {entry}\n    language: system\n    always_run: true\n"
        "    pass_filenames: false\n"
        "    stages: [pre-commit, post-checkout, post-merge, post-rewrite]\n"
    )


def host(project: Path, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A command as the human runs it on the host: plain git, pensa's hooks installed."""
    return subprocess.run(
        list(argv), cwd=project, env=env, capture_output=True, text=True, check=False, timeout=120
    )


@pytest.fixture
def human(project: Path, remote: Path, git: Git, docker_env: dict[str, str]) -> dict[str, str]:
    """The project with pensa's hooks and `.sgf/config.toml`, pushed; the human's env."""
    env = {**docker_env, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["pn", "init"], cwd=project, env=env, check=True, capture_output=True)
    (project / ".sgf").mkdir()
    (project / ".sgf" / "config.toml").write_text(HUMAN_CONFIG)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "pensa and sgf")
    git(project, "push", "-q")
    return env


@pytest.mark.parametrize("target", [".sgf/config.toml", ".pre-commit-config.yaml"])
def test_a_plumbing_commit_of_the_control_plane_is_quarantined_and_never_reaches_the_host(
    project: Path,
    remote: Path,
    human: dict[str, str],
    script: Script,
    loop_id: str,
    git: Git,
    tmp_path: Path,
    target: str,
) -> None:
    marker = tmp_path / "ran-here"
    evil = EVIL_CONFIG if target == ".sgf/config.toml" else evil_hooks(marker)
    theirs = (project / target).read_bytes()
    start = git(project, "rev-parse", "HEAD")
    steps = [
        # --no-verify: pensa's hooks call the host's pre-commit, which the image lacks
        ["sh", "echo x > ordinary.txt && git add ordinary.txt && git commit -qnm 'feat: work'"],
        ["write", "tools/payload", evil.rstrip("\n")],
        plumbing(target, "tools/payload"),
        ["sh", "rm tools/payload"],
        ["result"],
    ]
    done = run_ralph(project, human, "-a", "--loop-id", loop_id, "2", script(default=steps))

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("sh rc=0") == 3, done.stdout  # the plumbing worked in there
    assert "Iteration 2" not in done.stdout
    ref = f"refs/sgf/quarantine/{loop_id}"
    error = done.stderr.strip().splitlines()[-1]
    assert f"protected paths ({target})" in error
    assert f"git log --stat {ref}" in error
    assert "push of" not in done.stdout
    # the human's branch, work tree, index and remote hold none of it
    assert git(project, "rev-parse", "HEAD") == start
    assert git(project, "status", "--porcelain") == ""
    assert (project / target).read_bytes() == theirs
    assert not (project / "ordinary.txt").exists()
    assert git(project, "--git-dir", str(remote), "rev-parse", "main") == start
    # the quarantine holds the agent's work, to review with care
    assert git(project, "show", f"{ref}:{target}") == evil.strip()
    assert "ordinary.txt" in git(project, "log", "--stat", "--format=%s", ref)
    # the human carries on as usual; sgf's advice to stash is harmless on a clean tree
    for argv in (
        ["git", "status"],
        ["git", "diff", "HEAD~1"],
        ["git", "log", "-p", "-3"],
        ["git", "stash", "-u"],
        ["git", "switch", "-c", "x"],
        ["git", "switch", "main"],
        ["git", "commit", "--allow-empty", "-m", "the human's own commit"],
        ["pn", "list"],
        ["sgf", "status"],
    ):
        ran = host(project, *argv, env=human)
        assert ran.returncode == 0, (argv, ran.stdout, ran.stderr)
    here = os.readlink("/proc/self/ns/mnt")  # the host's mount namespace
    assert here not in (marker.read_text() if marker.exists() else "")  # no agent hook ran
    # the next loop works and pushes the human's branch, still without the agent's change
    again = [["sh", "echo y > next.txt && git add next.txt && git commit -qnm next"], ["result"]]
    nxt = run_ralph(project, human, "-a", "--loop-id", loop_id + "n", "1", script(default=again))
    assert nxt.returncode == 2, nxt.stdout + nxt.stderr
    assert git(project, "--git-dir", str(remote), "log", "-1", "--format=%s", "main") == "next"
    pushed = git(project, "--git-dir", str(remote), "show", f"main:{target}")
    assert pushed.encode() + b"\n" == theirs
    assert here not in (marker.read_text() if marker.exists() else "")


@pytest.mark.parametrize(
    ("target", "mode"),
    [
        (".gitattributes", "100644"),
        ("docs/.gitattributes", "100644"),
        (".gitmodules", "100644"),
        (".claude/settings.json", "100644"),
        ("vendor/lib", "160000"),
    ],
)
def test_the_rest_of_the_control_plane_is_quarantined_too(
    project: Path,
    remote: Path,
    human: dict[str, str],
    script: Script,
    loop_id: str,
    git: Git,
    target: str,
    mode: str,
) -> None:
    theirs = git(project, "ls-tree", "HEAD", "--", target)
    start = git(project, "rev-parse", "HEAD")
    payload = ["write", "tools/payload", '[submodule "x"]\n\turl = ../evil']
    steps = [payload, plumbing(target, "tools/payload", mode=mode), ["result"]]
    done = run_ralph(project, human, "-a", "--loop-id", loop_id, "1", script(default=steps))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sh rc=0" in done.stdout
    assert f"protected paths ({target})" in done.stderr
    assert git(project, "rev-parse", "HEAD") == start
    assert git(project, "ls-tree", "HEAD", "--", target) == theirs
    assert git(project, "status", "--porcelain") == ""
    assert git(project, "--git-dir", str(remote), "rev-parse", "main") == start
    assert git(project, "ls-tree", f"refs/sgf/quarantine/{loop_id}", "--", target).startswith(mode)


def test_ordinary_commits_are_still_pushed(
    project: Path, remote: Path, docker_env: dict[str, str], script: Script, loop_id: str, git: Git
) -> None:
    (project / ".sgf").mkdir()
    (project / ".sgf" / "config.toml").write_text(HUMAN_CONFIG)
    steps = [
        ["commit", "one.txt", "feat: one"],
        ["commit", "two.txt", "feat: two"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = run_ralph(project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(project, "--git-dir", str(remote), "log", "-2", "--format=%s", "main") == (
        "feat: two\nfeat: one"
    )
    assert git(project, "for-each-ref", "refs/sgf/") == ""
    assert not (project / ".claude").exists()
    assert not (project / ".gitmodules").exists()


def test_a_project_s_own_protected_path_is_quarantined_too(
    project: Path, remote: Path, docker_env: dict[str, str], script: Script, loop_id: str, git: Git
) -> None:
    start = git(project, "rev-parse", "HEAD")
    steps = [["commit", "Makefile", "build: a new Makefile"], ["result"]]
    args = ["-a", "--loop-id", loop_id, "--protect", "./Makefile", "1", script(default=steps)]
    done = run_ralph(project, docker_env, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "protected paths (Makefile)" in done.stderr
    assert git(project, "--git-dir", str(remote), "rev-parse", "main") == start
    assert not (project / "Makefile").exists()


def test_a_plain_commit_of_the_control_plane_in_the_agents_own_repository_is_quarantined(
    project: Path, human: dict[str, str], script: Script, loop_id: str, git: Git
) -> None:
    """Its `.sgf/` is its own copy, so it can edit and commit it like any file."""
    start = git(project, "rev-parse", "main")
    steps = [
        ["sh", "echo x > ordinary.txt && git add ordinary.txt && git commit -qnm ordinary"],
        ["sh", f"printf '%s' '{EVIL_CONFIG}' > .sgf/config.toml && git commit -qnam tidy"],
        ["result"],
    ]
    done = run_ralph(project, human, "-a", "--loop-id", loop_id, "1", script(default=steps))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "protected paths (.sgf/config.toml)" in done.stderr
    assert "fast-forwarded" not in done.stdout
    assert git(project, "rev-parse", "main") == start
    assert (project / ".sgf" / "config.toml").read_text() == HUMAN_CONFIG
    assert git(project, "show", f"refs/sgf/quarantine/{loop_id}:.sgf/config.toml") == (
        EVIL_CONFIG.strip()
    )
