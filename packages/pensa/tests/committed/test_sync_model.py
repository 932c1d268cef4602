"""Model-based test: pensa in git never loses data.

Two clones of a bare remote run random `pn` writes (create, claim, close, reopen, edit,
comment, dep add/remove, delete, export, import) interleaved with git work (commit, a commit
of tracker changes alone, a commit a later hook aborts, branch switch, checkout of a file,
throwing `.pensa` away by checkout/restore/reset --hard/stash/clean, merge, pull --rebase,
cherry-pick, stash/pop, push with retry), all with the hooks `pn init` installs; and a pn
write (create, claim, close, comment) followed at once by `git pull --rebase`, `git merge`,
`git cherry-pick` or `git switch`, which must work without extra flags and keep the write (a
switch is never refused over pn writes, only over files an explicit `pn export` changed). A
small reference model records what was done. After every step each clone must still answer,
and no issue it deleted may be visible in it; throwing files away changes nothing pn shows; an
import never hands a held task out again. At the end every clone merges its side branch,
and all push and pull until they agree; then no acknowledged write is lost: nothing created
is lost unless deleted, nothing deleted came back, no close was undone (unless reopened),
every claim is still a claim (or a close), every comment is there, all clones hold the same
committed JSONL (every shard), and no commit ever carried pensa's `.pensa/uncommitted`.

`PENSA_MODEL_STEPS` scales it: the default (40 steps, one run) runs in CI; the slow suite
sets thousands (`make test-slow`, PENSA_MODEL_STEPS=3000: 13 minutes); each step costs about
a quarter of a second, mostly the pre-commit framework starting in every hook.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from ..conftest import BIN, PN

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

CLONES = ("a", "b")
# A hook after pensa's export that refuses the commit while an ABORT file exists.
ABORTING_HOOK = """- repo: local
  hooks:
  - id: abort-on-request
    name: refuse the commit while ABORT exists
    entry: sh -c 'test ! -e ABORT'
    language: system
    always_run: true
    pass_filenames: false
"""
# Ways of throwing `.pensa` away; none may change what pn shows.
THROW_AWAY: dict[str, list[tuple[str, ...]]] = {
    "checkout": [("checkout", "--", ".pensa")],
    "checkout-head": [("checkout", "HEAD", "--", ".pensa")],
    "restore": [("restore", "--staged", "--worktree", ".pensa")],
    "reset-hard": [("reset", "-q", "--hard")],
    "stash": [("stash", "-q"), ("stash", "drop", "-q")],
    "stash-pop": [("stash", "-q"), ("stash", "pop", "-q")],
    "clean": [("reset", "-q", "--hard"), ("clean", "-fdq", ".pensa")],
}
STEPS = int(os.environ.get("PENSA_MODEL_STEPS", "40"))
STEPS_PER_RUN = 40


def _env(actor: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PN_ACTOR": actor,
        "GIT_AUTHOR_NAME": actor,
        "GIT_AUTHOR_EMAIL": f"{actor}@example.com",
        "GIT_COMMITTER_NAME": actor,
        "GIT_COMMITTER_EMAIL": f"{actor}@example.com",
    }


class Clone:
    """One clone: runs git and pn in its work tree."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self.env = _env(f"loop-{name}")
        self.counter = 0
        self.exported = False  # an explicit `pn export` left files changed since a commit

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["git", *args],
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} in {self.name}: {done.stdout}{done.stderr}")
        return done

    def pn(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PN, *args],
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def issues(self) -> dict[str, dict[str, Any]]:
        done = self.pn("list", "--all", "--json")
        assert done.returncode == 0, done.stderr
        return {i["id"]: i for i in json.loads(done.stdout)}

    def touch(self) -> None:
        """A code change in a file of its own, so code never conflicts."""
        self.counter += 1
        (self.path / f"{self.name}-{self.counter}.txt").write_text(str(self.counter))

    def branch(self) -> str:
        return self.git("branch", "--show-current").stdout.strip()

    def commit(self, message: str) -> None:
        self.touch()
        self.git("add", "-A")
        self.git("commit", "-qm", message)
        self.exported = False

    def only_untracked(self) -> bool:
        """Whether git sees nothing but untracked files (pensa's marker among them)."""
        lines = self.git("status", "--porcelain").stdout.splitlines()
        return all(line.startswith("??") for line in lines)

    def push_with_retry(self) -> None:
        for _ in range(6):
            if self.git("push", "-q", "origin", "main", check=False).returncode == 0:
                return
            self.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
        raise AssertionError(f"{self.name} could not push")


def _one_of(data: st.DataObject, ids: list[str]) -> str | None:
    """One of `ids`, drawn as an index of fixed range: how many issues a clone holds depends
    on what git and pn did (a lock waited out, a rebase that conflicted), and a draw whose
    bounds change between replays makes Hypothesis report its own strategy as flaky. It is
    drawn even when there is nothing to pick, for the same reason: whether a draw happens
    must not depend on what git and pn did either."""
    index = data.draw(st.integers(0, 255))
    return ids[index % len(ids)] if ids else None


class PensaInGit(RuleBasedStateMachine):
    """Random tracker and git work on two clones; the model says what must survive."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="pensa-model-"))
        self.created: set[str] = set()
        self.deleted: set[str] = set()
        self.closed: set[str] = set()
        self.claimed: set[str] = set()
        self.deleted_in: dict[str, set[str]] = {name: set() for name in CLONES}
        self.comments: dict[str, set[str]] = {}
        self.clones: dict[str, Clone] = {}

    @initialize()
    def set_up(self) -> None:
        remote = self.root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        first = self.root / "a"
        subprocess.run(["git", "init", "-q", "-b", "main", str(first)], check=True)
        clone = Clone(first, "a")
        assert clone.pn("init").returncode == 0
        config = clone.path / ".pre-commit-config.yaml"
        config.write_text(config.read_text() + ABORTING_HOOK)  # after pensa's own
        clone.commit("pensa")
        clone.git("remote", "add", "origin", str(remote))
        clone.git("push", "-q", "-u", "origin", "main")
        clone.git("branch", "side")
        clone.git("push", "-q", "origin", "side")
        self.clones["a"] = clone
        for name in CLONES[1:]:
            path = self.root / name
            subprocess.run(["git", "clone", "-q", str(remote), str(path)], check=True)
            other = Clone(path, name)
            assert other.pn("init").returncode == 0
            other.git("branch", "side", "origin/side")
            self.clones[name] = other
        for clone in self.clones.values():
            with (clone.path / ".git" / "info" / "exclude").open("a") as f:
                f.write("ABORT\n")

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _pick(self, data: st.DataObject, clone: Clone, *, open_only: bool = False) -> str | None:
        issues = clone.issues()
        ids = sorted(i for i, v in issues.items() if not open_only or v["status"] == "open")
        return _one_of(data, ids)

    # --- tracker work -----------------------------------------------------------------

    @rule(name=st.sampled_from(CLONES), kind=st.sampled_from(["task", "bug", "chore"]))
    def create(self, name: str, kind: str) -> None:
        done = self.clones[name].pn("q", f"{name} {len(self.created)}", "-t", kind)
        assert done.returncode == 0, done.stderr
        self.created.add(done.stdout.strip())

    @rule(name=st.sampled_from(CLONES))
    def claim_next(self, name: str) -> None:
        done = self.clones[name].pn("claim-next", "--json")
        assert done.returncode == 0, done.stderr
        claimed = json.loads(done.stdout)
        if claimed is not None:
            self.claimed.add(claimed["id"])

    @rule(name=st.sampled_from(CLONES), data=st.data())
    def close(self, name: str, data: st.DataObject) -> None:
        issue = self._pick(data, self.clones[name])
        if issue is None:
            return
        done = self.clones[name].pn("close", issue, "--reason", "done", "--force")
        if done.returncode == 0:
            self.closed.add(issue)

    @rule(name=st.sampled_from(CLONES), data=st.data(), field=st.sampled_from(["title", "p"]))
    def edit(self, name: str, data: st.DataObject, field: str) -> None:
        issue = self._pick(data, self.clones[name])
        if issue is not None:
            args = ["--title", f"edited in {name}"] if field == "title" else ["-p", "p0"]
            assert self.clones[name].pn("update", issue, *args).returncode == 0

    @rule(name=st.sampled_from(CLONES), data=st.data())
    def comment(self, name: str, data: st.DataObject) -> None:
        issue = self._pick(data, self.clones[name])
        if issue is not None:
            done = self.clones[name].pn("comment", "add", issue, f"from {name}", "--json")
            assert done.returncode == 0, done.stderr
            self.comments.setdefault(issue, set()).add(json.loads(done.stdout)["id"])

    @rule(name=st.sampled_from(CLONES), data=st.data())
    def reopen(self, name: str, data: st.DataObject) -> None:
        clone = self.clones[name]
        closed = sorted(i for i, v in clone.issues().items() if v["status"] == "closed")
        issue = _one_of(data, closed)
        if issue is None:
            return
        assert clone.pn("reopen", issue).returncode == 0
        self.closed.discard(issue)  # undone on purpose: the issue is everyone's to claim
        self.claimed.discard(issue)
        ready = {i["id"] for i in json.loads(clone.pn("ready", "--json").stdout)}
        blocked = {i["id"] for i in json.loads(clone.pn("blocked", "--json").stdout)}
        kind = clone.issues()[issue]["issue_type"]
        assert issue in ready or issue in blocked or kind == "bug", "reopened but not ready"

    @rule(name=st.sampled_from(CLONES))
    def export(self, name: str) -> None:
        assert self.clones[name].pn("export").returncode == 0
        self.clones[name].exported = True

    @rule(name=st.sampled_from(CLONES))
    def import_beside_claimers(self, name: str) -> None:
        clone = self.clones[name]
        held = {i: v["assignee"] for i, v in clone.issues().items() if v["status"] == "in_progress"}
        done = clone.pn("import", "--json")
        assert done.returncode == 0 or json.loads(done.stderr)["code"] == "conflict", done.stderr
        after = clone.issues()
        for issue in held:
            assert after[issue]["status"] == "in_progress", f"import released {issue}"
        actor = f"other-{name}"
        other = clone.pn("claim-next", "--json", "--actor", actor)
        assert other.returncode == 0, other.stderr
        taken = json.loads(other.stdout)
        if taken is not None:  # one claim per agent: an actor that holds a task resumes it
            assert held.get(taken["id"], actor) == actor, f"{taken['id']} handed out twice"
            self.claimed.add(taken["id"])

    @rule(name=st.sampled_from(CLONES), data=st.data(), remove=st.booleans())
    def dep(self, name: str, data: st.DataObject, remove: bool) -> None:
        clone = self.clones[name]
        child, parent = self._pick(data, clone), self._pick(data, clone)
        if child is None or parent is None or child == parent:
            return
        clone.pn("dep", "remove" if remove else "add", child, parent)  # may refuse a cycle

    @rule(name=st.sampled_from(CLONES), data=st.data())
    def delete(self, name: str, data: st.DataObject) -> None:
        issue = self._pick(data, self.clones[name])
        if issue is None:
            return
        assert self.clones[name].pn("delete", issue, "--force").returncode == 0
        self.deleted.add(issue)
        self.deleted_in[name].add(issue)

    # --- git work -------------------------------------------------------------------------

    @rule(name=st.sampled_from(CLONES))
    def commit(self, name: str) -> None:
        self.clones[name].commit("work")

    @rule(name=st.sampled_from(CLONES), kind=st.sampled_from(["task", "chore"]))
    def commit_tracker_only(self, name: str, kind: str) -> None:
        clone = self.clones[name]
        done = clone.pn("q", f"{name} {len(self.created)} alone", "-t", kind)
        assert done.returncode == 0, done.stderr
        self.created.add(done.stdout.strip())
        clone.git("add", "-A")
        clone.git("commit", "-qm", "tracker only")  # must succeed the first time
        assert clone.git("status", "--porcelain").stdout == "", "tree not clean after commit"

    @rule(name=st.sampled_from(CLONES), how=st.sampled_from(sorted(THROW_AWAY)))
    def throw_files_away(self, name: str, how: str) -> None:
        clone = self.clones[name]
        assert clone.pn("export").returncode == 0
        before = clone.issues()
        for args in THROW_AWAY[how]:
            if (
                args[:2] in (("stash", "pop"), ("stash", "drop"))
                and not clone.git("stash", "list").stdout.strip()
            ):
                continue  # there was nothing to stash
            clone.git(*args)
        clone.exported = how == "stash-pop"  # the popped exports are back in the tree
        assert clone.issues() == before, f"git {how} changed the tracker"

    @rule(name=st.sampled_from(CLONES), kind=st.sampled_from(["task", "chore"]))
    def commit_aborted_by_a_later_hook(self, name: str, kind: str) -> None:
        clone = self.clones[name]
        done = clone.pn("q", f"{name} {len(self.created)} aborted", "-t", kind)
        assert done.returncode == 0, done.stderr
        self.created.add(done.stdout.strip())
        before = clone.issues()
        (clone.path / "ABORT").write_text("")
        try:
            assert clone.git("commit", "-qam", "aborted", check=False).returncode != 0
        finally:
            (clone.path / "ABORT").unlink()
        clone.git("reset", "-q", "--hard")
        assert clone.issues() == before, "an aborted commit lost tracker work"

    @rule(name=st.sampled_from(CLONES))
    def switch(self, name: str) -> None:
        clone = self.clones[name]
        other = "side" if clone.branch() == "main" else "main"
        switched = clone.git("switch", "-q", other, check=False)
        if switched.returncode != 0:
            # pn writes never touch a tracked file, so only an explicit `pn export` (or a pop
            # of one) can leave files git refuses to switch over; throwing those exports away
            # loses nothing (the database keeps what they held).
            assert clone.exported, f"switch refused over pn writes: {switched.stderr}"
            clone.git("reset", "-q", "--", ".pensa")
            clone.git("checkout", "--", ".pensa")
            clone.git("clean", "-fq", ".pensa")
            clone.git("switch", "-q", other)
            clone.exported = False

    @rule(
        name=st.sampled_from(CLONES),
        write=st.sampled_from(["q", "claim-next", "close", "comment"]),
        how=st.sampled_from(["pull --rebase", "merge", "cherry-pick", "switch"]),
        data=st.data(),
    )
    def git_over_tracker_work(self, name: str, write: str, how: str, data: st.DataObject) -> None:
        """After a pn write, with nothing else uncommitted, git works without extra flags and
        keeps the write."""
        clone = self.clones[name]
        issue = self._pick(data, clone, open_only=True)  # drawn first: see `_one_of`
        if clone.exported or not clone.only_untracked():
            return  # someone's own changes: git may refuse them, as it would anyone's
        said = None  # the comment written, if any
        wanted: tuple[str, ...] = ("open", "in_progress", "closed")  # what it may be after
        if write == "q":
            done = clone.pn("q", f"{name} {len(self.created)} over git", "-t", "task")
            issue = done.stdout.strip()
            self.created.add(issue)
        elif write == "claim-next":
            held = {i for i, v in clone.issues().items() if v["status"] == "in_progress"}
            done = clone.pn("claim-next", "--json")
            claimed = json.loads(done.stdout) if done.returncode == 0 else None
            issue, wanted = (claimed or {}).get("id"), ("in_progress", "closed")
            if issue is not None:
                self.claimed.add(issue)
            if issue in held:
                # a resumed claim writes nothing: the claim it resumes may be committed on
                # this branch alone, and leaves with a switch as all committed work does
                wanted = ("open", "in_progress", "closed")
        elif issue is None:
            return
        elif write == "close":
            done = clone.pn("close", issue, "--reason", "done", "--force")
            self.closed.add(issue)
            wanted = ("closed",)
        else:
            done = clone.pn("comment", "add", issue, f"over git in {name}", "--json")
            said = json.loads(done.stdout)["id"]
            self.comments.setdefault(issue, set()).add(said)
        assert done.returncode == 0, done.stderr
        other = "side" if clone.branch() == "main" else "main"
        if how == "pull --rebase":
            if clone.branch() != "main":
                return
            clone.git("pull", "-q", "--rebase", "origin", "main")
        elif how == "merge":
            clone.git("merge", "-q", "--no-edit", other)
        elif how == "cherry-pick":
            if (
                clone.git("rev-parse", other).stdout
                == clone.git("merge-base", "HEAD", other).stdout
            ):
                return
            merge = len(clone.git("rev-list", "--parents", "-n", "1", other).stdout.split()) > 2
            mainline = ["-m", "1"] if merge else []
            clone.git("cherry-pick", "--allow-empty", "--keep-redundant-commits", *mainline, other)
        else:
            clone.git("switch", "-q", other)
        if issue is None:
            return
        shown = clone.pn("show", issue, "--json")
        if shown.returncode != 0:  # gone: only a deletion merged in may take it
            assert issue in self.deleted, f"git {how} lost {write} of {issue}"
            return
        record = json.loads(shown.stdout)
        assert record["status"] in wanted, f"git {how} undid {write} of {issue}"
        if said is not None:
            assert said in {c["id"] for c in record["comments"]}, f"git {how} lost a comment"

    @rule(name=st.sampled_from(CLONES))
    def checkout_a_file(self, name: str) -> None:
        clone = self.clones[name]
        clone.commit("a file to restore")
        changed = clone.path / f"{name}-{clone.counter}.txt"
        changed.write_text("scratch")
        clone.git("checkout", "--", changed.name)

    @rule(name=st.sampled_from(CLONES))
    def merge_other_branch(self, name: str) -> None:
        clone = self.clones[name]
        other = "side" if clone.branch() == "main" else "main"
        clone.commit("before merge")
        clone.git("merge", "-q", "--no-edit", other)

    @rule(name=st.sampled_from(CLONES))
    def cherry_pick(self, name: str) -> None:
        clone = self.clones[name]
        other = "side" if clone.branch() == "main" else "main"
        clone.commit("before cherry-pick")
        if clone.git("rev-parse", other).stdout == clone.git("merge-base", "HEAD", other).stdout:
            return  # nothing on the other branch that HEAD lacks
        # A merge at the other branch's tip is picked as its change against its first parent.
        merge = len(clone.git("rev-list", "--parents", "-n", "1", other).stdout.split()) > 2
        mainline = ["-m", "1"] if merge else []
        clone.git("cherry-pick", "--allow-empty", "--keep-redundant-commits", *mainline, other)

    @rule(name=st.sampled_from(CLONES))
    def stash_and_pop(self, name: str) -> None:
        clone = self.clones[name]
        clone.touch()
        clone.git("add", "-A")
        clone.git("stash", "-q")
        clone.git("stash", "pop", "-q")

    @rule(name=st.sampled_from(CLONES))
    def pull_rebase_and_push(self, name: str) -> None:
        clone = self.clones[name]
        if clone.branch() != "main":
            return
        clone.commit("to push")
        for _ in range(6):
            if clone.git("push", "-q", "origin", "main", check=False).returncode == 0:
                return
            clone.git("pull", "-q", "--rebase", "origin", "main")
        raise AssertionError("push kept failing")

    # --- invariants -----------------------------------------------------------------------

    @invariant()
    def deletions_stay_deleted_where_they_were_made(self) -> None:
        for name, clone in self.clones.items():
            if not self.deleted_in[name]:
                continue
            visible = set(clone.issues())
            assert not (visible & self.deleted_in[name]), f"deleted issue back in {name}"

    def final_sync(self) -> None:
        for clone in self.clones.values():
            if clone.branch() != "main":
                clone.commit("park side work")
                clone.git("switch", "-q", "main")
            clone.commit("before final merge")
            clone.git("merge", "-q", "--no-edit", "side")
            clone.push_with_retry()
        for _ in range(2):  # a second round carries what the first round's merges made
            for clone in self.clones.values():
                clone.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
                clone.commit("final")
                clone.push_with_retry()
        for clone in self.clones.values():
            clone.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")

    def check_final(self) -> None:
        self.final_sync()
        texts = {
            name: {
                f: clone.git("show", f"HEAD:.pensa/{f}").stdout
                for f in clone.git("ls-tree", "--name-only", "HEAD:.pensa").stdout.split()
                if f.endswith(".jsonl")
            }
            for name, clone in self.clones.items()
        }
        first = texts[CLONES[0]]
        assert all(t == first for t in texts.values()), "clones disagree on the committed JSONL"
        for clone in self.clones.values():
            history = clone.git("log", "--all", "--name-only", "--format=").stdout
            assert ".pensa/uncommitted" not in history, "the marker was committed"
        for clone in self.clones.values():
            issues = clone.issues()
            assert set(issues) == self.created - self.deleted, (
                f"lost: {sorted(self.created - self.deleted - set(issues))}, "
                f"back: {sorted(set(issues) & self.deleted)}"
            )
            for issue_id in self.closed - self.deleted:
                assert issues[issue_id]["status"] == "closed", f"close of {issue_id} undone"
            for issue_id in self.claimed - self.deleted:
                assert issues[issue_id]["status"] in ("in_progress", "closed"), issue_id
            for issue_id, ids in self.comments.items():
                if issue_id in self.deleted:
                    continue
                shown = json.loads(clone.pn("show", issue_id, "--json").stdout)
                assert ids <= {c["id"] for c in shown["comments"]}, f"comment lost on {issue_id}"


def test_pensa_in_git_never_loses_data() -> None:
    if shutil.which("git") is None:
        pytest.fail("git is required")

    class Checked(PensaInGit):
        def teardown(self) -> None:
            try:
                if len(self.clones) == len(CLONES):
                    self.check_final()
            finally:
                super().teardown()

    Checked.TestCase.settings = settings(
        # Hypothesis first tries the simplest example: the alphabetically first rule every
        # step. One run more than the steps ask for, so that even the default run is random.
        max_examples=STEPS // STEPS_PER_RUN + 1,
        stateful_step_count=STEPS_PER_RUN,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=os.environ.get("CI") == "true",
    )
    Checked.TestCase().runTest()
