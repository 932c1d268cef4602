"""An iteration's commits that change the control plane never reach the human (protect.py).

After every iteration, before ralph pushes, integrates or shows anything, the commits the
iteration added to any branch or tag are read on the host with hardened git: raw tree diffs
(`git log --raw`, no textconv, no external diff, no filters). When one of them touches a
protected path, the iteration is quarantined as a whole:

- HEAD's new tip, and each other tip holding such a commit, is kept on
  `refs/sgf/quarantine/<loop-id>` (`-2`, `-3` for more), where a human can read it with
  `git log --stat`, never checking it out;
- HEAD's branch, and every branch or tag holding such a commit, is put back where the
  iteration found it (a new one is deleted), HEAD onto the branch it was on; a branch whose
  new commits are all clean is left alone (another loop may have moved it);
- the index and work tree go back to that commit with `git reset --keep`, which refuses
  rather than overwrite a change it did not make; pensa's `.pensa/` exports are kept as they
  are on disk, so they still match its database (which is not in git, so the tracker keeps
  the agent's claims and closes); if anything would be overwritten, the whole work tree is
  first saved as a stash commit on `refs/sgf/quarantine/<loop-id>-worktree` (`git stash
  create` hashes the work tree through the clean filters `.git/config` defines: the
  human's, as the agent cannot write that file).

Nothing of the quarantined iteration is kept on the branch, not even its commits before the
first one that touches a protected path: later commits may depend on the change, and a
human reviewing the quarantine sees the iteration's work whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph import git, gitdirs, integrate, proc
from ralph.errors import CommandFailed, RalphError
from ralph.models import Config
from ralph.protect import GITLINK, Protected

REFS = "refs/sgf/quarantine/"
TRACKER = ".pensa/"  # exports of pensa's database: kept as they are on disk


class Quarantined(RalphError):
    """The iteration committed to protected paths: nothing pushed, the branch reset."""

    code = "quarantined"


@dataclass(frozen=True, slots=True)
class Start:
    """Where the branches were when an iteration started."""

    head: str | None  # the commit HEAD pointed at
    branch: str | None  # the branch HEAD was on (None when detached)
    branches: dict[str, str]  # refs/heads/<name> and refs/tags/<name> -> object


@dataclass(frozen=True, slots=True)
class Change:
    """One path a commit changed, with its tree modes before and after."""

    path: str
    modes: tuple[str, ...]


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
    """The changes in `git log --raw [-c]` output; other lines (commit ids) are skipped."""
    found: list[Change] = []
    for line in text.splitlines():
        if not line.startswith(":") or "\t" not in line:
            continue
        meta, _, path = line.partition("\t")
        fields = meta.lstrip(":").split()
        parents = len(meta) - len(meta.lstrip(":"))  # `-c` prints one colon per parent
        modes = tuple(fields[: parents + 1])
        found.append(Change(unquote(path), modes))
    return found


class Guard:
    """Checks each iteration's commits in one checkout and quarantines what must not land."""

    def __init__(
        self,
        top: Path,
        *,
        protected: Protected,
        loop_id: str,
        env: Mapping[str, str] | None,
    ) -> None:
        self.top = top
        self.protected = protected
        self.loop_id = loop_id
        # --loop-id is free text; a ref name is not (git check-ref-format)
        self.stem = re.sub(r"[^A-Za-z0-9_-]+", "-", loop_id).strip("-") or "loop"
        self.env = env

    def _run(self, *args: str) -> proc.Completed:
        # quoted paths are plain ASCII: nothing an agent names can break the decoding
        return git.command(self.top, "-c", "core.quotePath=true", *args, env=self.env)

    def _git(self, *args: str, check: bool = True) -> str:
        done = self._run(*args)
        if check and not done.ok:
            raise CommandFailed(list(done.argv), done.returncode, done.stderr or done.stdout)
        return done.stdout if done.ok else ""

    def start(self) -> Start:
        """Read where HEAD and the branches are, before the agent runs."""
        # tags too: a human checks one out as readily as a branch
        listed = self._git(
            "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/tags/"
        )
        branches: dict[str, str] = {}
        for line in listed.splitlines():
            commit, _, ref = line.partition(" ")
            branches[ref] = commit
        return Start(git.head(self.top, env=self.env), git.branch(self.top, env=self.env), branches)

    def check(self, start: Start) -> None:
        """Raise Quarantined (after quarantining) when the iteration touched protected paths."""
        now = self.start()
        moved = {ref: tip for ref, tip in now.branches.items() if start.branches.get(ref) != tip}
        tips = list(dict.fromkeys([*([now.head] if now.head else []), *moved.values()]))
        if not tips or (now.head == start.head and not moved):
            return
        known = [*start.branches.values(), *([start.head] if start.head else [])]
        hits = {tip: self._touched(tip, known) for tip in tips}
        hit = sorted({path for paths in hits.values() for path in paths})
        if not hit:
            return
        worked = [now.head] if now.head and now.head != start.head else []
        refs = self._keep([tip for tip in tips if hits[tip] or tip in worked])
        # A branch whose new commits are all clean stays: another loop may have moved it
        # (a worktree loop's integration into the main checkout's branch).
        bad = {ref: tip for ref, tip in moved.items() if hits[tip]}
        saved = self._restore(start, now, bad, hit)
        where = f"{start.branch or 'HEAD'} is back at {(start.head or 'no commit')[:12]}"
        shown = ", ".join(hit[:8]) + (f" and {len(hit) - 8} more" if len(hit) > 8 else "")
        more = f" (and {', '.join(refs[1:])})" if len(refs) > 1 else ""
        extra = f"; the work tree was saved first as {saved}" if saved else ""
        raise Quarantined(
            f"the agent's commits change protected paths ({shown}): nothing was pushed, "
            f"{where}, and the commits are kept on {refs[0]}{more}{extra}; review them with "
            f"`git log --stat {refs[0]}` before taking anything from them (don't check it out)"
        )

    def _touched(self, tip: str, known: list[str]) -> list[str]:
        """The protected paths the commits reachable from `tip`, and from no `known` commit,
        change: raw tree diffs, each merge against all its parents (`-c`)."""
        # The hardened prefix hides gitlinks (diff.ignoreSubmodules=all, so plain git never
        # looks inside a nested repository); a tree-to-tree diff shows them without looking.
        raw = self._git(
            "log", "--raw", "-c", "--no-renames", "--no-abbrev", "--no-textconv",
            "--no-ext-diff", "--ignore-submodules=none", "--format=commit %H", tip,
            "--not", *known, "--",
        )  # fmt: skip
        changes = parse_raw(raw)
        return [c.path for c in changes if self.protected.covers(c.path, mode=_gitlink(c))]

    def _free_ref(self, stem: str) -> str:
        for n in range(1, 1000):
            ref = REFS + stem + ("" if n == 1 else f"-{n}")
            if not self._git("rev-parse", "--verify", "-q", ref, check=False):
                return ref
        raise Quarantined(f"too many quarantine refs named {REFS}{stem}; remove old ones")

    def _keep(self, tips: list[str]) -> list[str]:
        refs = []
        for tip in tips:
            ref = self._free_ref(self.stem)
            self._git("update-ref", ref, tip, "")
            refs.append(ref)
        return refs

    def _restore(self, start: Start, now: Start, moved: dict[str, str], hit: list[str]) -> str:
        """The `moved` branches, HEAD's branch, its index and work tree as the iteration found
        them; the stash ref, if one was needed."""
        current = f"refs/heads/{start.branch}" if start.branch else None
        for ref, tip in moved.items():
            if ref == current:
                continue
            old = start.branches.get(ref)
            if old is None:
                self._git("update-ref", "-d", ref, tip)
            else:
                self._git("update-ref", ref, old, tip)
        if start.branch and now.branch != start.branch:
            self._git("symbolic-ref", "HEAD", current or "")
        if start.head is None:  # an unborn branch: nothing to go back to but emptiness
            if current and current in now.branches:
                self._git("update-ref", "-d", current)
            self._git("read-tree", "--empty")
            return ""
        self._align_index(start.head, hit)
        if self._run("reset", "-q", "--keep", start.head).ok:
            return ""
        stash = self._git("stash", "create", f"sgf-quarantine {self.loop_id}").strip()
        ref = ""
        if stash:
            ref = self._free_ref(f"{self.stem}-worktree")
            self._git("update-ref", ref, stash, "")
        self._git("reset", "-q", "--hard", start.head)
        return ref

    def _align_index(self, before: str, hit: list[str]) -> None:
        """Index entries of paths whose work-tree file is already the human's (the agent
        committed them by plumbing only) and of pensa's exports are set to `before`, so
        `reset --keep` leaves those files alone instead of refusing."""
        ours: list[str] = []
        for path in hit:
            entry = self._entry(before, path)
            on_disk = self._blob_on_disk(path)
            if on_disk == (entry[1] if entry else None) or self._is_gitlink(path):
                ours.append(path)
        tracker = self._git("diff", "--name-only", "--no-renames", before, "HEAD", "--", TRACKER)
        ours += [unquote(p) for p in tracker.splitlines() if p]
        if ours:
            self._git("--literal-pathspecs", "reset", "-q", before, "--", *ours)

    def _entry(self, commit: str, path: str) -> tuple[str, str] | None:
        out = self._git("--literal-pathspecs", "ls-tree", "--full-tree", commit, "--", path)
        for line in out.splitlines():
            meta, _, name = line.partition("\t")
            if unquote(name) == path:
                mode, _, sha = meta.split()
                return mode, sha
        return None

    def _is_gitlink(self, path: str) -> bool:
        entry = self._entry("HEAD", path)
        return entry is not None and entry[0] == GITLINK

    def _blob_on_disk(self, path: str) -> str | None:
        """The blob id of the file at `path` as it is on disk (no filters), or None."""
        full = self.top / path
        if not full.is_file() or full.is_symlink():
            return None if not full.exists() and not full.is_symlink() else "?"
        done = self._git("hash-object", "--no-filters", "--", path, check=False)
        return done.strip() or "?"


def _gitlink(change: Change) -> str:
    return GITLINK if GITLINK in change.modes else ""


def make(
    config: Config, layout: gitdirs.Layout | None, *, env: Mapping[str, str] | None
) -> Guard | None:
    """The guard of the checkout holding the project (None outside a git checkout).

    Its git runs with the directories read before any agent ran (integrate.pinned)."""
    if layout is None:
        return None
    protected = Protected.with_extra(config.protect)
    return Guard(
        layout.work_tree,
        protected=protected,
        loop_id=config.loop_id,
        env=integrate.pinned(layout, env),
    )
