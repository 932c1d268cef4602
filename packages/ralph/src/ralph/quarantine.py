"""An iteration's commits that could reach the host's control never land (ralph.shared.protected).

What the sandbox hands back (inbox.py) is read in the project's own repository before
anything is integrated, pushed or shown: raw tree diffs of every new commit, each merge
against each of its parents (`git log --raw -m`, no textconv, no external diff, no filters).
A commit is held back when it

- changes a protected path (`.sgf/`, `.pre-commit-config.yaml`, `.gitattributes` in any
  folder, `.gitmodules`, gitlinks, `.claude/`, the project's own), or
- puts under `.pensa/`, which pn on the host reads and writes, anything but a plain file
  (a symbolic link, a gitlink) or a file over pensa's size limit, or
- adds a symbolic link that leads out of the repository (an absolute target, or one through
  `..` past the top): checked out in the human's tree it would make a tool that writes there
  (sgf init's `.gitignore`, an editor, a build) write wherever the agent chose.

Then the whole iteration is quarantined: its commits are kept on `refs/sgf/quarantine/<loop>`
(`-2`, `-3` for more) for a human to read with `git log --stat`, never to check out; nothing
of it reaches a branch, the work tree, or the remote, which never moved: the commits were
only ever on the host's incoming ref. Not even the commits before the first offending one
are kept: later ones may build on the change, and a human reviewing the quarantine sees the
iteration whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ralph import git, workspace
from ralph.errors import RalphError
from ralph.shared.protected import GITLINK, Protected

REFS = "refs/sgf/quarantine/"
TRACKER = ".pensa/"
PLAIN = ("100644", "100755", "000000")  # a file, an executable file, or gone
SYMLINK = "120000"
_MAX_TARGET = 4096
# pn refuses to read more than this from one of its files; a larger one is no export of its.
MAX_TRACKER_FILE = 256 * 1024**2


class Quarantined(RalphError):
    """The iteration committed to protected paths: nothing was integrated or pushed."""

    code = "quarantined"


@dataclass(frozen=True, slots=True)
class Change:
    """One path a commit changed: its tree modes and objects before and after (the last
    mode and object are the commit's own)."""

    path: str
    modes: tuple[str, ...]
    objects: tuple[str, ...]

    @property
    def mode(self) -> str:
        return self.modes[-1]

    @property
    def blob(self) -> str:
        return self.objects[-1]


def unquote(text: str) -> str:
    """A path as `git log --raw` prints it, with C-style quoting undone."""
    if not (text.startswith('"') and text.endswith('"') and len(text) >= 2):
        return text
    escapes = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out.append(escapes.get(nxt, ord(nxt)) if nxt.isascii() else 92)
            i += 2
            continue
        out += char.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_raw(text: str) -> list[Change]:
    """The changes in `git log --raw` output; other lines (commit ids) are skipped."""
    found: list[Change] = []
    for line in text.splitlines():
        if not line.startswith(":") or "\t" not in line:
            continue
        meta, _, path = line.partition("\t")
        fields = meta.lstrip(":").split()
        if len(fields) < 5:
            continue
        modes, objects = (fields[0], fields[1]), (fields[2], fields[3])
        found.append(Change(unquote(path), modes, objects))
    return found


class Guard:
    """Vets the commits that arrived from a loop's workspace, in the project's repository."""

    def __init__(
        self,
        repo: Path,
        *,
        protected: Protected,
        loop_id: str,
        env: Mapping[str, str] | None,
    ) -> None:
        self.repo = repo
        self.protected = protected
        self.loop_id = loop_id
        self.stem = workspace.stem(loop_id)
        self.env = env

    def _git(self, *args: str) -> str:
        # quoted paths are plain ASCII: nothing an agent names can break the decoding
        done = git.command(self.repo, "-c", "core.quotePath=true", *args, env=self.env)
        if not done.ok:
            raise RalphError(f"git {args[0]} failed while vetting: {done.stderr.strip()}")
        return done.stdout

    def findings(self, tip: str, known: Sequence[str]) -> list[str]:
        """What in the commits reachable from `tip` and from no `known` commit must not
        land: protected paths, and pensa files that are not plain or too large."""
        raw = self._git(
            "log", "--raw", "-m", "--no-renames", "--no-abbrev", "--no-textconv",
            "--no-ext-diff", "--ignore-submodules=none", "--format=commit %H", tip,
            *(["--not", *known] if known else []), "--",
        )  # fmt: skip
        return self._judge(parse_raw(raw))

    def _judge(self, changes: list[Change]) -> list[str]:
        hits: list[str] = []
        sizes: dict[str, int] = {}
        tracker = [c for c in changes if c.path.startswith(TRACKER)]
        if tracker:
            sizes = self._sizes({c.blob for c in tracker if c.mode in PLAIN[:2]})
        for change in changes:
            if self.protected.covers(change.path, mode=GITLINK if GITLINK in change.modes else ""):
                hits.append(change.path)
            elif change.mode == SYMLINK and self._leads_out(change):
                hits.append(f"{change.path} (a link out of the repository)")
            elif change.path.startswith(TRACKER) and change.mode not in PLAIN:
                hits.append(f"{change.path} (not a plain file)")
            elif change.path.startswith(TRACKER) and sizes.get(change.blob, 0) > MAX_TRACKER_FILE:
                hits.append(f"{change.path} (over {MAX_TRACKER_FILE // 1024**2} MiB)")
        return sorted(set(hits))

    def stash_findings(self, stash: str) -> list[str]:
        """What a stash commit (work tree against HEAD, untracked files against nothing)
        holds that must not land."""
        raw = self._git("diff-tree", "-r", "--raw", "--no-renames", "--no-abbrev",
                        "--ignore-submodules=none", f"{stash}^1", stash)  # fmt: skip
        third = git.command(self.repo, "rev-parse", "-q", "--verify", f"{stash}^3", env=self.env)
        if third.ok:
            raw += self._git("diff-tree", "-r", "--raw", "--root", "--no-renames", "--no-abbrev",
                             "--ignore-submodules=none", third.stdout.strip())  # fmt: skip
        return self._judge(parse_raw(raw))

    def _leads_out(self, change: Change) -> bool:
        """Whether the link `change` adds points outside the repository."""
        done = git.command(self.repo, "cat-file", "blob", change.blob, env=self.env)
        target = done.stdout[:_MAX_TARGET] if done.ok else "/"
        if not target or target.startswith("/"):
            return True
        depth = 0
        for part in PurePosixPath(change.path).parent.parts + PurePosixPath(target).parts:
            depth += -1 if part == ".." else 0 if part == "." else 1
            if depth < 0:
                return True
        return False

    def _sizes(self, blobs: set[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for blob in sorted(blobs):
            size = self._git("cat-file", "-s", blob).strip()
            out[blob] = int(size) if size.isdigit() else 0
        return out

    def free_ref(self, stem: str) -> str:
        """A quarantine ref nobody uses yet."""
        for n in range(1, 1000):
            ref = REFS + stem + ("" if n == 1 else f"-{n}")
            if git.rev(self.repo, ref, env=self.env) is None:
                return ref
        raise Quarantined(f"too many quarantine refs named {REFS}{stem}; remove old ones")

    def check(self, tip: str, known: Sequence[str], *, what: str = "the agent's commits") -> None:
        """Raise Quarantined, the commits kept on a quarantine ref, when they must not land."""
        hits = self.findings(tip, known)
        if not hits:
            return
        ref = self.free_ref(self.stem)
        git.set_ref(self.repo, ref, tip, env=self.env)
        shown = ", ".join(hits[:8]) + (f" and {len(hits) - 8} more" if len(hits) > 8 else "")
        raise Quarantined(
            f"{what} change protected paths ({shown}): nothing was integrated or pushed, "
            f"and the commits are kept on {ref}; review them with `git log --stat {ref}` "
            "before taking anything from them (don't check it out)"
        )
