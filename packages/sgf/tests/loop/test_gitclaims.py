"""`claims = "git"`: what sgf hands ralph, per stage."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from sgf.config import Claims, Config
from sgf.errors import SgfError
from sgf.loop import gitclaims
from sgf.loop.loops import Launch
from sgf.stages import Stage

from ..conftest import git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

GIT = Config(stack="python", docker_template="img", claims=Claims.GIT)


@pytest.fixture
def clone(make_repo: Callable[..., Path]) -> Path:
    root = make_repo("clone")
    git(root, "config", "sgf.machine", "alpha")
    return root


@pytest.mark.parametrize(
    ("stage", "spec", "claim"),
    [
        (Stage.BUILD, None, "-t task -t chore"),
        (Stage.BUILD, "auth", "-t task -t chore --spec auth"),
        (Stage.TEST, "auth", "-t test --spec auth"),
    ],
)
def test_a_claiming_stage_has_ralph_claim_on_the_host_with_its_filters(
    clone: Path, stage: Stage, spec: str | None, claim: str
) -> None:
    got = gitclaims.env(clone, GIT, Launch(stage, spec=spec), loop_id="build-20260101T000000")
    assert got == {
        "PN_ACTOR": "build-20260101T000000@alpha",
        "PN_CLAIMS": "git",
        "RALPH_CLAIM": claim,
    }
    assert shlex.split(got["RALPH_CLAIM"])[: len(stage.spec.claims)] == list(stage.spec.claims)


def test_a_stage_that_claims_nothing_gets_only_its_actor(clone: Path) -> None:
    got = gitclaims.env(clone, GIT, Launch(Stage.VERIFY), loop_id="verify-20260101T000000")
    assert got == {"PN_ACTOR": "verify-20260101T000000@alpha"}


def test_local_claims_add_nothing(clone: Path) -> None:
    local = Config(stack="python", docker_template="img")
    assert gitclaims.env(clone, local, Launch(Stage.BUILD), loop_id="build-1") == {}


def test_git_claims_need_auto_push(clone: Path) -> None:
    with pytest.raises(SgfError, match='claims = "git" needs auto_push'):
        gitclaims.env(clone, GIT, Launch(Stage.BUILD, auto_push=False), loop_id="build-1")


def test_a_clone_without_a_name_is_named_by_host_and_path(make_repo: Callable[..., Path]) -> None:
    one, other = make_repo("one"), make_repo("other")
    assert gitclaims.machine(one) != gitclaims.machine(other)
    assert gitclaims.machine(one) == gitclaims.machine(one)
