"""PN_CLAIMS=git: claims published through a shared remote as a compare-and-swap.

Races are staged with a real seam: a clone's `remote.origin.uploadpack` names a script that
serves the fetch with git-upload-pack and then acts (another clone claims, or the remote
moves), before the fetch returns.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pensa.store import Store

from .conftest import BIN, PN, Pn, committed_at, git


@pytest.fixture
def tasks() -> list[str]:
    """The titles of the remote's ready tasks, in the order claim-next takes them."""
    return ["first", "second"]


@pytest.fixture
def remote(
    tmp_path: Path, repo: Path, pn: Pn, tasks: list[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A bare remote holding a pensa project with ready `tasks` (`first` and `second`)."""
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    assert pn("init").code == 0
    for title in tasks:
        assert pn("q", title, "-t", "task").code == 0
    assert pn("export", "--stage").code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tasks")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    return bare


def clone(remote: Path, where: Path, pn: Pn) -> Path:
    git(where.parent, "clone", "-q", str(remote), str(where))
    git(where, "config", "user.email", "t@example.com")
    git(where, "config", "user.name", where.name)
    assert pn("init", cwd=where).code == 0
    return where


def on_id(pn: Pn, where: Path, title: str) -> str:
    return str(next(i["id"] for i in pn("list", "--json", cwd=where).json() if i["title"] == title))


def on_remote(remote: Path) -> dict[str, tuple[str, str | None]]:
    text = committed_at(remote)
    records = [json.loads(line) for line in text.splitlines()]
    return {r["title"]: (r["status"], r.get("assignee")) for r in records}


GIT = {"PN_CLAIMS": "git", "PN_CLAIM_BACKOFF": "0"}


def test_a_claim_is_pushed_before_claim_next_answers(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    claimed = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert claimed.code == 0, claimed.err
    assert claimed.json()["title"] == "first"
    assert on_remote(remote)["first"] == ("in_progress", "loop-a")
    assert (
        git(remote, "log", "-1", "--format=%s").strip()
        == f"pn: claim {claimed.json()['id']} by loop-a"
    )
    assert git(a, "status", "--porcelain").strip() == ""


def test_the_machine_that_published_first_keeps_the_task(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)  # b's database still says `first` is ready
    assert pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).code == 0
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.code == 0, got.err
    assert got.json()["title"] == "second"  # first went to a, who pushed first
    assert on_remote(remote) == {
        "first": ("in_progress", "loop-a"),
        "second": ("in_progress", "loop-b"),
    }
    mine = {i["title"]: i.get("assignee") for i in pn("list", "--json", cwd=b).json()}
    assert mine == {"first": "loop-a", "second": "loop-b"}


def after_fetch(where: Path, then: str) -> None:
    """Run the shell command `then` after every fetch `where` makes from its remote, while
    that fetch waits: git-upload-pack has served the tip, the fetch has not returned yet."""
    script = where.parent / f"{where.name}-upload-pack"
    script.write_text(f'#!/bin/sh\ngit-upload-pack "$@" || exit\n{then}\n')
    script.chmod(0o755)
    git(where, "config", "remote.origin.uploadpack", str(script))


MOVE = (
    "git --git-dir={remote} update-ref refs/heads/main "
    "$(git --git-dir={remote} commit-tree -p main -m moved main^{{tree}})"
)


def move(remote: Path) -> None:
    """Land an unrelated commit on the remote's main."""
    subprocess.run(["sh", "-c", MOVE.format(remote=remote)], check=True)


def test_out_of_tries_the_claim_is_given_back(remote: Path, tmp_path: Path, pn: Pn) -> None:
    b = clone(remote, tmp_path / "b", pn)
    # every fetch is followed by a commit landing on the remote: every push is rejected
    after_fetch(b, MOVE.format(remote=remote))
    env = {**GIT, "PN_ACTOR": "loop-b", "PN_CLAIM_TRIES": "3"}
    got = pn("claim-next", cwd=b, env=env)
    assert got.code == 1
    assert "could not publish the claim of" in got.err
    assert "in 3 tries" in got.err
    mine = {i["title"]: i.get("assignee") for i in pn("list", "--json", cwd=b).json()}
    assert mine == {"first": None, "second": None}
    assert on_remote(remote) == {"first": ("open", None), "second": ("open", None)}


def test_a_claim_published_between_fetch_and_push_wins_and_the_loser_decides_again(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    """Two clones race for the one ready task: exactly one gets it."""
    b = clone(remote, tmp_path / "b", pn)
    assert pn("close", on_id(pn, b, "second"), "-r", "done", cwd=b).code == 0
    assert pn("export", cwd=b).code == 0
    git(b, "commit", "-qam", "second done")
    git(b, "push", "-q")
    c = clone(remote, tmp_path / "c", pn)  # c will race b for `first`, the one ready task
    move(remote)  # b is behind: a push of what b decided without fetching is rejected
    # b's first fetch has served the tip when c claims `first` and publishes it
    marker = tmp_path / "raced"
    env = f"PN_ACTOR=loop-c PN_CLAIMS=git PN_CLAIM_BACKOFF=0 PN_DIR= PATH={BIN}:$PATH"
    after_fetch(
        b,
        f"[ -e {marker} ] && exit 0; touch {marker}; cd {c} && "
        f"env {env} pn claim-next --json > {tmp_path / 'c.json'} 2>&1",
    )
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.code == 0, got.err
    assert marker.exists()
    raced = json.loads((tmp_path / "c.json").read_text())
    winners = [who for who, issue in (("b", got.json()), ("c", raced)) if issue]
    assert winners == ["c"]
    assert raced["title"] == "first"
    assert on_remote(remote)["first"] == ("in_progress", "loop-c")
    claims = git(remote, "log", "--format=%s", "--grep", "^pn: claim", "main").splitlines()
    assert claims == [f"pn: claim {raced['id']} by loop-c"]
    mine = {
        i["title"]: (i["status"], i.get("assignee"))
        for i in pn("list", "--json", "--all", cwd=b).json()
    }
    assert mine["first"] == ("in_progress", "loop-c")
    # b's lost claim never took effect: it is not counted towards PN_STUCK_AFTER
    with Store.open(b / ".pensa" / "db.sqlite") as store:
        claimed = store.rows("SELECT actor FROM events WHERE event_type = 'claimed'", ())
    assert claimed == []


def test_a_branch_without_upstream_is_a_clear_error(repo: Path, pn: Pn) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    assert pn("q", "task", "-t", "task").code == 0
    got = pn("claim-next", env=GIT)
    assert got.code == 1
    assert "this branch has none: `git push -u origin <branch>` once" in got.err


def test_git_claims_refuse_a_shared_database(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    env = {**GIT, "PN_SHARED_DB": str(a / ".pensa" / "db.sqlite")}
    got = pn("claim-next", cwd=a, env=env)
    assert got.code == 1
    assert "run one loop per clone" in got.err


def test_a_remote_out_of_reach_gives_the_claim_back(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    after_fetch(a, f"mv {remote} {tmp_path / 'gone.git'}")  # fetched, then out of reach
    got = pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert "cannot publish the claim of" in got.err
    assert "released pn-" in got.err
    held = [i for i in pn("list", "--json", cwd=a).json() if i.get("assignee")]
    assert held == []


def test_a_planted_claims_lock_link_is_refused(remote: Path, tmp_path: Path, pn: Pn) -> None:
    """The lock sits at the git directory's top, which the sandboxed agent can write."""
    a = clone(remote, tmp_path / "a", pn)
    victim = tmp_path / "victim"
    (a / ".git" / "pensa-claims.lock").symlink_to(victim)  # dangling: O_CREAT would make it
    claimed = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert claimed.code == 1
    assert claimed.error()["code"] == "unsafe_path"
    assert not victim.exists()


def test_a_remote_out_of_reach_before_the_fetch_claims_nothing(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    remote.rename(tmp_path / "gone.git")
    got = pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert got.err.startswith("error: cannot claim: git fetch from origin/main failed: ")
    assert "does not appear to be a git repository" in got.err
    held = [i for i in pn("list", "--json", cwd=a).json() if i.get("assignee")]
    assert held == []


@pytest.mark.parametrize("tasks", [[f"task {n}" for n in range(40)]])
def test_three_clones_of_sixteen_claimers_claim_each_task_once(
    remote: Path, tmp_path: Path, pn: Pn, tasks: list[str]
) -> None:
    """48 concurrent claim-next processes for 40 tasks, with the default tries and backoff:
    each task claimed once, the other 8 told "nothing", none failing."""
    clones = [clone(remote, tmp_path / name, pn) for name in ("a", "b", "c")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PN_")}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    started = [
        (
            f"{where.name}-{n}",
            subprocess.Popen(
                [PN, "claim-next", "--json"],
                cwd=where,
                env={**env, "PN_CLAIMS": "git", "PN_ACTOR": f"{where.name}-{n}"},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ),
        )
        for n in range(16)
        for where in clones
    ]
    answers = {}
    for actor, proc in started:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, f"{actor}: {err}"
        answers[actor] = json.loads(out)
    claimed = {actor: issue["title"] for actor, issue in answers.items() if issue}
    assert sorted(claimed.values()) == sorted(tasks)  # every task once: no double claims
    assert sum(issue is None for issue in answers.values()) == 48 - 40
    published = on_remote(remote)
    assert {title: holder for title, (_, holder) in published.items()} == {
        title: actor for actor, title in claimed.items()
    }
    claims = git(remote, "log", "--format=%s", "--grep", "^pn: claim", "main").splitlines()
    assert len(claims) == 40  # no claim pushed over another's


@pytest.mark.parametrize(
    ("name", "value", "least"),
    [("PN_CLAIM_TRIES", "0", 1), ("PN_CLAIM_TRIES", "many", 1), ("PN_CLAIM_BACKOFF", "-1", 0)],
)
def test_bad_tries_or_backoff_are_a_clear_error(
    remote: Path, tmp_path: Path, pn: Pn, name: str, value: str, least: int
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    got = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a", name: value})
    assert got.code == 1
    assert got.error()["error"] == f"{name} must be a number, at least {least}; it is {value!r}"
    assert on_remote(remote) == {"first": ("open", None), "second": ("open", None)}


def test_a_task_deleted_on_the_remote_is_not_claimed_back_to_life(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)  # b's database still offers `first`
    assert pn("delete", on_id(pn, a, "first"), cwd=a).code == 0
    assert pn("export", cwd=a).code == 0
    git(a, "add", "-A")
    git(a, "commit", "-qm", "first deleted")
    git(a, "push", "-q")
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.code == 0, got.err
    assert got.json()["title"] == "second"
    assert on_remote(remote) == {"second": ("in_progress", "loop-b")}
    assert [i["title"] for i in pn("list", "--json", "--all", cwd=b).json()] == ["second"]


def test_a_remote_hook_that_declines_the_push_is_an_error_not_a_race(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'claims are closed today' >&2\nexit 1\n")
    hook.chmod(0o755)
    got = pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert "cannot publish the claim of" in got.err
    assert "pre-receive hook declined" in got.err
    assert "tries" not in got.err
    held = [i for i in pn("list", "--json", cwd=a).json() if i.get("assignee")]
    assert held == []
