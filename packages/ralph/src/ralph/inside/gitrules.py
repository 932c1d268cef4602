"""The guard's git rules: which git commands can destroy what the iteration does not own.

Each rule reads one subcommand's arguments as git does (options, the `--` that starts paths,
git's own test of whether a word names a commit) and asks `Facts` only when its answer
decides: a `git checkout FILE` is refused only when FILE holds changes that were already
uncommitted when the iteration began, a `git branch -f` only when the branch loses commits it
had then. A value the guard cannot see (`git push origin "$b"`) fails closed. Standard
library only (sandbox).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from ralph.inside.rules import Facts, Place, Refusal, shown
from ralph.inside.words import Word, literal

Check = Callable[[list[Word], Place, Facts], "Refusal | None"]
_FORCING = {"-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete"}
_FORCING |= {"-d", "--prune"}  # a delete, and deleting every remote branch not here
# `git push origin "$(git branch --show-current)"`: a branch name, which cannot force
_BRANCH_QUERIES = {
    "git branch --show-current",
    "git rev-parse --abbrev-ref HEAD",
    "git symbolic-ref --short HEAD",
}
_GLOBAL_VALUES = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


class Args:
    """A subcommand's arguments split as git splits them: options, words, paths after `--`."""

    def __init__(self, words: Sequence[Word], values: frozenset[str] = frozenset()) -> None:
        self.options: dict[str, Word | None] = {}
        self.positional: list[Word] = []
        self.paths: list[Word] | None = None  # the words after `--`
        i = 0
        while i < len(words):
            word, i = words[i], i + 1
            text = word.text
            if word.is_("--"):
                self.paths = list(words[i:])
                return
            if not word.plain or not text.startswith("-") or text == "-":
                self.positional.append(word)
            elif text.startswith("--"):
                name, eq, value = text.partition("=")
                self.options[name] = literal(value) if eq else None
                if not eq and name in values and i < len(words):
                    self.options[name], i = words[i], i + 1
            else:
                for k, char in enumerate(text[1:], start=2):
                    self.options[f"-{char}"] = None
                    if f"-{char}" in values:
                        if k < len(text):
                            self.options[f"-{char}"] = literal(text[k:])
                        elif i < len(words):
                            self.options[f"-{char}"], i = words[i], i + 1
                        break

    def has(self, *names: str) -> bool:
        """Whether any of the options `names` was given."""
        return any(n in self.options for n in names)

    def value(self, *names: str) -> Word | None:
        """The value given to the first of `names` that has one."""
        return next((v for n in names if (v := self.options.get(n)) is not None), None)

    def files(self) -> list[Word]:
        """The words that name paths when every word does: positionals, then after `--`."""
        return [*self.positional, *(self.paths or [])]


def check(args: list[Word], place: Place, facts: Facts) -> Refusal | None:
    """The refusal for `git ARGS`, or None."""
    i = 0
    while i < len(args) and args[i].plain and args[i].text.startswith("-"):
        option = args[i].text
        if option == "-C" and i + 1 < len(args):
            place = Place(place.project, place.path(args[i + 1]), place.home)
        if option == "-c" and i + 1 < len(args) and args[i + 1].text.startswith("alias."):
            return _unseen("git -c alias...", "run the aliased command itself")
        i += 2 if option in _GLOBAL_VALUES else 1
    if i >= len(args):
        return None
    if not args[i].plain:
        return _unseen(f"git {args[i].text}", "name the git command")
    rule = RULES.get(args[i].text)
    return rule(args[i + 1 :], place, facts) if rule else None


def _unseen(what: str, fix: str) -> Refusal:
    return Refusal("unreadable", f"refused: the guard cannot see what {what} does; {fix}")


def _push(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words, frozenset({"--repo", "--receive-pack", "--exec", "-o", "--push-option"}))
    refspecs = args.files()[1:]  # after the remote
    if args.has(*_FORCING) or any(w.text.startswith(("+", ":")) for w in refspecs):
        return Refusal(
            "force-push",
            "refused: a force push (or a delete or --prune) rewrites the remote's history for "
            "everyone; push normally, and rebase onto the remote if it is rejected",
        )
    hidden = [w for w in words if w.splits]
    hidden += [w for w in refspecs if not w.plain and not _branch_query(w)]
    if hidden:
        return Refusal(
            "force-push",
            f"refused: git push {hidden[0].text}: the guard cannot see what it holds (a + "
            "would force); write the remote and branch names out",
        )
    return None


def _branch_query(word: Word) -> bool:
    text = word.text.strip()
    return len(word.parts) == 1 and " ".join(text[2:-1].split()) in _BRANCH_QUERIES


def _reset(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words)
    if not args.has("--hard"):
        return None
    if args.positional:
        target = args.positional[0]
        if not target.plain or not facts.keeps_commits("HEAD", target.text):
            return Refusal(
                "reset-hard",
                f"refused: git reset --hard {target.text} drops commits this iteration did "
                "not make (or ones the guard cannot see); revert your own commits instead",
            )
    return _discard("git reset --hard", [], place, facts, "reset-hard")


def _checkout(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words, frozenset({"-b", "-B", "--orphan"}))
    if (name := args.value("-B")) is not None:
        start = args.positional[0] if args.positional else literal("HEAD")
        if refusal := _move(f"git checkout -B {name.text}", name, start, facts, branch=True):
            return refusal
    if args.has("--pathspec-from-file"):
        return _discard("git checkout --pathspec-from-file", [], place, facts)
    paths = args.paths
    if paths is None and args.positional and not args.has("-b", "-B", "--orphan"):
        first, rest = args.positional[0], args.positional[1:]
        switch = first.is_("-") or (first.plain and facts.names_commit(first.text))
        paths = rest if switch else args.positional
    if paths:
        return _discard("git checkout " + " ".join(w.text for w in words), paths, place, facts)
    if args.has("-f", "--force", "--discard-changes"):
        return _discard("git checkout --force", [], place, facts)
    return None


def _switch(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words, frozenset({"-c", "-C", "--orphan"}))
    if (name := args.value("-C")) is not None:
        start = args.positional[0] if args.positional else literal("HEAD")
        if refusal := _move(f"git switch -C {name.text}", name, start, facts, branch=True):
            return refusal
    if args.has("-f", "--force", "--discard-changes"):
        return _discard("git switch --discard-changes", [], place, facts)
    return None


def _restore(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words, frozenset({"-s", "--source"}))
    if args.has("-S", "--staged") and not args.has("-W", "--worktree"):
        return None  # only the index changes: nothing is lost
    paths = [] if args.has("--pathspec-from-file") else args.files()
    return _discard("git restore " + " ".join(w.text for w in words), paths, place, facts)


def _rm(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words)
    if not args.has("-f", "--force") or args.has("--cached"):
        return None  # without -f git keeps a file with changes
    paths = args.files()
    return _discard("git rm -f " + " ".join(w.text for w in paths), paths, place, facts)


def _clean(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words, frozenset({"-e", "--exclude"}))
    if not args.has("-f", "--force") or args.has("-n", "--dry-run"):
        return None
    return _discard("git clean -f", args.files() or [literal(".")], place, facts, "clean")


def _stash(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    if words and words[0].is_("drop", "clear"):
        return Refusal("discard", "refused: git stash drop/clear deletes work someone stashed")
    return None


def _branch(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    values = {"-u", "--set-upstream-to", "--contains", "--no-contains", "--merged"}
    args = Args(words, frozenset({*values, "--no-merged", "--points-at", "--sort", "--format"}))
    force = args.has("-f", "--force")
    names = args.positional
    if args.has("-D") or (args.has("-d", "--delete") and force):
        for name in names:
            if refusal := _move(f"git branch -D {name.text}", name, None, facts, branch=True):
                return refusal
    elif args.has("-M", "-C") or (args.has("-m", "--move", "-c", "--copy") and force):
        if names:
            source = names[0] if len(names) > 1 else literal("HEAD")
            what = "git branch -M " + " ".join(w.text for w in names)
            return _move(what, names[-1], source, facts, branch=True)
    elif force and names:
        start = names[1] if len(names) > 1 else literal("HEAD")
        return _move(f"git branch -f {names[0].text}", names[0], start, facts, branch=True)
    return None


def _update_ref(words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    args = Args(words, frozenset({"-m"}))
    if args.has("--stdin"):
        return _unseen("git update-ref --stdin", "name the ref and its new commit as arguments")
    refs = args.positional
    if not refs:
        return None
    target = None if args.has("-d") else (refs[1] if len(refs) > 1 else literal(""))
    return _move("git update-ref " + " ".join(w.text for w in words), refs[0], target, facts)


def _move(
    what: str, ref: Word, target: Word | None, facts: Facts, *, branch: bool = False
) -> Refusal | None:
    """Refused when the ref loses commits it had when the iteration began."""
    if not ref.plain or (target is not None and not target.plain):
        return _unseen(what, "write the branch and the commit out")
    name = f"refs/heads/{ref.text}" if branch else ref.text
    if facts.keeps_commits(name, None if target is None else target.text):
        return None
    return Refusal(
        "move-ref",
        f"refused: {what} drops commits {ref.text} had before this iteration; make a new "
        "branch for your own work instead",
    )


def _discard(
    what: str, paths: list[Word], place: Place, facts: Facts, rule: str = "discard"
) -> Refusal | None:
    """Refused when `paths` (none: every path) cover changes the iteration did not make."""
    foreign = facts.foreign_changes()
    hit = [f for f in foreign if not paths or any(_covers(p, f, place) for p in paths)]
    if not hit:
        return None
    return Refusal(
        rule,
        f"refused: {what} would destroy uncommitted changes this iteration did not make "
        f"({shown(hit)}); leave them alone or commit only your own files",
    )


def _covers(pathspec: Word, changed: str, place: Place) -> bool:
    """Whether git's `pathspec` may name the project-relative path `changed`."""
    full = PurePosixPath(place.project, changed)
    where = place.path(pathspec)
    if where is None or pathspec.text.startswith(":"):  # hidden, or pathspec magic
        return True
    if any(c in pathspec.text for c in "*?["):  # git globs a quoted pattern itself
        return fnmatch.fnmatchcase(str(full), where) or fnmatch.fnmatchcase(str(full), where + "/*")
    return full.is_relative_to(where)


RULES: dict[str, Check] = {
    "push": _push,
    "reset": _reset,
    "checkout": _checkout,
    "switch": _switch,
    "restore": _restore,
    "rm": _rm,
    "clean": _clean,
    "stash": _stash,
    "branch": _branch,
    "update-ref": _update_ref,
}
