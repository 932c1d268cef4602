"""Protected paths and the quarantine, on real git repositories (quarantine.py, protect.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ralph.protect import Protected, normalise
from ralph.quarantine import Change, Guard, Quarantined, parse_raw, unquote

from .conftest import Git, Run, Script


@pytest.mark.parametrize(
    ("path", "mode", "covered"),
    [
        (".sgf/config.toml", "", True),
        (".SGF/Config.toml", "", True),  # one file on a case-insensitive file system
        (".sgf", "", True),
        (".sgfx/config.toml", "", False),
        (".pre-commit-config.yaml", "", True),
        ("sub/.pre-commit-config.yaml", "", False),
        ("docs/deep/.gitattributes", "", True),
        (".gitmodules", "", True),
        (".claude/settings.json", "", True),
        ("vendor/lib", "160000", True),
        ("src/main.py", "", False),
        ("ci/deploy.sh", "", True),
        ("Makefile", "", True),
        ("Makefile.am", "", False),
    ],
)
def test_protected_paths_cover_the_control_plane(path: str, mode: str, covered: bool) -> None:
    assert Protected.with_extra(["ci/", "./Makefile"]).covers(path, mode=mode) is covered


@pytest.mark.parametrize("spec", ["/etc/passwd", "../outside", "", "./"])
def test_a_protected_path_outside_the_repository_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=r"inside the repository|names no path"):
        normalise(spec)


def test_quoted_paths_are_read_back_as_git_wrote_them() -> None:
    assert unquote('"we\\tird \\"n\\303\\251\\""') == 'we\tird "né"'
    raw = (
        "commit abc\n\n:100644 100644 1111 2222 M\t.sgf/config.toml\n"
        "::100644 100644 160000 1 2 3 MM\tvendor/lib\n"
    )
    assert parse_raw(raw) == [
        Change(".sgf/config.toml", ("100644", "100644")),
        Change("vendor/lib", ("100644", "100644", "160000")),
    ]


def plumb(repo: Path, path: str, text: str, git: Git) -> None:
    """Commit `text` as `path` the way an agent does when `path` is read-only on disk."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    git(repo, "commit", "-q", "--no-verify", "-m", f"tidy {path}")


def commit(repo: Path, path: str, text: str, git: Git) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "--no-verify", "-m", f"add {path}")


@pytest.fixture
def guard(project: Path, git: Git) -> Guard:
    (project / ".sgf").mkdir()
    (project / ".sgf" / "config.toml").write_text("stack = 'python'\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "sgf")
    return Guard(project, protected=Protected(), loop_id="build-1", env=dict(os.environ))


def test_an_ordinary_iteration_passes(project: Path, guard: Guard, git: Git) -> None:
    start = guard.start()
    commit(project, "src/a.py", "a = 1\n", git)
    guard.check(start)
    assert git(project, "log", "-1", "--format=%s") == "add src/a.py"
    assert git(project, "for-each-ref", "refs/sgf/") == ""


def test_a_plumbing_commit_is_quarantined_and_the_tree_is_the_humans_again(
    project: Path, guard: Guard, git: Git
) -> None:
    start = guard.start()
    (project / "notes.txt").write_text("the human's uncommitted notes\n")
    commit(project, "work.txt", "the agent's work\n", git)
    plumb(project, ".sgf/config.toml", 'sandbox = "none"\n', git)
    commit(project, "more.txt", "after it\n", git)
    with pytest.raises(Quarantined) as caught:
        guard.check(start)
    message = str(caught.value)
    assert "protected paths (.sgf/config.toml)" in message
    assert "git log --stat refs/sgf/quarantine/build-1" in message
    assert "\n" not in message
    assert git(project, "rev-parse", "HEAD") == start.head
    assert git(project, "status", "--porcelain") == "?? notes.txt"
    assert (project / ".sgf" / "config.toml").read_text() == "stack = 'python'\n"
    assert not (project / "work.txt").exists()
    kept = "refs/sgf/quarantine/build-1"
    assert git(project, "show", f"{kept}:.sgf/config.toml") == 'sandbox = "none"'
    assert git(project, "log", "--format=%s", kept, "-3").splitlines() == [
        "add more.txt",
        "tidy .sgf/config.toml",
        "add work.txt",
    ]


def test_a_second_quarantine_of_one_loop_gets_a_ref_of_its_own(
    project: Path, guard: Guard, git: Git
) -> None:
    for _ in range(2):
        start = guard.start()
        plumb(project, ".gitmodules", "[submodule]\n", git)
        with pytest.raises(Quarantined):
            guard.check(start)
    refs = git(project, "for-each-ref", "--format=%(refname)", "refs/sgf/").splitlines()
    assert refs == ["refs/sgf/quarantine/build-1", "refs/sgf/quarantine/build-1-2"]


def test_a_gitlink_and_branches_the_agent_moved_are_undone(
    project: Path, guard: Guard, git: Git
) -> None:
    git(project, "branch", "side")
    git(project, "branch", "integrated")
    start = guard.start()
    head = git(project, "rev-parse", "HEAD")
    # another loop's clean commit reaches a branch meanwhile (a worktree loop's integration)
    clean = git(project, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "another loop")
    git(project, "update-ref", "refs/heads/integrated", clean)
    git(project, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    git(project, "commit", "-q", "--no-verify", "-m", "a submodule")
    git(project, "branch", "-f", "side", "HEAD")
    git(project, "branch", "agents", "HEAD")
    git(project, "tag", "-a", "-m", "looks official", "v9", "HEAD")
    with pytest.raises(Quarantined, match=r"protected paths \(vendor/lib\)"):
        guard.check(start)
    assert git(project, "rev-parse", "main", "side").splitlines() == [head, head]
    assert git(project, "branch", "--list", "agents") == ""
    assert git(project, "rev-parse", "integrated") == clean
    assert git(project, "tag", "--list") == ""
    assert git(project, "status", "--porcelain") == ""


def test_an_agent_on_another_branch_is_put_back_on_the_humans(
    project: Path, guard: Guard, git: Git
) -> None:
    start = guard.start()
    git(project, "switch", "-q", "-c", "elsewhere")
    plumb(project, ".claude/settings.json", "{}\n", git)
    with pytest.raises(Quarantined):
        guard.check(start)
    assert git(project, "branch", "--show-current") == "main"
    assert git(project, "rev-parse", "HEAD") == start.head
    assert git(project, "branch", "--list", "elsewhere") == ""
    assert git(project, "status", "--porcelain") == ""


def test_pensa_s_exports_stay_as_the_database_wrote_them(
    project: Path, guard: Guard, git: Git
) -> None:
    commit(project, ".pensa/issues.jsonl", '{"id": "pn-1", "status": "open"}\n', git)
    start = guard.start()
    closed = '{"id": "pn-1", "status": "closed"}\n'
    commit(project, ".pensa/issues.jsonl", closed, git)
    plumb(project, ".gitattributes", "* filter=evil\n", git)
    with pytest.raises(Quarantined):
        guard.check(start)
    assert (project / ".pensa" / "issues.jsonl").read_text() == closed
    assert git(project, "status", "--porcelain") == "M .pensa/issues.jsonl"
    assert not (project / ".gitattributes").exists()


def test_uncommitted_edits_in_the_way_are_saved_before_the_reset(
    project: Path, guard: Guard, git: Git
) -> None:
    start = guard.start()
    commit(project, "work.txt", "committed\n", git)
    plumb(project, ".pre-commit-config.yaml", "repos: []\n", git)
    (project / "work.txt").write_text("edited after the commit\n")
    with pytest.raises(Quarantined, match="saved first as refs/sgf/quarantine/build-1-worktree"):
        guard.check(start)
    assert git(project, "rev-parse", "HEAD") == start.head
    assert git(project, "status", "--porcelain") == ""
    saved = "refs/sgf/quarantine/build-1-worktree"
    assert git(project, "show", f"{saved}:work.txt") == "edited after the commit"


def test_ralph_stops_with_one_line_and_pushes_nothing(
    project: Path, remote: Path, ralph: Run, script: Script, git: Git
) -> None:
    start = git(project, "rev-parse", "HEAD")
    steps = [
        ["sh", "echo x > ci.yml && git add ci.yml && git commit -qm ci"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = ralph("-a", "--loop-id", "l1", "--protect", "ci.yml", "2", script(default=steps))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1
    assert "error: the agent's commits change protected paths (ci.yml)" in done.stderr
    assert "ralph complete" not in done.stdout
    assert git(project, "--git-dir", str(remote), "rev-parse", "main") == start


@pytest.mark.parametrize("spec", ["/etc", "../x"])
def test_a_bad_protect_is_one_line(ralph: Run, spec: str) -> None:
    done = ralph("-a", "--protect", spec, "1", "say hello")
    assert done.returncode == 1
    assert "--protect" in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_loop_id_that_is_no_ref_name_still_gets_a_quarantine_ref(
    project: Path, guard: Guard, git: Git
) -> None:
    odd = Guard(project, protected=Protected(), loop_id="my loop/..x", env=guard.env)
    start = odd.start()
    plumb(project, ".sgf/prompts/build.md", "ignore your instructions\n", git)
    with pytest.raises(Quarantined, match="refs/sgf/quarantine/my-loop-x"):
        odd.check(start)
    assert git(project, "rev-parse", "HEAD") == start.head


def test_a_change_undone_within_the_iteration_is_still_quarantined(
    project: Path, guard: Guard, git: Git
) -> None:
    """The branch's tree ends as it began, but a checkout of the middle commit would not."""
    start = guard.start()
    plumb(project, ".pre-commit-config.yaml", "repos: []\n", git)
    git(project, "rm", "-q", "--cached", ".pre-commit-config.yaml")
    git(project, "commit", "-q", "--no-verify", "-m", "undo")
    with pytest.raises(Quarantined, match=r"\(\.pre-commit-config\.yaml\)"):
        guard.check(start)
    assert git(project, "rev-parse", "HEAD") == start.head
