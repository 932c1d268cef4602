"""`sgf init` in real git repositories: every stack, merges, idempotence, hooks that fire."""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sgf import merges, resources, stacks, stages

EXPECTED = [
    ".sgf/config.toml",
    ".sgf/backpressure.md",
    *(f".sgf/prompts/{stage}.md" for stage in stages.PROMPTS),
    "memento.md",
    "specs/README.md",
    "AGENTS.md",
    "CLAUDE.md",
    ".gitignore",
    ".claude/settings.json",
    ".pre-commit-config.yaml",
    ".pensa/issues.jsonl",
    ".pensa/deps.jsonl",
    ".pensa/comments.jsonl",
]
Run = Callable[..., "subprocess.CompletedProcess[str]"]
Git = Callable[..., str]
HOOKS = ("pre-commit", "post-merge", "post-checkout", "post-rewrite")


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts[:1]
    }


@pytest.mark.process
@pytest.mark.parametrize("stack", stacks.names())
def test_init_scaffolds_every_stack_and_a_second_run_changes_nothing(
    repo: Path, sgf: Run, stack: str
) -> None:
    done = sgf(repo, "init", "--stack", stack)
    assert done.returncode == 0, done.stderr
    for rel in EXPECTED:
        assert (repo / rel).is_file(), rel
    config = tomllib.loads((repo / ".sgf/config.toml").read_text())
    assert config == {
        "stack": stack,
        "docker_template": stacks.get(stack).project_image(repo),
        "auto_push": True,
        "default_iterations": 25,
        "max_iterations": 100,
    }
    assert (repo / ".sgf/backpressure.md").read_text() == stacks.get(stack).backpressure()
    memento = (repo / "memento.md").read_text()
    assert f"{stack}: " in memento
    for ref in (".sgf/backpressure.md", "specs/README.md", "`pn`"):
        assert ref in memento
    assert "| Spec | Code | Purpose |" in (repo / "specs/README.md").read_text()
    claude_md = (repo / "CLAUDE.md").read_text()
    assert "@memento.md" in claude_md
    assert "@AGENTS.md" in claude_md
    for hook in HOOKS:
        assert "pre-commit" in (repo / ".git/hooks" / hook).read_text()
    assert all(line.strip() in done.stdout for line in ("created     memento.md",))

    before = snapshot(repo)
    again = sgf(repo, "init", "--stack", stack)
    assert again.returncode == 0, again.stderr
    assert snapshot(repo) == before
    assert "created" not in again.stdout
    assert "merged" not in again.stdout


@pytest.mark.process
def test_user_edits_survive_unless_force(repo: Path, sgf: Run) -> None:
    assert sgf(repo, "init", "--stack", "go").returncode == 0
    build = repo / ".sgf/prompts/build.md"
    pressure = repo / ".sgf/backpressure.md"
    agents = repo / "AGENTS.md"
    build.write_text("my build prompt\n")
    pressure.write_text("my commands\n")
    agents.write_text("my notes\n")
    assert sgf(repo, "init", "--stack", "go").returncode == 0
    assert build.read_text() == "my build prompt\n"
    assert pressure.read_text() == "my commands\n"
    forced = sgf(repo, "init", "--stack", "go", "--force")
    assert forced.returncode == 0, forced.stderr
    assert build.read_text() == resources.read_text("prompts", "build.md")
    assert pressure.read_text() == stacks.get("go").backpressure()
    assert agents.read_text() == "my notes\n"  # hand-authored: never overwritten
    assert "overwritten .sgf/prompts/build.md" in " ".join(forced.stdout.split())


@pytest.mark.process
def test_init_merges_into_existing_files(repo: Path, sgf: Run) -> None:
    (repo / ".gitignore").write_text("secret.txt\n")
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}, "env": {"A": "1"}})
    )
    (repo / ".pre-commit-config.yaml").write_text(
        "# keep me\nrepos:\n  - repo: local\n    hooks:\n"
        "      - {id: hello, name: hello, entry: 'true', language: system}\n"
    )
    done = sgf(repo, "init", "--stack", "rust")
    assert done.returncode == 0, done.stderr
    ignore = (repo / ".gitignore").read_text().splitlines()
    assert ignore[0] == "secret.txt"
    assert {"/target", ".sgf/run/", ".pensa/db.sqlite"} <= set(ignore)
    settings = json.loads((repo / ".claude/settings.json").read_text())
    assert settings["env"] == {"A": "1"}
    assert settings["permissions"]["allow"] == ["Bash(ls:*)"]
    assert settings["permissions"]["deny"] == ["Edit(/.sgf/**)"]
    assert set(settings["hooks"]) == {"Notification", "Stop"}
    precommit = (repo / ".pre-commit-config.yaml").read_text()
    assert precommit.startswith("# keep me\n")
    ids = [h["id"] for r in yaml.safe_load(precommit)["repos"] for h in r["hooks"]]
    assert ids == ["hello", "pensa-export", "pensa-sync"]
    assert "merged      .gitignore" in done.stdout


@pytest.mark.process
def test_generated_files_are_ignored_and_the_scaffold_is_committable(
    repo: Path, sgf: Run, git: Git
) -> None:
    assert sgf(repo, "init", "--stack", "python").returncode == 0
    for rel in (
        ".pensa/db.sqlite",
        ".sgf/logs/a.log",
        ".sgf/run/a.pid",
        ".sgf/prompts/.assembled/build.md",
        ".ralph-complete",
        "sub/dir/.ralph-complete",
        ".ralph-ding",
    ):
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        assert git(repo, "check-ignore", rel) == rel
    assert ".sgf/prompts/build.md" in git(repo, "status", "--porcelain", "-uall")


@pytest.mark.process
def test_hooks_fire_a_commit_carries_the_exported_jsonl(
    repo: Path, sgf: Run, git: Git, tool_env: dict[str, str]
) -> None:
    assert sgf(repo, "init", "--stack", "python").returncode == 0
    created = subprocess.run(
        ["pn", "create", "first task", "-t", "task", "--json"],
        cwd=repo, env=tool_env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    issue_id = json.loads(created.stdout)["id"]
    subprocess.run(["git", "add", "-A"], cwd=repo, env=tool_env, check=True)
    committed = subprocess.run(
        ["git", "commit", "-q", "-m", "scaffold"],
        cwd=repo, env=tool_env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert committed.returncode == 0, committed.stdout + committed.stderr
    in_commit = git(repo, "show", f"HEAD:.pensa/issues-{issue_id[3]}.jsonl")  # its shard
    assert issue_id in in_commit
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.process
def test_init_outside_git_says_so_and_git_init_flag_creates_one(tmp_path: Path, sgf: Run) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused = sgf(plain, "init", "--stack", "go")
    assert refused.returncode == 1
    assert "not inside a git repository" in refused.stderr
    assert "git init" in refused.stderr
    assert not (plain / ".sgf").exists()
    done = sgf(plain, "init", "--stack", "go", "--git-init")
    assert done.returncode == 0, done.stderr
    assert (plain / ".git").is_dir()
    assert (plain / ".sgf/config.toml").is_file()


@pytest.mark.process
@pytest.mark.parametrize("where", ["dot_git", "bare"])
def test_init_inside_a_git_dir_refuses_and_never_nests_a_repository(
    repo: Path, tmp_path: Path, sgf: Run, where: str
) -> None:
    if where == "bare":
        gitdir = tmp_path / "bare.git"
        subprocess.run(["git", "init", "-q", "--bare", str(gitdir)], check=True)
    else:
        gitdir = repo / ".git"
    before = sorted(p.name for p in gitdir.iterdir())
    done = sgf(gitdir, "init", "--stack", "go", "--git-init")
    assert done.returncode == 1
    assert done.stderr == (
        f"error: {gitdir} is inside a git directory (.git or a bare repository), not a work "
        "tree; run sgf from the work tree\n"
    )
    assert sorted(p.name for p in gitdir.iterdir()) == before


@pytest.mark.process
def test_init_without_stack_and_without_a_terminal_lists_the_stacks(repo: Path, sgf: Run) -> None:
    done = sgf(repo, "init")
    assert done.returncode == 1
    assert (
        done.stderr == f"error: choose a stack with --stack; one of: {', '.join(stacks.names())}\n"
    )


@pytest.mark.process
def test_an_unknown_stack_is_a_usage_error_with_exit_1(repo: Path, sgf: Run) -> None:
    done = sgf(repo, "init", "--stack", "cobol")
    assert done.returncode == 1
    assert "'cobol' is not one of" in done.stderr


@pytest.mark.process
def test_broken_settings_json_stops_init_and_is_left_alone(repo: Path, sgf: Run) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").write_text("{broken")
    done = sgf(repo, "init", "--stack", "go")
    assert done.returncode == 1
    assert "not valid JSON" in done.stderr
    assert (repo / ".claude/settings.json").read_text() == "{broken"


@pytest.mark.process
@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({".claude/settings.json": b"{broken"}, "not valid JSON"),
        ({".claude/settings.json": b'{"permissions": "no"}'}, "permissions must be an object"),
        ({".gitignore": b"\xff\xfe\n"}, ".gitignore is not UTF-8 text"),
        ({".pre-commit-config.yaml": b"repos: [5]"}, "each of `repos` must be a mapping"),
        ({".sgf": b"a file"}, ".sgf is a file"),
        ({".gitignore/x": b""}, ".gitignore is not a file"),
    ],
)
def test_a_refused_init_writes_nothing(
    repo: Path, sgf: Run, setup: dict[str, bytes], message: str
) -> None:
    for rel, data in setup.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    before = sorted(p.relative_to(repo) for p in repo.rglob("*") if ".git" not in p.parts[:1])
    done = sgf(repo, "init", "--stack", "go")
    assert done.returncode == 1
    assert done.stderr.startswith("error: ")
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    after = sorted(p.relative_to(repo) for p in repo.rglob("*") if ".git" not in p.parts[:1])
    assert after == before
    for rel, data in setup.items():
        assert (repo / rel).read_bytes() == data


def test_deny_rule_joins_the_projects_own_once() -> None:
    merged = merges.claude_settings('{"permissions": {"deny": ["Bash(rm:*)"]}}')
    deny = json.loads(merged)["permissions"]["deny"]
    assert deny == ["Bash(rm:*)", "Edit(/.sgf/**)"]
    assert merges.claude_settings(merged) == merged


@pytest.mark.process
def test_init_with_another_stack_keeps_the_config_and_says_so(repo: Path, sgf: Run) -> None:
    assert sgf(repo, "init", "--stack", "go").returncode == 0
    done = sgf(repo, "init", "--stack", "rust")
    assert done.returncode == 0, done.stderr
    assert "stack stays go; --force re-seeds" in done.stdout
    assert 'stack = "go"' in (repo / ".sgf/config.toml").read_text()
    assert sgf(repo, "init", "--stack", "rust", "--force").returncode == 0
    assert 'stack = "rust"' in (repo / ".sgf/config.toml").read_text()
    assert (repo / ".sgf/backpressure.md").read_text() == stacks.get("rust").backpressure()


@pytest.mark.process
def test_init_ends_with_the_next_commands_in_order(repo: Path, sgf: Run) -> None:
    for _ in range(2):  # a second run, which changes nothing, says the same
        done = sgf(repo, "init", "--stack", "python")
        assert done.returncode == 0, done.stderr
        last = done.stdout.splitlines()[-1]
        assert last.startswith("next: `sgf sandbox build`")
        named = [
            last.index(command)
            for command in ("`sgf sandbox build`", "`git add -A", "`sgf doctor`", "`sgf spec`")
        ]
        assert named == sorted(named)  # the build records its base: it comes before the commit
