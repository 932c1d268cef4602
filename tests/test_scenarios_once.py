"""Scripted agents run each command once, the prompt's way: a scenario never hides a product bug.

A scenario that retried `git commit` until it passed kept a real bug out of sight (a commit of
pensa's changes alone failed the first time). So every Bash step of every scenario in
tests/scenarios, and of the ones shipped for `--offline` (templates/scenarios), is checked: no
product command (`git`, `pn`, `sgf`, `ralph`, `claude`) inside
a shell loop, none run twice in one step, no `goto` back to an earlier step; and each stage's
scenario commits with the very command its prompt in templates/ gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ralph.testing.scenario import Script, load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "scenarios"
SHIPPED = ROOT / "templates" / "scenarios"  # `sgf <stage> --offline`: named after the stage
PROMPTS = ROOT / "templates" / "prompts"

PRODUCT = re.compile(r"(?<![\w./-])(git|pn|sgf|ralph|claude)(?![\w.-])")
LOOP = re.compile(r"\b(for|while|until)\b(?P<body>.*?)\bdone\b", re.DOTALL)
COMMIT = re.compile(r"\bgit\s+commit\b")

# Which stage's prompt each scenario script plays (a script not named here plays "build").
STAGES = {
    ("two-loops", "plan"): "issues-plan",
    ("two-loops-worktree", "plan"): "issues-plan",
    ("verify", "main"): "verify",
    ("test-plan", "main"): "test-plan",
    ("test", "main"): "test",
    ("issues-log", "main"): "issues",
    **{("shipped-" + path.stem, "main"): path.stem for path in SHIPPED.glob("*.json")},
}


def bash_commands(script: Script) -> list[str]:
    return [
        str(tool.input.get("command", ""))
        for step in script.steps
        for tool in step.tools
        if tool.name == "Bash" or tool.agent_shell  # `{"shell": ...}` runs in any agent's shell
    ]


def scripts() -> list[tuple[str, Script]]:
    found = [
        (path.stem, script)
        for path in sorted(SCENARIOS.glob("*.json"))
        for script in load_scenario(path).scripts
    ] + [
        ("shipped-" + path.stem, script)
        for path in sorted(SHIPPED.glob("*.json"))
        for script in load_scenario(path).scripts
    ]
    assert found, f"no scenarios in {SCENARIOS}"
    return found


def retries(command: str) -> list[str]:
    """Why `command` would run a product command more than once (nothing: it runs each once)."""
    found = [
        f"a {m.group(1)} loop runs {', '.join(sorted(set(PRODUCT.findall(m.group(0)))))}"
        for m in LOOP.finditer(command)
        if PRODUCT.search(m.group(0))
    ]
    if len(COMMIT.findall(command)) > 1:
        found.append("git commit appears more than once")
    return found


def prompt_commits(stage: str) -> list[re.Pattern[str]]:
    """The commit commands `templates/prompts/<stage>.md` gives, as patterns where each
    `<placeholder>` stands for any text without a quote."""
    text = (PROMPTS / f"{stage}.md").read_text(encoding="utf-8")
    commands = re.findall(r"`(git add -A && git commit [^`]*)`", text)
    assert commands, f"{stage}.md gives no commit command"
    patterns = []
    for command in commands:
        pieces = re.split(r"<[^>]+>", command)
        body = r'[^"]+'.join(re.escape(piece) for piece in pieces)
        patterns.append(re.compile(rf"(?:^|&& |; ){body}(?:$| &&|;)"))
    return patterns


def test_the_check_catches_the_retry_a_scenario_once_had() -> None:
    old = (
        "for try in 1 2 3 4 5 6 7 8; do git add -A && git commit -q -m '[x] plan fix' "
        "&& break; sleep 1; done; git log --oneline -1"
    )
    assert retries(old) == ["a for loop runs git"]
    waiting = "timeout 120 sh -c 'until pn list --json | grep -q fix; do sleep 0.2; done'"
    assert retries(waiting) == ["a until loop runs pn"]
    assert retries("git add -A && git commit -m x || git commit -m x") == [
        "git commit appears more than once"
    ]
    assert retries("timeout 120 sh -c 'until grep -qs x .pensa/*.jsonl; do sleep 1; done'") == []
    assert (
        retries('pn close t --json && git add -A && git commit -m "[t] implement" && git log -1')
        == []
    )


@pytest.mark.parametrize(("name", "script"), scripts(), ids=lambda v: getattr(v, "name", v))
def test_no_scenario_retries_a_product_command(name: str, script: Script) -> None:
    for command in bash_commands(script):
        assert retries(command) == [], f"{name}/{script.name}: {command}"
    for index, step in enumerate(script.steps):
        if step.goto is not None:
            assert script.index_of(step.goto) > index, f"{name}/{script.name}: goto back"


@pytest.mark.parametrize(("name", "script"), scripts(), ids=lambda v: getattr(v, "name", v))
def test_a_scenario_commits_with_its_prompts_command_exactly(name: str, script: Script) -> None:
    stage = STAGES.get((name, script.name), "build")
    patterns = prompt_commits(stage)
    for command in bash_commands(script):
        if COMMIT.search(command):
            assert any(p.search(command) for p in patterns), (
                f"{name}/{script.name} commits with {command!r}, not as {stage}.md says"
            )


@pytest.mark.parametrize(
    "stage", ["build", "issues", "issues-plan", "spec", "test-plan", "test", "verify"]
)
def test_every_stage_that_commits_has_a_scenario_that_commits_its_way(stage: str) -> None:
    patterns = prompt_commits(stage)
    played = [
        command
        for name, script in scripts()
        if STAGES.get((name, script.name), "build") == stage
        for command in bash_commands(script)
        if any(p.search(command) for p in patterns)
    ]
    assert played, f"no scenario commits the way {stage}.md says"
