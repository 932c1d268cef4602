"""The hook program as Claude Code runs it: a real process, a real git repository (hooks.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralph import hooks
from ralph.inside import checklist
from ralph.models import Config, Guardrails, Prompt, SandboxKind

from .conftest import git


def installed(repo: Path, tmp_path: Path, **guardrails: Any) -> Config:
    config = Config(
        project=repo,
        prompt=Prompt("x"),
        sandbox=SandboxKind.NONE,
        guardrails=Guardrails(**guardrails),
    )
    state = tmp_path / "run"
    state.mkdir()
    return hooks.install(config, state=state, workdir=config.project)


def guard_folder(config: Config) -> Path:
    assert config.hooks is not None
    return Path(config.hooks.folder)


def claude_settings(config: Config) -> dict[str, Any]:
    """The settings Claude Code gets: by `--settings` on the host, managed in a container."""
    loaded = json.loads((guard_folder(config) / "managed-settings.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


def hook(config: Config, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Run the command the settings name for `event`, as Claude Code would; its JSON."""
    settings = claude_settings(config)
    [entry] = settings["hooks"][event]
    command = entry["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PN_", "RALPH_"))}
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({"session_id": "s1", "cwd": str(config.project), **payload}),
        capture_output=True,
        text=True,
        cwd=config.project,
        env=env,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.mark.process
def test_install_writes_the_program_and_settings_and_fake_agents_get_none(
    repo: Path, tmp_path: Path
) -> None:
    config = installed(repo, tmp_path)
    folder = guard_folder(config)
    assert config.agent_argv()[-2:] == ["--settings", str(folder / "managed-settings.json")]
    settings = claude_settings(config)
    assert set(settings["hooks"]) == {
        "SessionStart", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop"
    }  # fmt: skip
    assert hooks.mounts(folder.parent) == [(folder, folder)]  # read-only
    fake = Config(project=repo, prompt=Prompt("x"), command="/bin/fake-agent")
    assert hooks.install(fake, state=tmp_path, workdir=tmp_path) is fake


@pytest.mark.process
def test_turned_off_guardrails_set_no_hooks(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, checks=(), guard=False)
    settings = claude_settings(config)
    assert set(settings["hooks"]) == {"SessionStart", "PostToolUse", "PostToolUseFailure"}


@pytest.mark.process
def test_the_guard_denies_with_one_line_and_records_it(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path)
    hook(config, "SessionStart", {"source": "startup"})
    denied = hook(
        config, "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "git push -f"}}
    )
    assert denied is not None
    decision = denied["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["permissionDecisionReason"].startswith("refused: a force push")
    assert "\n" not in decision["permissionDecisionReason"]
    ok = hook(config, "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert ok is None
    [event] = hooks.fired(config)
    assert (event["hook"], event["rule"]) == ("guard", "force-push")
    assert hooks.fired(config) == []  # read once


RESET = {"tool_name": "Bash", "tool_input": {"command": "git reset --hard"}}


@pytest.mark.process
def test_reset_hard_is_refused_only_over_what_predates_the_iteration(
    repo: Path, tmp_path: Path
) -> None:
    config = installed(repo, tmp_path)
    (repo / "a.txt").write_text("someone's edit\n")
    hooks.begin(config)  # ralph, before the agent starts
    hook(config, "SessionStart", {"source": "startup"})
    assert hook(config, "PreToolUse", RESET) is not None
    git(repo, "checkout", "--", "a.txt")  # (the human, outside the hook's view)
    (repo / "b.txt").write_text("the agent's own\n")
    assert hook(config, "PreToolUse", RESET) is None


@pytest.mark.process
def test_what_the_guard_decides_on_is_out_of_the_agents_reach(repo: Path, tmp_path: Path) -> None:
    """The hooks run as the agent: whatever they write, it can rewrite. The record of the
    start is ralph's, in the folder the container mounts read-only."""
    config = installed(repo, tmp_path)
    (repo / "a.txt").write_text("someone's edit\n")
    hooks.begin(config)
    folder = guard_folder(config)
    assert (folder / "baseline.json").is_file()
    assert (folder, folder) in hooks.mounts(folder.parent)  # read-only
    hook(config, "SessionStart", {"source": "startup"})
    state = folder.parent / hooks.STATE
    for session in state.glob("session-*.json"):  # the agent rewrites its notes
        session.write_text(json.dumps({"head": "", "dirty": [], "seq": 0}))
    assert hook(config, "PreToolUse", RESET) is not None


@pytest.mark.process
def test_without_a_record_of_the_start_the_guard_fails_closed(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path)
    hook(config, "SessionStart", {"source": "startup"})
    assert hook(config, "PreToolUse", RESET) is None  # nothing uncommitted: nothing to lose
    (repo / "b.txt").write_text("whose? nobody recorded it\n")
    assert hook(config, "PreToolUse", RESET) is not None
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "second")
    back = {"tool_name": "Bash", "tool_input": {"command": "git branch -f main HEAD~1"}}
    assert hook(config, "PreToolUse", back) is not None


@pytest.mark.process
def test_a_branch_keeps_the_commits_it_had_when_the_iteration_began(
    repo: Path, tmp_path: Path
) -> None:
    config = installed(repo, tmp_path)
    git(repo, "branch", "theirs")
    hooks.begin(config)
    (repo / "b.txt").write_text("mine\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "the agent's commit")
    git(repo, "branch", "mine")

    def bash(command: str) -> dict[str, Any] | None:
        return hook(config, "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": command}})

    assert bash("git reset --hard HEAD~1") is None  # the agent's own commit
    assert bash("git reset --hard HEAD~2") is not None
    assert bash("git branch -f mine HEAD~1") is None  # a branch it made
    assert bash("git branch -f main HEAD~1") is None
    assert bash("git update-ref refs/heads/main HEAD~2") is not None
    assert bash("git branch -D theirs") is None  # its commits are all on HEAD
    assert bash("git checkout a.txt") is None  # a path, nothing foreign in it


@pytest.mark.process
def test_a_command_the_guard_cannot_read_is_denied(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path)
    hooks.begin(config)
    denied = hook(
        config, "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "echo 'oops"}}
    )
    assert denied is not None
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason == (
        "refused: the guard cannot read this command: a ' quote is never closed; close it"
    )


@pytest.mark.process
def test_the_stop_checklist_blocks_n_times_then_lets_go(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, checks=("clean", "backpressure"), stop_blocks=2)
    hook(config, "SessionStart", {"source": "startup"})
    hook(config, "PostToolUse", {"tool_name": "Write", "tool_input": {"file_path": "b.txt"}})
    (repo / "b.txt").write_text("new\n")
    first = hook(config, "Stop", {"stop_hook_active": False})
    assert first is not None
    assert first["decision"] == "block"
    assert "uncommitted changes: b.txt" in first["reason"]
    assert "you edited b.txt and no check passed after it" in first["reason"]
    assert hook(config, "Stop", {"stop_hook_active": True}) is not None
    assert hook(config, "Stop", {"stop_hook_active": True}) is None  # bounded
    fired = hooks.fired(config)
    assert [(e["released"], e["blocks"]) for e in fired] == [(False, 1), (False, 2), (True, 2)]


@pytest.mark.process
def test_a_passing_run_silent_and_a_commit_satisfy_the_checklist(
    repo: Path, tmp_path: Path
) -> None:
    config = installed(repo, tmp_path, checks=("clean", "backpressure"))
    hook(config, "SessionStart", {"source": "startup"})
    hook(config, "PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "a.txt"}})
    failed = {"stdout": "\u2717 tests (exit 1)\n..."}
    run = {"tool_name": "Bash", "tool_input": {"command": "run-silent tests -- pytest"}}
    hook(config, "PostToolUse", {**run, "tool_response": failed})
    assert hook(config, "Stop", {}) is not None
    hook(config, "PostToolUse", {**run, "tool_response": {"stdout": "\u2713 tests\n"}})
    assert hook(config, "Stop", {}) is None


@pytest.mark.process
def test_changes_left_on_purpose_pass_when_the_agent_says_why(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, checks=("clean",))
    hook(config, "SessionStart", {"source": "startup"})
    (repo / "half-done.txt").write_text("wip\n")
    blocked = hook(config, "Stop", {})
    assert blocked is not None
    keep = blocked["reason"].split("write why into ")[1].split()[0]
    Path(keep).write_text("the human asked to see the draft\n")
    assert hook(config, "Stop", {}) is None


@pytest.mark.parametrize(
    ("message", "filed", "blocked"),
    [
        ("I found a bug in the parser while testing.", False, True),
        ("I found a bug in the parser while testing.", True, False),
        ("No bugs found; all green.", False, False),
        ("Fixed the bug the task described.", False, False),
    ],
)
def test_the_bug_check(message: str, filed: bool, blocked: bool) -> None:
    facts = checklist.Facts(
        claimed=None,
        changed=[],
        kept=False,
        unchecked=None,
        last_check=None,
        failed_check=None,
        last_message=message,
        bug_filed=filed,
    )
    assert bool(checklist.missing((checklist.Check.BUGS,), facts, keep_file="k")) is blocked


def test_checks_parse_and_refuse_typos() -> None:
    assert checklist.parse("task, clean") == (checklist.Check.TASK, checklist.Check.CLEAN)
    assert checklist.parse("none") == ()
    with pytest.raises(ValueError, match="tsk"):
        checklist.parse("tsk")


@pytest.mark.process
def test_fired_ignores_junk_and_keeps_known_fields(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path)
    events = guard_folder(config).parent / hooks.STATE / "events.jsonl"
    events.write_text(
        "not json\n[1]\n"
        + json.dumps({"hook": "guard", "rule": "x" * 1000, "secret": "dropped"})
        + "\n"
        + json.dumps({"hook": "other"})
        + "\n"
    )
    assert hooks.fired(config) == [{"hook": "guard", "rule": "x" * 300}]


@pytest.mark.process
def test_in_the_container_the_hooks_run_on_the_images_python(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "docker-run"
    state.mkdir()
    docker = hooks.install(Config(project=repo, prompt=Prompt("x")), state=state, workdir=repo)
    assert "--settings" not in docker.agent_argv()  # managed settings, root's in the container
    [(path, content)] = hooks.managed(docker)
    assert path == "/etc/claude-code/managed-settings.json"
    text = content.decode()
    assert text.count('"command": "python3 -I ') == 5
    assert sys.executable not in text


@pytest.mark.process
def test_the_formatter_runs_on_each_edited_file(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, format_command="sed -i s/messy/tidy/")
    (repo / "a.txt").write_text("messy\n")
    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(repo / "a.txt")}}
    hook(config, "PostToolUse", edit)
    assert (repo / "a.txt").read_text() == "tidy\n"


CHECKS = ("clean", "backpressure")


def edited(config: Config, path: str = "greet.py") -> None:
    hook(config, "SessionStart", {"source": "startup"})
    hook(config, "PostToolUse", {"tool_name": "Write", "tool_input": {"file_path": path}})


def ran(config: Config, command: str, stdout: str = "", *, failed: bool = False) -> None:
    """A Bash call as Claude Code reports it: PostToolUse on exit 0, else PostToolUseFailure."""
    call = {"tool_name": "Bash", "tool_input": {"command": command}}
    if failed:
        hook(config, "PostToolUseFailure", {**call, "error": "Exit code 1"})
    else:
        hook(config, "PostToolUse", {**call, "tool_response": {"stdout": stdout, "stderr": ""}})


@pytest.mark.process
@pytest.mark.parametrize(
    "command",
    [
        "python3 -m unittest -v 2>&1 | tail -4",
        "python3 -m py_compile *.py && python3 -m unittest -v",
        ".venv/bin/pytest -q",
        "cd src && timeout 600 pytest -x",
        "uv run mypy .",
        "cargo test --workspace",
        "go vet ./...",
        "npx vitest run",
        "make test",
        "run-silent test -- .venv/bin/pytest -q",
    ],
)
def test_running_the_stacks_checks_directly_counts(
    repo: Path, tmp_path: Path, command: str
) -> None:
    config = installed(repo, tmp_path, checks=("backpressure",))
    edited(config)
    ran(config, command, "Ran 2 tests in 0.001s\n\nOK")
    assert hook(config, "Stop", {}) is None


@pytest.mark.process
def test_a_check_piped_into_tail_that_failed_does_not_count(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, checks=("backpressure",))
    edited(config)
    ran(config, "python3 -m unittest -v 2>&1 | tail -4", "Ran 2 tests\n\nFAILED (failures=1)")
    blocked = hook(config, "Stop", {})
    assert blocked is not None
    assert "you edited greet.py and no check passed after it" in blocked["reason"]


@pytest.mark.process
def test_the_checklist_says_which_check_passed_before_the_edit_and_which_failed_after(
    repo: Path, tmp_path: Path
) -> None:
    config = installed(repo, tmp_path, checks=("backpressure",))
    edited(config, str(repo / "greet.py"))
    ran(config, "pytest -q", "3 passed")
    hook(config, "PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "test_x.py"}})
    ran(config, "pytest -q -x", failed=True)
    blocked = hook(config, "Stop", {})
    assert blocked is not None
    assert (
        "you edited test_x.py after the last passing check (`pytest -q`); `pytest -q -x` "
        "failed: run the stack's checks"
    ) in blocked["reason"]
    ran(config, "pytest -q", "4 passed")
    assert hook(config, "Stop", {}) is None


@pytest.mark.process
def test_a_command_the_project_lists_as_backpressure_counts(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, checks=("backpressure",))
    (repo / ".sgf").mkdir()
    (repo / ".sgf" / "backpressure.md").write_text(
        "| Step | Command |\n|---|---|\n| Test | `run-silent test -- ./scripts/check.sh all` |\n"
    )
    edited(config)
    ran(config, "./scripts/other.sh", "fine")
    assert hook(config, "Stop", {}) is not None  # not a check
    ran(config, "./scripts/check.sh all", "fine")
    assert hook(config, "Stop", {}) is None


@pytest.mark.process
def test_other_commands_are_no_check(repo: Path, tmp_path: Path) -> None:
    config = installed(repo, tmp_path, checks=CHECKS)
    edited(config)
    for command in ("python3 greet.py", "cat greet.py", "echo pytest", "git commit -am x"):
        ran(config, command, "ok")
    blocked = hook(config, "Stop", {})
    assert blocked is not None
    assert "no check passed" in blocked["reason"]
