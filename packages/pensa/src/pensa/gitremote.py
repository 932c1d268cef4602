"""The branch's upstream as git claims see it (`pensa.gitclaims`): the remote tip one fetch
found, its issues, and a claim committed as a child of exactly that tip.

The commit is built in a private index from the tip's own tree, so the working tree, the
checkout's index and its local commits play no part in what is pushed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from pensa import git
from pensa.errors import GitFailed, PensaError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.committed.records import Record
    from pensa.project import Project


class Upstream(NamedTuple):
    """Where claims are published: the checkout, its branch's remote and remote branch."""

    top: str
    remote: str
    branch: str
    folder: str  # the `.pensa` folder, relative to `top`

    def git(self, *args: str, env: Mapping[str, str]) -> git.Done:
        """Run git in the checkout, with no hooks (pn runs what they would itself)."""
        full = {**env, "GIT_TERMINAL_PROMPT": "0"}
        return git.run(["-c", "core.hooksPath=/dev/null", *args], cwd=self.top, env=full)

    def must(self, *args: str, env: Mapping[str, str], doing: str) -> str:
        """`git()` that raises GitFailed naming `doing` unless it succeeds; its stdout."""
        done = self.git(*args, env=env)
        if done.code != 0:
            raise GitFailed(f"{doing} failed: {last_line(done.err or done.out)}")
        return done.out

    def path(self, name: str) -> str:
        """A committed file's path in the tree."""
        return name if self.folder == "." else f"{self.folder}/{name}"


class Tip:
    """The remote branch as one fetch found it: the commit, and its committed files as they
    are asked for (an issue's shard, `pensa.committed.disk`)."""

    def __init__(self, where: Upstream, commit: str, env: Mapping[str, str]) -> None:
        self.where, self.commit, self.env = where, commit, env
        self._texts: dict[str, str] = {}

    def text(self, name: str) -> str:
        """The file `name` at the tip (missing: empty)."""
        if name not in self._texts:
            shown = self.where.git(
                "cat-file", "blob", f"{self.commit}:{self.where.path(name)}", env=self.env
            )
            self._texts[name] = shown.out if shown.code == 0 else ""
        return self._texts[name]

    def _records(self, name: str) -> list[tuple[int, Record]]:
        from pensa.committed.disk import kind_of
        from pensa.committed.records import parse_file

        kind = kind_of(name)
        assert kind is not None
        label = f"{self.where.remote}/{self.where.branch}:{self.where.path(name)}"
        return parse_file(self.text(name).encode(), kind, label=label)

    def _find(self, kind: str, issue_id: str) -> tuple[str, int, Record] | None:
        """Where the tip holds the record of `kind` for the issue: file, line index, record.
        Its shard first: a copy in the kind's own file is an earlier layout's."""
        from pensa.committed.disk import file_name

        for name in dict.fromkeys((file_name(kind, issue_id), kind)):
            for number, record in self._records(name):
                if record["id"] == issue_id:
                    return name, number - 1, record
        return None

    def issue(self, issue_id: str) -> Record | None:
        """The issue as the tip holds it, or None."""
        found = self._find("issues.jsonl", issue_id)
        return found[2] if found else None

    def deleted(self, issue_id: str) -> bool:
        """Whether the tip holds a tombstone for the issue."""
        return self._find("deleted.jsonl", issue_id) is not None

    def with_line(self, issue_id: str, line: str) -> dict[str, str]:
        """The files to commit so that the issue's line is `line`: its shard with the line
        replaced, or added in id order (and the line taken out of an earlier layout's file)."""
        from pensa.committed.disk import file_name

        shard = file_name("issues.jsonl", issue_id)
        found = self._find("issues.jsonl", issue_id)
        out: dict[str, str] = {}
        if found is not None and found[0] != shard:
            lines = self.text(found[0]).split("\n")
            del lines[found[1]]
            out[found[0]] = "\n".join(lines)
            found = None
        lines = self.text(shard).split("\n")
        if lines == [""]:
            lines = []
        if found is not None:
            lines[found[1]] = line
        else:
            ids = {n - 1: r["id"] for n, r in self._records(shard)}
            after = [index for index, other in ids.items() if other > issue_id]
            if after:
                lines.insert(min(after), line)
            elif lines and lines[-1] == "":
                lines.insert(len(lines) - 1, line)
            else:
                lines.extend([line, ""])
        out[shard] = "\n".join(lines) if lines[-1:] == [""] else "\n".join([*lines, ""])
        return out


def checkout(project: Project, env: Mapping[str, str]) -> str:
    """The top of the git checkout holding the project; a clear error when there is none."""
    top = git.toplevel(project.dir, env)
    if top is None:
        raise PensaError(
            f"claims through git (PN_CLAIMS=git) need a git checkout; {project.dir} is in none"
        )
    return top


def upstream(project: Project, top: str, env: Mapping[str, str]) -> Upstream:
    """The branch's upstream; a clear error when there is none.

    Asked under the clone's claim lock: another claimer's rebase detaches HEAD for a moment,
    and a branch-less HEAD has no upstream."""
    found = git.run(
        ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], cwd=top, env=env
    ).out.strip()
    if "/" not in found:
        raise PensaError(
            "claims through git (PN_CLAIMS=git) are pushed to the branch's upstream, and this "
            "branch has none: `git push -u origin <branch>` once"
        )
    remote, branch = found.split("/", 1)
    folder = os.path.relpath(project.dir, top).replace(os.sep, "/")
    return Upstream(top, remote, branch, folder)


def last_line(text: str) -> str:
    """The line of git's stderr that says what went wrong: its first `fatal:` or refused ref
    (` ! [remote rejected] ...`), else its first `error:`, else its last."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for marks in (("fatal:", "! ["), ("error:",)):
        said = [line for line in lines if line.startswith(marks)]
        if said:
            return said[0]
    return lines[-1] if lines else "no output"


def fetch(where: Upstream, env: Mapping[str, str]) -> Tip:
    """Fetch the remote branch; its tip, whose files are read from that one commit."""
    ref = f"refs/remotes/{where.remote}/{where.branch}"
    where.must(
        "fetch",
        "-q",
        where.remote,
        f"+refs/heads/{where.branch}:{ref}",
        env=env,
        doing=f"cannot claim: git fetch from {where.remote}/{where.branch}",
    )
    commit = where.must(
        "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", env=env, doing="git rev-parse"
    ).strip()
    return Tip(where, commit, env)


def commit_on(
    where: Upstream, parent: str, files: dict[str, str], message: str, env: Mapping[str, str]
) -> str:
    """A commit of `parent`'s tree with `files` (committed files by name) replaced, built in
    a private index.

    The index and the files live in a fresh temporary directory, not in `.git`, where the
    agent can write: a name planted there (a symlink) would have pn write through it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pensa-claim-") as tmp:
        private = {**env, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        where.must("read-tree", parent, env=private, doing="git read-tree")
        for number, (name, text) in enumerate(sorted(files.items())):
            blob_file = os.path.join(tmp, f"{number}.jsonl")
            with open(blob_file, "wb") as f:
                f.write(text.encode())
            blob = where.must("hash-object", "-w", blob_file, env=env, doing="git hash-object")
            where.must(
                "update-index",
                "--add",
                "--cacheinfo",
                f"100644,{blob.strip()},{where.path(name)}",
                env=private,
                doing="git update-index",
            )
        tree = where.must("write-tree", env=private, doing="git write-tree").strip()
        made = where.must(
            "commit-tree", tree, "-p", parent, "-m", message, env=env, doing="git commit-tree"
        )
        return made.strip()
