"""The claims ref on the remote, `refs/pensa/claims`: where `pensa.gitclaims` publishes claims.

The ref is a chain of small commits of its own, apart from every branch: the code never
carries it and never has to rebase over it. Its tree holds one file per issue ever claimed
through git, `<two hex digits of the id's hash>/<id>`, whose text is one `Entry`: the state
(`claimed`, `released` or `closed`), the actor whose claim it is, and when. A change is a
commit of the fetched tip's tree with those files replaced, built in a private index (the
checkout, its index and its branches play no part), pushed without force: the remote takes it
only while the ref still points at that tip, a compare-and-swap. Rejected, it costs one fetch
of this one ref.

Every git here runs with hooks and automatic gc off: a claim waits on the two round trips to
the remote and nothing else.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from pensa import git
from pensa.errors import GitFailed, PensaError
from pensa.shared import hardgit

if TYPE_CHECKING:
    from collections.abc import Mapping

REF = "refs/pensa/claims"
# Where a claim's commit is made before it is pushed (this clone's own; never pushed by name).
PUBLISHING = "refs/pensa/publishing"
STATES = ("claimed", "released", "closed")
# A push refused because the ref moved (a non-fast-forward found before sending), or because
# it moved while the remote was taking the push: both mean another claim landed first.
_RACED = (
    "[rejected]",
    "fetch first",
    "non-fast-forward",
    "cannot lock ref",
    "failed to update ref",
    "failed to lock",
)
_QUIET = (*hardgit.OPTIONS, "-c", "gc.auto=0", "-c", "maintenance.auto=false")


class Entry(NamedTuple):
    """One issue's line on the claims ref: who claimed it, and what became of the claim."""

    state: str  # one of STATES
    actor: str
    at: str  # pensa's timestamp of the claim, release or close

    def text(self) -> str:
        """The file's text: one JSON object, keys in a fixed order."""
        return json.dumps({"state": self.state, "actor": self.actor, "at": self.at}) + "\n"

    @classmethod
    def parse(cls, text: bytes, where: str) -> Entry:
        """An entry from a file's text; a clear error naming `where` when it is none."""
        try:
            data = json.loads(text)
            entry = cls(str(data["state"]), str(data["actor"]), str(data["at"]))
        except (ValueError, KeyError, TypeError):
            entry = cls("", "", "")
        if entry.state not in STATES:
            raise PensaError(f"{where} is not a claim record: {text[:80]!r}")
        return entry


class Board(NamedTuple):
    """The claims ref as one fetch found it: its tip (a revision; None: no claim published
    yet) and its entries by issue id."""

    tip: str | None
    entries: dict[str, Entry]


def path(issue_id: str) -> str:
    """Where the issue's entry lives in the ref's tree: spread over 256 folders, so a change
    rewrites one small tree, not one listing every issue."""
    import hashlib

    return f"{hashlib.sha1(issue_id.encode()).hexdigest()[:2]}/{issue_id}"  # noqa: S324 - a spread


class Remote(NamedTuple):
    """The checkout claims are published from, its git directory, and its remote's name."""

    top: str
    common: str  # the git directory shared by its worktrees: where this clone's lock is
    name: str

    @property
    def tracking(self) -> str:
        """The local copy of the remote's claims ref, as last fetched or pushed."""
        return f"refs/pensa/remotes/{self.name}/claims"

    def git(self, *args: str, env: Mapping[str, str], data: bytes | None = None) -> git.Done:
        """git in the checkout, quiet (no hooks, no gc, no prompt), `data` on its stdin."""
        full = {**env, "GIT_TERMINAL_PROMPT": "0"}
        if data is None:
            return git.run([*_QUIET, *args], cwd=self.top, env=full)
        started = git.run_with_input([*_QUIET, *args], data, cwd=self.top, env=full)
        done = started.wait()
        return done._replace(out=started.raw_out.decode(errors="replace"))

    def must(
        self, *args: str, env: Mapping[str, str], doing: str, data: bytes | None = None
    ) -> str:
        """`git()` that raises GitFailed naming `doing` unless it succeeds; its stdout."""
        done = self.git(*args, env=env, data=data)
        if done.code != 0:
            raise GitFailed(f"{doing} failed: {last_line(done.err or done.out)}")
        return done.out


def locate(project_dir: str, env: Mapping[str, str]) -> Remote:
    """The checkout holding the project and the remote its claims go to: the checked-out
    branch's upstream's, else `origin`. One clear error when there is no checkout or remote."""
    found = git.run(
        ["rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir",
         "--symbolic-full-name", "HEAD"],
        cwd=project_dir, env=env,
    )  # fmt: skip
    lines = found.out.splitlines()
    if found.code != 0 or len(lines) < 3:
        raise PensaError(
            f"claims through git (PN_CLAIMS=git) need a git checkout; {project_dir} is in none"
        )
    top, common, head = lines[:3]
    pattern = r"^(remote\..*\.url|branch\..*\.remote)$"
    config = git.run(["config", "--get-regexp", pattern], cwd=top, env=env).out.splitlines()
    pairs = [line.partition(" ")[::2] for line in config]
    names = [key[len("remote.") : -len(".url")] for key, _ in pairs if key.startswith("remote.")]
    branch = head.removeprefix("refs/heads/")
    upstream = dict(pairs).get(f"branch.{branch}.remote", "")
    for name in (upstream, "origin"):
        if name in names:
            return Remote(top, common, name)
    raise PensaError(
        "claims through git (PN_CLAIMS=git) are published to the branch's remote, and this "
        "branch has none: `git push -u origin <branch>` once"
    )


def last_line(text: str) -> str:
    """The line of git's stderr that says what went wrong: its first `fatal:` or refused ref
    (` ! [remote rejected] ...`), else its first `error:`, else its last."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for marks in (("fatal:", "! ["), ("error:",)):
        said = [line for line in lines if line.startswith(marks)]
        if said:
            return said[0]
    return lines[-1] if lines else "no output"


def fetch(remote: Remote, env: Mapping[str, str]) -> Board:
    """Fetch the remote's claims ref, and only it; the board it holds."""
    done = remote.git(
        "fetch", "-q", "--no-tags", "--no-write-fetch-head", remote.name,
        f"+{REF}:{remote.tracking}", env=env,
    )  # fmt: skip
    if done.code != 0:
        if "couldn't find remote ref" not in done.err:
            raise GitFailed(
                f"cannot claim: git fetch of {REF} from {remote.name} failed: "
                + last_line(done.err)
            )
        remote.git("update-ref", "-d", remote.tracking, env=env)
        return Board(None, {})  # nothing published yet: the first claim makes the ref
    # Under this clone's claim lock only this fetch moves the tracking ref: it names the tip
    return Board(remote.tracking, read(remote, remote.tracking, env))


def read(remote: Remote, tip: str, env: Mapping[str, str]) -> dict[str, Entry]:
    """The entries of the tree at `tip`: one listing, then one batch read of their blobs."""
    listed = remote.must("ls-tree", "-r", "-z", tip, env=env, doing="git ls-tree")
    blobs: list[tuple[str, str]] = []  # (path, blob)
    for item in filter(None, listed.split("\0")):
        meta, _, name = item.partition("\t")
        kind, sha = meta.split()[1:3]
        if kind == "blob":
            blobs.append((name, sha))
    if not blobs:
        return {}
    data = "".join(f"{sha}\n" for _, sha in blobs).encode()
    started = git.run_with_input(["cat-file", "--batch"], data, cwd=remote.top, env=env)
    if started.wait().code != 0:
        raise GitFailed(f"git cat-file of {REF} failed: {last_line(started.wait().err)}")
    raw, entries, at = started.raw_out, {}, 0
    for name, _ in blobs:
        header_end = raw.index(b"\n", at)
        size = int(raw[at:header_end].split()[2])
        text = raw[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        entries[name.rsplit("/", 1)[-1]] = Entry.parse(text, f"{REF}:{name}")
    return entries


def publish(
    remote: Remote,
    board: Board,
    changes: Mapping[str, Entry],
    message: str,
    env: Mapping[str, str],
    *,
    committer: str,
) -> bool:
    """Commit `changes` on the board's tip and push it without force: True when the remote
    took it, False when the ref had moved (another publish landed first). Any other refusal
    raises GitFailed."""
    _commit(remote, board, changes, message, env, committer=committer)
    pushed = remote.git("push", "--porcelain", remote.name, f"{PUBLISHING}:{REF}", env=env)
    if pushed.code == 0:
        return True
    said = pushed.out + pushed.err
    # a hook that declines the push is no race: trying again would not help
    if any(word in said for word in _RACED) and "declined" not in said:
        return False
    # --porcelain says why a ref was refused on stdout: `!<tab>src:dst<tab>[why] (detail)`
    refused = [line.split("\t")[-1] for line in pushed.out.splitlines() if line[:1] == "!"]
    raise GitFailed(refused[0] if refused else last_line(pushed.err or said))


def _commit(
    remote: Remote,
    board: Board,
    changes: Mapping[str, Entry],
    message: str,
    env: Mapping[str, str],
    *,
    committer: str,
) -> None:
    """Make PUBLISHING a commit of the board's tree with `changes` written, as a child of its
    tip: one `git fast-import` (blobs, trees and the commit; a few loose objects)."""
    import time

    who = "".join(c for c in committer if c not in "<>\n") or "pn"
    lines = [f"reset {PUBLISHING}", f"commit {PUBLISHING}"]
    lines.append(f"committer pensa <{who}> {int(time.time())} +0000")
    body = message.encode()
    chunks = ["\n".join(lines).encode(), f"\ndata {len(body)}\n".encode(), body, b"\n"]
    if board.tip is not None:
        chunks.append(f"from {board.tip}\n".encode())
    for issue_id, entry in changes.items():
        text = entry.text().encode()
        chunks += [f"M 100644 inline {path(issue_id)}\ndata {len(text)}\n".encode(), text]
    chunks.append(b"\ndone\n")
    remote.must(
        "-c", "fastimport.unpackLimit=1000", "fast-import", "--quiet", "--force", "--done",
        env=env, doing="git fast-import", data=b"".join(chunks),
    )  # fmt: skip
