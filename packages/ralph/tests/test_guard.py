"""The destructive-command guard's list, command by command (inside/guard.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ralph.inside import guard

PROJECT = "/work/project"


@dataclass
class Repo:
    """Facts as a repository would give them: what predates the iteration."""

    foreign: list[str] = field(default_factory=list)
    own_commits_only: bool = True

    def foreign_changes(self) -> list[str]:
        return self.foreign

    def keeps_commits(self, target: str) -> bool:
        return self.own_commits_only


def rule(command: str, repo: Repo | None = None, cwd: str = PROJECT) -> str | None:
    refusal = guard.check_command(command, project=PROJECT, cwd=cwd, facts=repo or Repo())
    return None if refusal is None else refusal.rule


@pytest.mark.parametrize(
    "command",
    [
        "git push --force",
        "git push -f origin main",
        "git push origin +main",
        "git push --force-with-lease origin HEAD",
        "git -C sub push --mirror",
        "git push origin :main",
        "git push --delete origin topic",
        "cd x && git push -uf origin main",
        "sudo git push --force",
        "bash -c 'git push --force'",
        "GIT_TRACE=1 git push --force",
    ],
)
def test_force_pushes_are_refused(command: str) -> None:
    assert rule(command) == "force-push"


@pytest.mark.parametrize("command", ["git push", "git push -u origin main", "git pull --rebase"])
def test_ordinary_pushes_run(command: str) -> None:
    assert rule(command) is None


def test_reset_hard_is_refused_over_changes_the_iteration_did_not_make() -> None:
    assert rule("git reset --hard", Repo(foreign=["theirs.py"])) == "reset-hard"
    assert rule("git reset --hard HEAD~3", Repo(own_commits_only=False)) == "reset-hard"


def test_reset_hard_over_the_iterations_own_work_runs() -> None:
    assert rule("git reset --hard") is None
    assert rule("git reset --hard HEAD~1") is None
    assert rule("git reset --soft HEAD~1", Repo(own_commits_only=False)) is None


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git checkout -- .", "discard"),
        ("git checkout .", "discard"),
        ("git restore src/a.py", "discard"),
        ("git clean -fdx", "clean"),
        ("git clean -f -d", "clean"),
        ("git stash drop", "discard"),
    ],
)
def test_discarding_others_work_is_refused(command: str, expected: str) -> None:
    assert rule(command, Repo(foreign=["theirs.py"])) == expected


def test_discarding_with_nothing_foreign_runs() -> None:
    assert rule("git checkout -- .") is None
    assert rule("git clean -fdx") is None
    assert rule("git restore --staged a.py", Repo(foreign=["a.py"])) is None


@pytest.mark.parametrize(
    "command",
    ["rm -rf /", "rm -rf ..", "rm -rf ~", "rm -r /tmp/x", f"rm -rf {PROJECT}", "rm -rf ../other"],
)
def test_rm_r_outside_the_project_is_refused(command: str) -> None:
    assert rule(command) == "rm-outside"


def test_rm_r_inside_the_project_runs() -> None:
    assert rule("rm -rf build dist/*") is None
    assert rule("rm -rf ../project/build", cwd=PROJECT + "/src") is None
    assert rule("rm -f /tmp/x") is None  # not recursive


@pytest.mark.parametrize(
    "command",
    [
        "echo x > .sgf/backpressure.md",
        "echo x >> .git/hooks/pre-commit",
        "cat a | tee .claude/settings.json",
        "sed -i s/a/b/ .sgf/prompts/build.md",
        "rm -rf .git",
        "mv evil .git/config",
        f"cp x {PROJECT}/.sgf/config.toml",
        "cd .sgf && echo > ../.git/HEAD",
    ],
)
def test_writes_to_protected_paths_are_refused(command: str) -> None:
    assert rule(command) in ("protected-write", "rm-outside")


def test_reading_protected_paths_runs() -> None:
    assert rule("cat .sgf/backpressure.md > notes.txt") is None
    assert rule("git log > /dev/null 2>&1") is None
    assert rule("ls .git") is None


def test_file_tools_may_not_write_protected_paths() -> None:
    refused = guard.check_tool(
        "Edit", {"file_path": f"{PROJECT}/.sgf/prompts/build.md"}, project=PROJECT,
        cwd=PROJECT, facts=Repo(),
    )  # fmt: skip
    assert refused is not None
    assert refused.rule == "protected-write"
    ok = guard.check_tool(
        "Write", {"file_path": f"{PROJECT}/src/a.py"}, project=PROJECT, cwd=PROJECT, facts=Repo()
    )
    assert ok is None


def test_every_rule_has_a_readme_line() -> None:
    assert {r.name for r in guard.RULES} == {
        "force-push", "reset-hard", "discard", "clean", "rm-outside", "protected-write"
    }  # fmt: skip


def test_unbalanced_quotes_are_left_to_the_shell() -> None:
    assert rule("echo 'unterminated") is None
