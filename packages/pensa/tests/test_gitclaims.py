"""PN_CLAIMS=git: claims published on the remote's claims ref, as a compare-and-swap.

Every remote is a real bare repository. Races are staged with a real seam: a clone's
`remote.origin.uploadpack` names a script that serves the fetch with git-upload-pack, notes
it in a log and then acts (another clone claims, or the claims ref moves) before the fetch
returns.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pensa.gitremote import REF
from pensa.store import Store

from .conftest import BIN, PN, Pn, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


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


def titles(pn: Pn, where: Path) -> dict[str, str]:
    """Issue id -> title, as the clone `where` has them."""
    return {i["id"]: i["title"] for i in pn("list", "--json", "--all", cwd=where).json()}


def board(remote: Path, pn: Pn, where: Path) -> dict[str, tuple[str, str]]:
    """The remote's claims ref: title -> (state, actor); {} when nothing was published."""
    if subprocess.run(["git", "-C", str(remote), "rev-parse", "-q", "--verify", REF],
                      capture_output=True, check=False).returncode != 0:  # fmt: skip
        return {}
    named = titles(pn, where)
    out = {}
    for name in git(remote, "ls-tree", "-r", "--name-only", REF).split():
        entry = json.loads(git(remote, "show", f"{REF}:{name}"))
        out[named[name.rsplit("/", 1)[-1]]] = (entry["state"], entry["actor"])
    return out


def mine(pn: Pn, where: Path) -> dict[str, tuple[str, str | None]]:
    """Title -> (status, assignee) in the clone's database."""
    issues = pn("list", "--json", "--all", cwd=where).json()
    return {i["title"]: (i["status"], i.get("assignee")) for i in issues}


def claimed_events(where: Path) -> list[str]:
    with Store.open(str(where / ".pensa" / "db.sqlite")) as store:
        rows = store.rows("SELECT actor FROM events WHERE event_type = 'claimed'", ())
    return [str(row[0]) for row in rows]


def after_fetch(where: Path, then: str) -> Path:
    """Run the shell command `then` after every fetch `where` makes from its remote, while
    that fetch waits: git-upload-pack has served the tip, the fetch has not returned yet.
    Every fetch is noted in the log this returns."""
    script = where.parent / f"{where.name}-upload-pack"
    log = where.parent / f"{where.name}-fetches"
    script.write_text(f'#!/bin/sh\necho fetch >> {log}\ngit-upload-pack "$@" || exit\n{then}\n')
    script.chmod(0o755)
    git(where, "config", "remote.origin.uploadpack", str(script))
    return log


# Another claim lands on the claims ref (the ref made when there is none yet).
MOVE = (
    "t=$(git --git-dir={remote} rev-parse -q --verify {ref}) && "
    "c=$(git --git-dir={remote} commit-tree -p $t -m moved $t^{{tree}}) || "
    "c=$(git --git-dir={remote} commit-tree -m moved 4b825dc642cb6eb9a060e54bf8d69288fbee4904); "
    "git --git-dir={remote} update-ref {ref} $c"
)

GIT = {"PN_CLAIMS": "git", "PN_CLAIM_BACKOFF": "0"}


def test_a_claim_is_published_on_the_claims_ref_and_never_on_the_code_branch(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    main = git(remote, "rev-parse", "main").strip()
    claimed = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert claimed.code == 0, claimed.err
    assert claimed.json()["title"] == "first"
    assert board(remote, pn, a) == {"first": ("claimed", "loop-a")}
    assert (
        git(remote, "log", "-1", "--format=%s", REF).strip()
        == f"pn: claim {claimed.json()['id']} by loop-a"
    )
    assert git(remote, "rev-parse", "main").strip() == main  # the code branch is left alone
    assert git(a, "rev-parse", "HEAD").strip() == main  # and so is the checkout
    assert git(a, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert mine(pn, a)["first"] == ("in_progress", "loop-a")
    assert claimed_events(a) == ["loop-a"]


def test_the_machine_that_published_first_keeps_the_task(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)  # b's database still says `first` is ready
    assert pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).code == 0
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.code == 0, got.err
    assert got.json()["title"] == "second"  # first went to a, who published first
    assert board(remote, pn, b) == {
        "first": ("claimed", "loop-a"),
        "second": ("claimed", "loop-b"),
    }
    # the claims ref's word never enters b's database: a's claim comes with a's code
    assert mine(pn, b) == {"first": ("open", None), "second": ("in_progress", "loop-b")}
    assert claimed_events(b) == ["loop-b"]


def test_a_rejected_claim_costs_one_fetch_of_the_claims_ref_and_is_decided_again(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    """Two clones race for `first`: c publishes between b's fetch and b's push. b's push is
    rejected; b fetches the claims ref once more and takes `second`. No task twice."""
    b = clone(remote, tmp_path / "b", pn)
    c = clone(remote, tmp_path / "c", pn)
    code_tip = git(b, "rev-parse", "origin/main").strip()
    moved = git(remote, "commit-tree", "-p", "main", "-m", "moved", "main^{tree}").strip()
    git(remote, "update-ref", "refs/heads/main", moved)
    marker = tmp_path / "raced"
    env = f"PN_ACTOR=loop-c PN_CLAIMS=git PN_CLAIM_BACKOFF=0 PN_DIR= PATH={BIN}:$PATH"
    fetches = after_fetch(
        b,
        f"[ -e {marker} ] && exit 0; touch {marker}; cd {c} && "
        f"env {env} pn claim-next --json > {tmp_path / 'c.json'} 2>&1",
    )
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.code == 0, got.err
    raced = json.loads((tmp_path / "c.json").read_text())
    assert (raced["title"], got.json()["title"]) == ("first", "second")
    assert fetches.read_text().split() == ["fetch", "fetch"]  # one rejection, one more fetch
    assert git(b, "rev-parse", "origin/main").strip() == code_tip  # only the claims ref was fetched
    assert board(remote, pn, b) == {
        "first": ("claimed", "loop-c"),
        "second": ("claimed", "loop-b"),
    }
    claims = git(remote, "log", "--format=%s", REF).splitlines()
    assert sorted(claims) == sorted(
        [f"pn: claim {raced['id']} by loop-c", f"pn: claim {got.json()['id']} by loop-b"]
    )
    # b's lost race never took effect here: no claim of `first`, none counted as stuck
    assert claimed_events(b) == ["loop-b"]


def test_out_of_tries_nothing_is_claimed(remote: Path, tmp_path: Path, pn: Pn) -> None:
    b = clone(remote, tmp_path / "b", pn)
    # every fetch is followed by another claim landing: every push is rejected
    fetches = after_fetch(b, MOVE.format(remote=remote, ref=REF))
    env = {**GIT, "PN_ACTOR": "loop-b", "PN_CLAIM_TRIES": "3"}
    got = pn("claim-next", cwd=b, env=env)
    assert got.code == 1
    assert "could not publish the claim of" in got.err
    assert "in 3 tries" in got.err
    assert len(fetches.read_text().split()) == 3
    assert mine(pn, b) == {"first": ("open", None), "second": ("open", None)}
    assert claimed_events(b) == []
    assert board(remote, pn, b) == {}


@pytest.mark.parametrize("tasks", [["first", "second", "third"]])
def test_a_close_reaches_the_claims_ref_with_the_actors_next_claim(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)
    first = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).json()
    assert pn("close", first["id"], "-r", "done", cwd=a, env={"PN_ACTOR": "loop-a"}).code == 0
    second = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).json()
    assert second["title"] == "second"
    assert board(remote, pn, a) == {
        "first": ("closed", "loop-a"),
        "second": ("claimed", "loop-a"),
    }
    assert git(remote, "rev-list", "--count", REF).strip() == "2"  # the close rode on the claim
    # b has not seen the code with the close: the claims ref keeps `first` from it all the same
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.json()["title"] == "third"
    assert pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-c"}).json() is None
    assert mine(pn, b)["first"] == ("open", None)  # its close comes with the code


def test_a_close_whose_publish_failed_is_published_by_the_next_release(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    """A loop's end (`pn release --held-by`) publishes its closes; out of reach, it says so
    and goes on, and the next one publishes them."""
    a = clone(remote, tmp_path / "a", pn)
    first = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).json()
    assert pn("close", first["id"], "-r", "done", cwd=a, env={"PN_ACTOR": "loop-a"}).code == 0
    away = tmp_path / "away.git"
    remote.rename(away)
    ended = pn("release", "--held-by", "loop-a", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert ended.code == 0, ended.err
    assert ended.json() == []
    assert "not published to the claims ref: cannot claim: git fetch of" in ended.err
    away.rename(remote)
    assert board(remote, pn, a) == {"first": ("claimed", "loop-a")}
    again = pn("release", "--held-by", "loop-a", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert again.code == 0, again.err
    assert again.err == ""
    assert board(remote, pn, a) == {"first": ("closed", "loop-a")}
    assert git(remote, "log", "-1", "--format=%s", REF).strip() == f"pn: close {first['id']}"


def test_a_loops_end_publishes_its_release(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)
    assert pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).code == 0
    ended = pn("release", "--held-by", "loop-a", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert [i["title"] for i in ended.json()] == ["first"]
    assert board(remote, pn, a) == {"first": ("released", "loop-a")}
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.json()["title"] == "first"


def test_a_release_made_here_frees_another_machines_claim(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    """A claim on the board stands until a clone gives it back: here a human's `pn release`
    (with PN_CLAIMS=git) of a task whose machine is gone."""
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)
    first = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).json()
    assert pn("claim-next", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"}).code == 0  # not a's
    assert pn("release", first["id"], cwd=b, env=GIT).code == 0
    assert board(remote, pn, b)["first"] == ("released", "loop-a")
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-c"})
    assert got.json()["title"] == "first"
    assert board(remote, pn, b) == {
        "first": ("claimed", "loop-c"),
        "second": ("claimed", "loop-b"),
    }


def test_one_claim_per_agent_until_it_is_stuck(remote: Path, tmp_path: Path, pn: Pn) -> None:
    """The loop claims every iteration: a task it left unfinished comes back, once more each
    time, until PN_STUCK_AFTER hands it to a human and the board frees it."""
    a = clone(remote, tmp_path / "a", pn)
    env = {**GIT, "PN_ACTOR": "loop-a", "PN_STUCK_AFTER": "2"}
    answers = [pn("claim-next", "--json", cwd=a, env=env).json()["title"] for _ in range(3)]
    assert answers == ["first", "first", "second"]
    assert mine(pn, a) == {"first": ("open", "human"), "second": ("in_progress", "loop-a")}
    assert board(remote, pn, a) == {
        "first": ("released", "loop-a"),
        "second": ("claimed", "loop-a"),
    }


def test_held_answers_with_the_task_the_loop_claimed_and_never_claims(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    """The agent's pn in its sandbox (PN_CLAIMS=held, on the shared database)."""
    a = clone(remote, tmp_path / "a", pn)
    first = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).json()
    published = git(remote, "rev-parse", REF)
    agent = {"PN_CLAIMS": "held", "PN_SHARED_DB": str(a / ".pensa" / "db.sqlite")}
    for _ in range(2):
        got = pn("claim-next", "--json", cwd=a, env={**agent, "PN_ACTOR": "loop-a"})
        assert got.code == 0, got.err
        assert got.json()["id"] == first["id"]
    other = pn("claim-next", "--json", cwd=a, env={**agent, "PN_ACTOR": "loop-b"})
    assert other.json() is None  # holds nothing: claims nothing either
    assert claimed_events(a) == ["loop-a"]
    assert git(remote, "rev-parse", REF) == published


def test_git_claims_refuse_a_shared_database(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    env = {**GIT, "PN_SHARED_DB": str(a / ".pensa" / "db.sqlite")}
    got = pn("claim-next", cwd=a, env=env)
    assert got.code == 1
    assert "has its loop claim for it: PN_CLAIMS=held" in got.err


def test_an_unknown_claims_mode_is_a_clear_error(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    got = pn("claim-next", "--json", cwd=a, env={"PN_CLAIMS": "gti"})
    assert got.code == 1
    assert got.error()["error"] == "PN_CLAIMS must be one of local, git, held; it is 'gti'"


def test_a_remote_out_of_reach_at_the_push_claims_nothing(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    after_fetch(a, f"mv {remote} {tmp_path / 'gone.git'}")  # fetched, then out of reach
    got = pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert "cannot publish the claim of pn-" in got.err
    assert mine(pn, a) == {"first": ("open", None), "second": ("open", None)}


def test_a_remote_out_of_reach_before_the_fetch_claims_nothing(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    remote.rename(tmp_path / "gone.git")
    got = pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert got.err.startswith(f"error: cannot claim: git fetch of {REF} from origin failed: ")
    assert "does not appear to be a git repository" in got.err
    assert mine(pn, a) == {"first": ("open", None), "second": ("open", None)}


def test_a_branch_without_a_remote_is_a_clear_error(repo: Path, pn: Pn) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    assert pn("q", "task", "-t", "task").code == 0
    got = pn("claim-next", env=GIT)
    assert got.code == 1
    assert "this branch has none: `git push -u origin <branch>` once" in got.err


def test_a_planted_claims_lock_link_is_refused(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    victim = tmp_path / "victim"
    (a / ".git" / "pensa-claims.lock").symlink_to(victim)  # dangling: O_CREAT would make it
    claimed = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert claimed.code == 1
    assert claimed.error()["code"] == "unsafe_path"
    assert not victim.exists()


def test_a_damaged_claims_ref_is_a_clear_error(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    blob = subprocess.run(
        ["git", "-C", str(remote), "hash-object", "-w", "--stdin"],
        input=b"not json", capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    tree = subprocess.run(
        ["git", "-C", str(remote), "mktree"],
        input=f"100644 blob {blob}\tpn-0000\n".encode(), capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    git(remote, "update-ref", REF, git(remote, "commit-tree", "-m", "junk", tree).strip())
    got = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert got.error()["error"] == f"{REF}:{'pn-0000'} is not a claim record: b'not json'"
    assert mine(pn, a)["first"] == ("open", None)


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
    published = board(remote, pn, clones[0])
    assert published == {title: ("claimed", actor) for actor, title in claimed.items()}
    claims = git(remote, "log", "--format=%s", REF).splitlines()
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
    assert board(remote, pn, a) == {}


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
    assert mine(pn, a) == {"first": ("open", None), "second": ("open", None)}
