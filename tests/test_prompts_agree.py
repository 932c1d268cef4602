"""The stage prompts agree with each other, with pn and with the workflow.

Every shipped prompt is rendered for every stack, with and without a spec, the way `sgf` renders
it; then each rendering is checked for the commands it must hold: the claim command of its
stage, how it gives work back or closes it, the loop's own sentinel, and the rule that the
suite stays green. Every `pn` command a prompt shows must parse against pn's real command line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from pensa.cli.base import cli as pn_cli
from sgf import resources, scaffold, stacks
from sgf.loop import prompts
from sgf.stages import PROMPTS

SENTINEL = 'echo "$RALPH_LOOP_ID" > .ralph-complete'
CLAIMS = {
    "build": "pn claim-next -t task -t chore{spec} --json",
    "test": "pn claim-next -t test{spec} --json",
}
# Placeholders in the prompts' commands, and a value pn accepts in their place.
PLACEHOLDERS = {
    "<p0..p3>": "p1",
    "<same as the bug>": "p1",
    "[--spec <stem>]": "--spec auth",
    "<stem>": "auth",
}


def rendered(tmp_path: Path, name: str, *, stack: str, spec: str | None) -> str:
    folder = tmp_path / ".sgf" / "prompts"
    folder.mkdir(parents=True, exist_ok=True)
    for part in (*scaffold.PROMPT_PARTS, name):
        (folder / f"{part}.md").write_text(resources.read_text("prompts", f"{part}.md"))
    variables = {
        "spec": spec,
        "stage": name,
        "loop_id": f"{name}-20260101T000000",
        "stack": stack,
        "iterations": 3,
        "afk": True,
    }
    return prompts.render(tmp_path, name, variables)


def pn_commands(text: str) -> list[str]:
    return [span for span in re.findall(r"`([^`\n]+)`", text) if span.startswith("pn ")]


def parse_pn(command: str) -> None:
    for placeholder, value in PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    command = re.sub(r"<[^<>]+>", "pn-1a2b3c4d", command)
    _, *args = shlex.split(command)
    ctx = pn_cli.make_context("pn", args)
    name, sub, rest = pn_cli.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
    assert sub is not None
    assert name is not None
    sub_ctx = sub.make_context(name, rest, parent=ctx)
    if isinstance(sub, click.Group):
        inner_name, inner, inner_rest = sub.resolve_command(
            sub_ctx, [*sub_ctx._protected_args, *sub_ctx.args]
        )
        assert inner is not None
        assert inner_name is not None
        inner.make_context(inner_name, inner_rest, parent=sub_ctx)


CASES = [
    (name, stack, spec) for name in PROMPTS for stack in stacks.names() for spec in (None, "auth")
]


@pytest.mark.parametrize(("name", "stack", "spec"), CASES)
def test_every_prompt_holds_the_commands_of_its_stage(
    tmp_path: Path, name: str, stack: str, spec: str | None
) -> None:
    text = rendered(tmp_path, name, stack=stack, spec=spec)
    assert "{{" not in text
    assert "{%" not in text
    assert SENTINEL in text
    assert "touch .ralph-complete" not in text
    # the paragraph about other loops comes from _shared.md only, never pasted by hand
    assert "your loop id in the file ends only yours" in text
    assert text.count("Other loops may run in this") == text.count("ends only yours")
    assert "makes it end only" not in text
    assert "Read `memento.md`" not in text  # CLAUDE.md imports it already
    assert "`pn prime`" in text
    if claim := CLAIMS.get(name):
        assert claim.format(spec=f" --spec {spec}" if spec else "") in text
        assert "pn close <" in text
        assert "pn release <" in text or name == "test"
    for command in pn_commands(text):
        try:
            parse_pn(command)
        except click.UsageError as e:
            pytest.fail(f"{name}.md shows `{command}`, which pn refuses: {e.format_message()}")


@pytest.mark.parametrize("stack", stacks.names())
def test_the_build_and_test_prompts_keep_the_suite_green_the_same_way(
    tmp_path: Path, stack: str
) -> None:
    """test.md once committed a red test that build.md forbids: now both follow one rule."""
    build = rendered(tmp_path, "build", stack=stack, spec=None)
    test = rendered(tmp_path, "test", stack=stack, spec=None)
    rule = "**The suite stays green.**"
    assert rule in build
    assert rule in test
    mark = re.search(r"as an expected failure that names the\s+bug: (.+?)\. The task", build, re.S)
    assert mark is not None
    assert mark.group(1) in test  # the same mark, in the stack's own syntax
    assert "Do not commit red" in build
    assert "pn dep add <id> <bug-id>" in test  # the failed item waits for the fix, then reruns
    assert 'pn close <id> --reason "fail' not in test
    assert "Remove the mark" in build


@pytest.mark.parametrize(("name", "subject"), [("verify", "verify"), ("test-plan", "test plan")])
def test_a_spec_is_due_again_by_the_commit_subject_the_loop_writes(
    tmp_path: Path, name: str, subject: str
) -> None:
    text = rendered(tmp_path, name, stack="python", spec=None)
    assert f'--grep="^{subject}: <stem>$"' in text
    assert f'-m "{subject}: <stem>"' in text


def test_verification_looks_at_the_code_not_only_the_spec(tmp_path: Path) -> None:
    text = rendered(tmp_path, "verify", stack="python", spec=None)
    assert "git log --oneline V..HEAD -- specs/<stem>.md <code paths>" in text


@pytest.mark.parametrize("name", ["spec", "issues"])
def test_interactive_sessions_end_by_their_sentinel(tmp_path: Path, name: str) -> None:
    text = rendered(tmp_path, name, stack="python", spec=None)
    assert "the session ends by itself" in text
    assert "end the session" not in text  # the agent cannot quit Claude Code itself


def test_git_claims_claim_on_the_host_what_each_prompt_claims() -> None:
    """With `claims = "git"` ralph claims for the agent (`RALPH_CLAIM`): the same filters."""
    from sgf.stages import STAGES

    claiming = {stage: stage.spec.claims for stage in STAGES if stage.spec.claims}
    assert {stage.value for stage in claiming} == set(CLAIMS)
    for stage, args in claiming.items():
        assert CLAIMS[stage.value].format(spec="") == f"pn claim-next {shlex.join(args)} --json"
