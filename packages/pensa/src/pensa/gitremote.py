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
    files: list[str]  # the JSONL files, relative to `top`

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


class Tip(NamedTuple):
    """The remote branch as one fetch found it: the commit and its issues."""

    commit: str
    lines: list[str]  # issues.jsonl split at "\n"
    issues: dict[str, tuple[int, Record]]  # id -> (index in `lines`, record)


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
    names = ("issues.jsonl", "deps.jsonl", "comments.jsonl", "deleted.jsonl")
    files = [os.path.relpath(os.path.join(project.dir, n), top) for n in names]
    return Upstream(top, remote, branch, files)


def deleted_on(where: Upstream, tip: Tip, issue_id: str, env: Mapping[str, str]) -> bool:
    """Whether `tip` holds a tombstone for the issue (only asked when it lacks the issue)."""
    from pensa.committed.records import parse_file

    if issue_id in tip.issues:
        return False
    shown = where.git("cat-file", "blob", f"{tip.commit}:{where.files[3]}", env=env)
    if shown.code != 0:
        return False  # no deleted.jsonl: nothing was ever deleted
    label = f"{where.remote}/{where.branch}:{where.files[3]}"
    return any(
        r["id"] == issue_id for _, r in parse_file(shown.out.encode(), "deleted.jsonl", label=label)
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


def fetch(where: Upstream, env: Mapping[str, str]) -> Tip:
    """Fetch the remote branch and read its issues, from the one commit fetched."""
    from pensa.committed.records import parse_file

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
    shown = where.git("cat-file", "blob", f"{commit}:{where.files[0]}", env=env)
    text = shown.out if shown.code == 0 else ""
    label = f"{where.remote}/{where.branch}:{where.files[0]}"
    found = parse_file(text.encode(), "issues.jsonl", label=label)
    return Tip(commit, text.split("\n"), {r["id"]: (n - 1, r) for n, r in found})


def with_line(tip: Tip, issue_id: str, line: str) -> list[str]:
    """The tip's issues.jsonl lines with the issue's line replaced, or added in id order."""
    lines = list(tip.lines)
    if issue_id in tip.issues:
        lines[tip.issues[issue_id][0]] = line
        return lines
    after = [index for other, (index, _) in tip.issues.items() if other > issue_id]
    if after:
        lines.insert(min(after), line)
    elif lines and lines[-1] == "":
        lines.insert(len(lines) - 1, line)
    else:
        lines.extend([line, ""])
    return lines


def commit_on(
    where: Upstream, parent: str, issues: str, message: str, env: Mapping[str, str]
) -> str:
    """A commit of `parent`'s tree with issues.jsonl replaced, built in a private index.

    The index and the file live in a fresh temporary directory, not in `.git`, where the
    agent can write: a name planted there (a symlink) would have pn write through it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pensa-claim-") as tmp:
        blob_file = os.path.join(tmp, "issues.jsonl")
        with open(blob_file, "wb") as f:
            f.write(issues.encode())
        private = {**env, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        blob = where.must("hash-object", "-w", blob_file, env=env, doing="git hash-object")
        where.must("read-tree", parent, env=private, doing="git read-tree")
        where.must(
            "update-index",
            "--add",
            "--cacheinfo",
            f"100644,{blob.strip()},{where.files[0]}",
            env=private,
            doing="git update-index",
        )
        tree = where.must("write-tree", env=private, doing="git write-tree").strip()
        made = where.must(
            "commit-tree", tree, "-p", parent, "-m", message, env=env, doing="git commit-tree"
        )
        return made.strip()
