"""Notifications: `notify` in .sgf/config.toml or `--notify` runs on the host with a
JSON event on stdin when a loop ends, when a budget stops it and when a task is handed to a
human; a failing or slow notifier never holds up or breaks the loop. Real sgf, ralph, pn and
the repo's fake agent on the host."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sgf import notify

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]

AGENT = Path(__file__).resolve().parents[2] / "ralph" / "tests" / "agents" / "fake_agent.py"
SGF = Path(sys.executable).parent / "sgf"
PAID = ["result", {"total_cost_usd": 0.25, "usage": {"input_tokens": 90, "output_tokens": 10}}]
WaitFor = Callable[..., None]


def project(
    template: Path, tmp_path: Path, env: dict[str, str], script: object, config: str = ""
) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(template, root, symlinks=True)
    path = root / ".sgf" / "config.toml"
    path.write_text(path.read_text() + config)
    (root / ".sgf" / "prompts" / "build.md").write_text(json.dumps(script) + "\n")
    for argv in (["git", "add", "-A"], ["git", "commit", "-qm", "fake agent script"]):
        subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True)
    return root


def build(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SGF), "build", "-a", "--sandbox", "none", "--no-push", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def commit(root: Path, env: dict[str, str]) -> None:
    """Commit everything; pensa's hook exports and stages its files, so a second commit
    takes what the first one's hook staged."""
    for _ in range(2):
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", "a task"], cwd=root, env=env, capture_output=True)
    status = ["git", "status", "--porcelain"]
    assert subprocess.run(status, cwd=root, env=env, capture_output=True, check=True).stdout == b""


@pytest.fixture
def env(tool_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    # the fake agent counts its runs across loops (each loop has a workspace of its own)
    count = str(tmp_path / "agent-runs")
    return {
        **tool_env,
        "SGF_SKIP_PREFLIGHT": "1",
        "RALPH_COMMAND": str(AGENT),
        "FAKE_AGENT_COUNT": count,
    }


def events(path: Path, wait_for: WaitFor, kind: str = "end") -> list[dict[str, Any]]:
    """The events the notifier wrote, once one of `kind` is there (each runs on its own)."""

    def read() -> list[dict[str, Any]]:
        text = path.read_text() if path.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    wait_for(lambda: any(e["event"] == kind for e in read()), timeout=30, what=f"a {kind} event")
    return read()


def test_a_completed_loop_tells_the_config_notifier_its_end(
    project_template: Path, tmp_path: Path, env: dict[str, str], wait_for: WaitFor
) -> None:
    told = tmp_path / "told.jsonl"
    script = {"1": [PAID], "2": [["write", ".ralph-complete", "$RALPH_LOOP_ID"], PAID]}
    root = project(project_template, tmp_path, env, script, f'notify = "cat >> {told}"\n')
    done = build(root, env, "5")
    assert done.returncode == 0, done.stderr
    (end,) = events(told, wait_for)
    assert end == {
        "event": "end", "project": str(root), "loop_id": end["loop_id"], "stage": "build",
        "stop_reason": "complete", "exit_code": 0, "iterations": 2, "cost": 0.5,
        "tokens": 200, "seconds": end["seconds"],
    }  # fmt: skip
    assert end["loop_id"].startswith("build-")


def test_a_budget_stop_is_told_then_the_end(
    project_template: Path, tmp_path: Path, env: dict[str, str], wait_for: WaitFor
) -> None:
    root = project(project_template, tmp_path, env, {"default": [PAID]})
    told = tmp_path / "told.jsonl"
    done = build(root, env, "--max-cost", "0.4", "--notify", f"cat >> {told}", "5")
    assert done.returncode == 2, done.stderr
    found = events(told, wait_for)
    wait_for(lambda: len(events(told, wait_for)) == 2, what="both events")
    found = events(told, wait_for)
    budget = next(e for e in found if e["event"] == "budget")
    assert budget["stop_reason"].startswith("budget reached: cost $0.5000")
    assert (budget["exit_code"], budget["iterations"], budget["cost"]) == (2, 2, 0.5)


def test_a_task_handed_to_a_human_is_told_while_the_loop_runs(
    project_template: Path, tmp_path: Path, env: dict[str, str], wait_for: WaitFor
) -> None:
    give_up = (
        "pn claim-next --json > claimed.json && pn release "
        "$(python3 -c \"import json; print(json.load(open('claimed.json'))['id'])\")"
    )
    ready = tmp_path / "ready"
    script = {"default": [["sh", give_up], PAID], "5": [["ready", str(ready)], ["hang"]]}
    root = project(project_template, tmp_path, env, script)
    created = subprocess.run(
        ["pn", "create", "the hard task", "-t", "task", "--json"], cwd=root, env=env,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    task = json.loads(created.stdout)["id"]
    commit(root, env)
    told = tmp_path / "told.jsonl"
    child = subprocess.Popen(
        [str(SGF), "build", "-a", "--sandbox", "none", "--no-push", "--notify", f"cat >> {told}",
         "6"],
        cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        found = events(told, wait_for, "stuck")
        wait_for(ready.exists, what="the fifth iteration")
        assert child.poll() is None  # told while the loop still runs, not at its end
        (stuck,) = [e for e in found if e["event"] == "stuck"]
        assert (stuck["task"], stuck["title"], stuck["stage"]) == (task, "the hard task", "build")
        assert stuck["loop_id"].startswith("build-")
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    assert child.returncode == 130
    end = [e for e in events(told, wait_for) if e["event"] == "end"]
    assert [e["stop_reason"] for e in end] == ["interrupted"]
    assert len([e for e in events(told, wait_for) if e["event"] == "stuck"]) == 1  # told once


def test_a_failing_or_hanging_notifier_neither_blocks_nor_breaks_the_loop(
    project_template: Path, tmp_path: Path, env: dict[str, str], wait_for: WaitFor
) -> None:
    script = {"1": [["write", ".ralph-complete", "$RALPH_LOOP_ID"], PAID], "default": [PAID]}
    root = project(project_template, tmp_path, env, script)
    started = tmp_path / "started"
    hang = f"cat > {started}; exec sleep 600"
    env = {**env, "SGF_NOTIFY_TIMEOUT": "10"}
    done = build(root, env, "--notify", hang, "3")
    assert done.returncode == 0, done.stderr
    log = root / notify.LOG
    assert "killed" not in log.read_text()  # sgf did not wait for it
    wait_for(started.exists, what="the notifier to start")
    wait_for(lambda: "killed after 10 s" in log.read_text(), timeout=30, what="the kill")
    done = build(root, env, "--notify", "echo oops >&2; exit 7", "1")
    assert done.returncode == 2, done.stderr  # its own exit, not the notifier's
    wait_for(lambda: "exited with 7" in log.read_text(), what="the failure in the log")
    assert "oops" in log.read_text()


def test_the_manual_recipes_are_valid_config_and_shell() -> None:
    """Each `notify = ...` recipe of docs/sgf.md parses as `.sgf/config.toml` and as `sh`."""
    import tomllib

    from sgf import config

    manual = (Path(__file__).resolve().parents[3] / "docs" / "sgf.md").read_text()
    block = manual[manual.index("# a desktop notification") :]
    recipes = [
        line for line in block[: block.index("```")].splitlines() if line.startswith("notify")
    ]
    assert len(recipes) == 3
    for line in recipes:
        command = tomllib.loads(line)["notify"]
        assert config.parse(line).notify == command
        checked = subprocess.run(["sh", "-n", "-c", command], capture_output=True, check=False)
        assert checked.returncode == 0, (command, checked.stderr)
