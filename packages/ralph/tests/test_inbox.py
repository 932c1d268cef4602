"""inbox.py: what crosses from the sandbox is one bundle, read as data and checked as a fetch
checks it, on real repositories; nothing of a bad bundle is taken."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ralph import inbox
from ralph.inbox import CrossingRefused, parse_header

from .conftest import Git

ID = "a" * 40
WANTED = {"refs/ralph/export": "refs/sgf/incoming/loop"}


@pytest.fixture
def host(repo: Path) -> Path:
    return repo


@pytest.fixture
def sandbox(host: Path, tmp_path: Path, git: Git) -> Path:
    """The agent's repository: a clone of the host's, with one commit of its own."""
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(host), str(work))
    (work / "b.txt").write_text("b\n")
    git(work, "add", "b.txt")
    git(work, "commit", "-qm", "feat: b")
    return work


def bundle(sandbox: Path, git: Git, out: Path, *refs: str) -> Path:
    """The sandbox's commits the host lacks (origin/main is the host's main)."""
    git(sandbox, "update-ref", "refs/ralph/export", "HEAD")
    named = refs or ("refs/ralph/export",)
    git(sandbox, "-c", "core.useReplaceRefs=false", "bundle", "create", str(out), *named,
        "--not", "origin/main")  # fmt: skip
    return out


@pytest.mark.process
def test_a_sound_bundle_lands_on_the_incoming_ref_only(
    host: Path, sandbox: Path, git: Git, tmp_path: Path
) -> None:
    path = bundle(sandbox, git, tmp_path / "b.bundle")
    taken = inbox.receive(host, path, WANTED, env=dict(os.environ))
    tip = git(sandbox, "rev-parse", "HEAD")
    assert taken == {"refs/sgf/incoming/loop": tip}
    assert git(host, "rev-parse", "refs/sgf/incoming/loop") == tip
    assert git(host, "for-each-ref", "--format=%(refname)", "refs/heads/") == "refs/heads/main"


@pytest.mark.process
def test_refs_nobody_asked_for_are_left_out(
    host: Path, sandbox: Path, git: Git, tmp_path: Path
) -> None:
    git(sandbox, "tag", "evil")
    git(sandbox, "replace", "HEAD", "HEAD~1")
    replaced = f"refs/replace/{git(sandbox, 'rev-parse', 'HEAD')}"
    path = bundle(
        sandbox, git, tmp_path / "b.bundle", "refs/ralph/export", "refs/tags/evil", replaced
    )
    inbox.receive(host, path, WANTED, env=dict(os.environ))
    assert git(host, "tag", "--list") == ""
    assert git(host, "for-each-ref", "refs/replace/") == ""


@pytest.mark.process
def test_a_bundle_with_a_broken_object_is_refused_whole(
    host: Path, sandbox: Path, git: Git, tmp_path: Path
) -> None:
    tree = git(sandbox, "rev-parse", "HEAD^{tree}")
    parent = git(sandbox, "rev-parse", "HEAD")
    text = (
        f"tree {tree}\nparent {parent}\nauthor x <x> notadate +0000\ncommitter c <c> 1 +0000\n\nx\n"
    )
    bad = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        cwd=sandbox, input=text, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    git(sandbox, "reset", "-q", "--hard", bad)
    path = bundle(sandbox, git, tmp_path / "b.bundle")
    with pytest.raises(CrossingRefused, match="git refused the bundle's objects"):
        inbox.receive(host, path, WANTED, env=dict(os.environ))
    assert git(host, "for-each-ref", "refs/sgf/") == ""


@pytest.mark.process
def test_a_bundle_that_builds_on_what_the_host_lacks_is_refused(
    host: Path, sandbox: Path, git: Git, tmp_path: Path
) -> None:
    (sandbox / "c.txt").write_text("c\n")
    git(sandbox, "add", "c.txt")
    git(sandbox, "commit", "-qm", "feat: c")
    git(sandbox, "update-ref", "refs/ralph/export", "HEAD")
    path = tmp_path / "b.bundle"
    git(sandbox, "bundle", "create", str(path), "refs/ralph/export", "--not", "HEAD~1")
    with pytest.raises(CrossingRefused, match="which this repository does not have"):
        inbox.receive(host, path, WANTED, env=dict(os.environ))


@pytest.mark.process
@pytest.mark.parametrize("kind", ["link", "fifo", "folder", "garbage", "huge"])
def test_what_is_no_sound_bundle_is_refused_without_blocking(
    host: Path, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "workspace.bundle"
    victim = tmp_path / "victim"
    victim.write_text("# v2 git bundle\n")
    if kind == "link":
        path.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "garbage":
        path.write_bytes(b"not a bundle at all\n")
    else:
        path.write_bytes(b"# v2 git bundle\n" + b"x" * 64)
    limit = {"max_bytes": 32} if kind == "huge" else {}
    with pytest.raises(CrossingRefused):
        inbox.receive(host, path, WANTED, env=dict(os.environ), **limit)


@pytest.mark.process
def test_no_bundle_is_no_commits(host: Path, tmp_path: Path) -> None:
    assert inbox.receive(host, tmp_path / "none", WANTED, env=None) == {}


@pytest.mark.parametrize(
    "header",
    [
        b"# v3 git bundle\n\n",
        b"# v2 git bundle\n" + ID.encode() + b" refs/heads/main",  # never ended
        b"# v2 git bundle\n-zzz prerequisite\n\n",
        b"# v2 git bundle\n" + ID.encode() + b" refs/../../evil\n\n",
        b"# v2 git bundle\n" + ID.encode() + b" refs/a\n" + ID.encode() + b" refs/a\n\n",
    ],
)
def test_a_header_that_is_not_a_v2_bundles_is_refused(header: bytes) -> None:
    with pytest.raises(CrossingRefused):
        parse_header(header)


def test_a_header_is_read_as_data() -> None:
    found = parse_header(b"# v2 git bundle\n-" + ID.encode() + b" base\n" + ID.encode()
                         + b" refs/ralph/export\n\nPACK")  # fmt: skip
    assert found.prerequisites == (ID,)
    assert found.refs == {"refs/ralph/export": ID}
