"""A loop's original arguments, kept and turned back into the same sgf command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgf.config import Isolation, SandboxKind
from sgf.loop import relaunch
from sgf.loop.loops import Launch
from sgf.stages import Stage


@pytest.mark.parametrize(
    ("request_", "args"),
    [
        (Launch(Stage.VERIFY), ["verify"]),
        (Launch(Stage.ISSUES_PLAN, afk=True, iterations=4), ["issues", "plan", "-a", "4"]),
        (  # one loop of a `--parallel` run: restarted alone, in a worktree of its own
            Launch(Stage.BUILD, afk=True, iterations=3, isolation=Isolation.WORKTREE),
            ["build", "-a", "--worktree", "3"],
        ),
        (
            Launch(
                Stage.BUILD,
                spec="auth",
                afk=True,
                iterations=10,
                auto_push=False,
                template="img:1",
                sandbox=SandboxKind.NONE,
                network="host",
                max_cost=2.5,
                max_tokens=1000,
                max_time="30m",
            ),
            [
                "build", "--spec", "auth", "-a", "--template", "img:1", "--no-push",
                "--sandbox", "none", "--network", "host", "--max-cost", "2.5",
                "--max-tokens", "1000", "--max-time", "30m", "10",
            ],
        ),
    ],
)  # fmt: skip
def test_sgf_args_replay_the_request(request_: Launch, args: list[str], tmp_path: Path) -> None:
    assert relaunch.sgf_args(request_) == args
    relaunch.save(tmp_path, "loop-1", request_)
    assert relaunch.load(tmp_path, "loop-1") == request_


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"stage": "deploy"}',
        '{"afk": true}',
        '{"stage": "build", "iterations": "ten"}',
        '{"stage": "build", "afk": "yes"}',
        '{"stage": "build", "max_cost": true}',
        '{"stage": "build", "isolation": "elsewhere"}',
    ],
)
def test_a_damaged_launch_file_is_no_request(text: str, tmp_path: Path) -> None:
    path = relaunch.launch_path(tmp_path, "loop-1")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert relaunch.load(tmp_path, "loop-1") is None


def test_a_missing_launch_file_is_no_request(tmp_path: Path) -> None:
    assert relaunch.load(tmp_path, "nope") is None
