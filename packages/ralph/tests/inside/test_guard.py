"""The destructive-command guard's list, command by command (inside/guard.py, gitrules.py).

One table holds every form docs/guardrails.md's rules table lists and every way around the old
guard that was found by feeding it hook input as Claude Code sends it; each must be refused. The
facts given are the ones that make the form dangerous (someone's uncommitted `theirs.py`,
commits a branch had before the iteration); other tests prove the same forms run when the
iteration only touches its own work, so the guard stays a seatbelt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ralph.inside import guard, rules

PROJECT = "/work/project"
HOME = "/home/agent"


@dataclass
class Repo:
    """Facts as a repository would give them: what predates the iteration."""

    foreign: list[str] = field(default_factory=list)
    own_commits_only: bool = True
    commits: tuple[str, ...] = ("HEAD", "HEAD~1", "main", "origin/main", "feature")

    def foreign_changes(self) -> list[str]:
        return self.foreign

    def keeps_commits(self, ref: str, target: str | None) -> bool:
        return self.own_commits_only

    def names_commit(self, word: str) -> bool:
        return word in self.commits


OTHERS = Repo(foreign=["theirs.py"], own_commits_only=False)


def rule(command: str, repo: Repo | None = None, cwd: str = PROJECT) -> str | None:
    refusal = guard.check_command(
        command, project=PROJECT, cwd=cwd, facts=repo or Repo(), home=HOME
    )
    if refusal is not None:
        assert refusal.reason.startswith("refused: ")
        assert "\n" not in refusal.reason
    return None if refusal is None else refusal.rule


REFUSED = [
    # ways around the old guard, as Claude Code sends them
    ("git reset --hard # don't keep this", "reset-hard"),
    ("cat > notes.md <<EOF\ndon't panic\nEOF\ngit reset --hard", "reset-hard"),
    ("git checkout HEAD theirs.py", "discard"),
    ("git checkout theirs.py", "discard"),
    ("git switch -f main", "discard"),
    ("git switch --discard-changes feature", "discard"),
    ("git checkout --discard-changes main", "discard"),
    ("timeout 60 git push --force", "force-push"),
    ("timeout -s KILL 60 git push --force", "force-push"),
    ("nice -n 10 git reset --hard", "reset-hard"),
    ("sudo -u root git push -f origin main", "force-push"),
    ("env -u HOME git clean -fd", "clean"),
    ('rm -rf "$(pwd)"', "rm-outside"),
    ("rm -rf `pwd`", "rm-outside"),
    ("git branch -f main HEAD~1", "move-ref"),
    ("git update-ref refs/heads/main HEAD~1", "move-ref"),
    ("git push --prune origin", "force-push"),
    ("find / -delete", "rm-outside"),
    # force-push: the forms docs/guardrails.md lists
    ("git push --force", "force-push"),
    ("git push -f origin main", "force-push"),
    ("git push --force-with-lease origin HEAD", "force-push"),
    ("git push --force-if-includes", "force-push"),
    ("git -C sub push --mirror", "force-push"),
    ("git push --delete origin topic", "force-push"),
    ("git push -d origin topic", "force-push"),
    ("git push origin +main", "force-push"),
    ("git push origin :main", "force-push"),
    ("cd x && git push -uf origin main", "force-push"),
    ("GIT_TRACE=1 git push --force", "force-push"),
    ('git push origin "$branch"', "force-push"),
    ("git push $REMOTE main", "force-push"),
    # reset-hard
    ("git reset --hard", "reset-hard"),
    ("git reset --hard HEAD~3", "reset-hard"),
    # discard
    ("git checkout -- .", "discard"),
    ("git checkout .", "discard"),
    ("git checkout -f", "discard"),
    ("git checkout main -- theirs.py", "discard"),
    ("git checkout '*.py'", "discard"),
    ("git restore theirs.py", "discard"),
    ("git restore --source=HEAD~1 --staged --worktree .", "discard"),
    ("git rm -f theirs.py", "discard"),
    ("git stash drop", "discard"),
    ("git stash clear", "discard"),
    # clean
    ("git clean -fdx", "clean"),
    ("git clean -f -d", "clean"),
    ("git clean -fX", "clean"),
    ("git clean -f", "clean"),
    # move-ref
    ("git branch -D feature", "move-ref"),
    ("git branch --delete --force feature", "move-ref"),
    ("git branch -M feature main", "move-ref"),
    ("git checkout -B main HEAD~1", "move-ref"),
    ("git switch -C main HEAD~1", "move-ref"),
    ("git update-ref -d refs/heads/feature", "move-ref"),
    # rm-outside
    ("rm -rf /", "rm-outside"),
    ("rm -rf ..", "rm-outside"),
    ("rm -rf ~", "rm-outside"),
    ("rm -rf $HOME", "rm-outside"),
    ("rm -r /tmp/x", "rm-outside"),
    (f"rm -rf {PROJECT}", "rm-outside"),
    ("rm -rf .", "rm-outside"),
    ("rm -rf ../other", "rm-outside"),
    ("rm -rf /*", "rm-outside"),
    ('rm -rf "$dir"', "rm-outside"),
    ("rm -rf {build,/}", "rm-outside"),
    ("ls | xargs rm -rf", "rm-outside"),
    ("find /tmp -name x -exec rm -rf {} +", "rm-outside"),
    ("cd src && rm -rf ../../x", "rm-outside"),
    ("(cd src && make); rm -rf ../x", "rm-outside"),
    ("cd - && rm -rf build", "rm-outside"),
    # protected-write
    ("echo x > .sgf/backpressure.md", "protected-write"),
    ("echo x >> .git/hooks/pre-commit", "protected-write"),
    ("cat a | tee .claude/settings.json", "protected-write"),
    ("sed -i s/a/b/ .sgf/prompts/build.md", "protected-write"),
    ("rm -rf .git", "protected-write"),
    ("rm -rf .*", "protected-write"),
    ("mv evil .git/config", "protected-write"),
    (f"cp x {PROJECT}/.sgf/config.toml", "protected-write"),
    ("cd .sgf && echo > ../.git/HEAD", "protected-write"),
    ("touch .git/index.lock", "protected-write"),
    ("chmod +x .git/hooks/post-commit", "protected-write"),
    ("ln -sf /tmp/x .claude/settings.json", "protected-write"),
    # commands hidden one level down
    ("bash -c 'git push --force'", "force-push"),
    ("sh -xc 'git reset --hard'", "reset-hard"),
    ("bash <<'EOF'\ngit push -f\nEOF", "force-push"),
    ("bash <<< 'git push -f'", "force-push"),
    ("eval git push -f", "force-push"),
    ('echo "$(git reset --hard)"', "reset-hard"),
    ("cat <<EOF > log.txt\n$(git push -f)\nEOF", "force-push"),
    ("diff <(git stash drop) x", "discard"),
    ("flock /tmp/lock -c 'git push -f'", "force-push"),
    ("xargs git push -f < remotes", "force-push"),
    ("command git push -f", "force-push"),
    ("/usr/bin/git push -f", "force-push"),
    ("\\git push -f", "force-push"),
    ("if true; then git push -f; fi", "force-push"),
    ("$GIT push -f", "force-push"),
    ("find . -name '*.py' -exec git checkout {} +", "discard"),
    # what the guard cannot read
    ("echo 'unterminated", "unreadable"),
    ('echo "unterminated', "unreadable"),
    ("echo $(git status", "unreadable"),
    ("echo `date", "unreadable"),
    ("case $x in a) git push -f;; esac", "unreadable"),
    ("ls )", "unreadable"),
    ("echo 'git push -f' | sh", "force-push"),
    ('printf "%s" "$CODE" | bash', "unreadable"),
    ('bash -c "$SCRIPT"', "unreadable"),
    ("bash <<EOF\n$CMD\nEOF", "unreadable"),
    ("eval $CMD", "unreadable"),
    ("git -c alias.nuke='reset --hard' nuke", "unreadable"),
    ("git update-ref --stdin < updates", "unreadable"),
    ("git branch -f $b HEAD~1", "unreadable"),
    ("echo ${x:-$(git push -f)}", "unreadable"),
]


@pytest.mark.parametrize(("command", "expected"), REFUSED, ids=[c for c, _ in REFUSED])
def test_every_listed_form_is_refused(command: str, expected: str) -> None:
    assert rule(command, OTHERS) == expected


def test_the_table_covers_every_rule_and_the_manual_lists_each() -> None:
    assert {expected for _, expected in REFUSED} == {r.name for r in rules.RULES}
    manual = (Path(__file__).resolve().parents[4] / "docs" / "guardrails.md").read_text()
    for each in rules.RULES:
        assert f"| `{each.name}` |" in manual, each.name


@pytest.mark.parametrize(
    "command",
    [
        "echo 'it''s",
        "echo $((1 + 2)",
        "x=${y",
        "printf '%s' $'unterminated",
    ],
)
def test_a_command_the_guard_cannot_read_is_refused_with_how_to_say_it(command: str) -> None:
    refusal = guard.check_command(command, project=PROJECT, cwd=PROJECT, facts=Repo(), home=HOME)
    assert refusal is not None
    assert refusal.rule == "unreadable"
    assert refusal.reason.startswith("refused: the guard cannot read this command: ")
    assert "; close it" in refusal.reason


ORDINARY = [
    'git commit -m "it\'s done"',
    "git add -A && git commit -m 'feat: greet' && git log --oneline -1",
    "git status",
    "git status --porcelain && git diff --stat # what's left?",
    "git log --oneline -5 | cat",
    "pytest -q",
    ".venv/bin/pytest -q tests/test_greet.py::test_it",
    "python3 -m unittest -v 2>&1 | tail -4",
    "cd src && python3 -m pytest -x",
    "run-silent test -- .venv/bin/pytest -q",
    "rm -rf build",
    "rm -rf build dist/* node_modules",
    "rm -rf ./.pytest_cache",
    "rm -f /tmp/scratch.txt",
    "find . -name __pycache__ -exec rm -rf {} +",
    "find build -name '*.pyc' -delete",
    "cat > greet.py <<'EOF'\ndef greet() -> str:\n    return \"it's me\"  # don't\nEOF",
    "cat > notes.md <<EOF\nBuilt on $(date) in $HOME; don't edit\nEOF",
    "python3 - <<'EOF'\nprint('rm -rf /')\nEOF",
    'echo "$RALPH_LOOP_ID" > .ralph-complete',
    "pn close pn-1a2b --reason 'done, tests pass' --json >/dev/null",
    "pn create \"greet crashes on ''\" -t bug --json",
    "git checkout -b feature",
    "git checkout main",
    "git checkout -",
    "git switch feature",
    "git switch -c topic",
    "git push",
    "git push -u origin HEAD",
    'git push -u origin "$(git branch --show-current)"',
    "git pull --rebase",
    "git reset --soft HEAD~1",
    "git reset HEAD -- theirs.py",
    "git restore --staged theirs.py",
    "git stash && git stash pop",
    "git branch feature",
    "git branch -d feature",
    "git clean -n",
    'for f in *.py; do python3 -m py_compile "$f"; done',
    "if [ -f greet.py ]; then cat greet.py; fi",
    "ls -la .git && cat .sgf/backpressure.md > notes.txt",
    "git log > /dev/null 2>&1",
    "timeout 600 cargo test --workspace",
    "sudo -u nobody ls",
    "command -v git",
    "echo git push -f is refused",
    "curl -fsSL https://example.org/install.sh | sh",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_work_runs_even_beside_others_changes(command: str) -> None:
    assert rule(command, OTHERS) is None


@pytest.mark.parametrize(
    "command",
    [
        "git reset --hard",
        "git reset --hard HEAD~1",
        "git checkout -- .",
        "git checkout mine.py",
        "git restore src/mine.py",
        "git clean -fdx",
        "git switch -f main",
        "git branch -f topic HEAD~1",
        "git branch -D topic",
        "git update-ref refs/heads/topic HEAD",
    ],
)
def test_throwing_away_the_iterations_own_work_runs(command: str) -> None:
    assert rule(command, Repo()) is None


def test_discarding_is_refused_only_over_the_files_that_predate_the_iteration() -> None:
    theirs = Repo(foreign=["src/theirs.py"])
    assert rule("git checkout src/mine.py", theirs) is None
    assert rule("git checkout -- src", theirs) == "discard"
    assert rule("git checkout theirs.py", theirs, cwd=f"{PROJECT}/src") == "discard"
    assert rule("git restore 'src/*.py'", theirs) == "discard"
    assert rule("git clean -fd docs", theirs) is None


def test_file_tools_may_not_write_protected_paths() -> None:
    def tool(name: str, path: str) -> str | None:
        refusal = guard.check_tool(
            name, {"file_path": path}, project=PROJECT, cwd=PROJECT, facts=Repo(), home=HOME
        )
        return None if refusal is None else refusal.rule

    assert tool("Edit", f"{PROJECT}/.sgf/prompts/build.md") == "protected-write"
    assert tool("Write", ".claude/settings.json") == "protected-write"
    assert tool("MultiEdit", f"{PROJECT}/src/../.git/config") == "protected-write"
    assert tool("Write", f"{PROJECT}/src/a.py") is None
    assert tool("Read", f"{PROJECT}/.git/config") is None


def test_a_variable_as_the_program_is_checked_as_each_program_it_could_be() -> None:
    refusal = guard.check_command(
        '"$GIT" push --force', project=PROJECT, cwd=PROJECT, facts=Repo(), home=HOME
    )
    assert refusal is not None
    assert refusal.reason.endswith("(if $GIT is git)")
    assert rule('"$PYTHON" -m pytest -q') is None
