"""The command reference: one source for `pn prime` and docs/pensa.md.

`tests/test_docs.py` proves every click command is listed here and that docs/pensa.md carries
`readme_commands()` and `readme_errors()` verbatim, so the cheat sheet, the manual and the
CLI cannot drift.
"""

from __future__ import annotations

from typing import NamedTuple

from pensa.errors import ALL_ERRORS
from pensa.models import IssueType, Priority, Size, Status


class Ref(NamedTuple):
    """One documented command: its usage line and what it does."""

    usage: str
    summary: str

    @property
    def name(self) -> str:
        """The command path, e.g. `dep add`."""
        words = self.usage.split()[1:]
        return " ".join(w for w in words[:2] if w.islower() and w.replace("-", "").isalpha())


SECTIONS: tuple[tuple[str, tuple[Ref, ...]], ...] = (
    (
        "Work loop",
        (
            Ref(
                "pn claim-next [-p P] [-t TYPE]... [--spec S] [--label L]... [--require-verify]",
                "claim the first ready issue atomically; `null` when none; one claim per agent "
                "(plus one spike): if you hold a task, it prints that task",
            ),
            Ref(
                "pn close ID... [--reason R] [--force]",
                "close, all or none; closing the last fix of a bug closes the bug, the last "
                "child of an epic or feature closes it; says what became ready",
            ),
            Ref(
                "pn release ID | --held-by ACTOR [--reason R] [--interrupted-since TIME]",
                "give a claim back: status open, no assignee; --held-by: all of ACTOR's",
            ),
            Ref(
                "pn ready [-n N] [-p P] [-a A] [-t TYPE] [--spec S] [--label L]... "
                "[--require-verify] [--explain]",
                "unassigned open issues (no bugs) with every dependency closed, their "
                "ancestors' too, and no open child (assigned to A: `-a A`; stuck ones: "
                "`-a human`); `--explain`: the ones not ready, and why",
            ),
        ),
    ),
    (
        "Issues",
        (
            Ref(
                'pn create "TITLE" [-t TYPE] [-p P] [-a '
                "A] [--spec S] [--fixes BUG] [--description D | --description-file F] "
                "[--dep ID]... [--label L]... [--parent ID] [--discovered-from ID] "
                "[--size S|M|L] [--objective O] [--artifact A] [--verify CMD]...",
                "create an issue; `--description-file -` reads it from stdin; `--verify`: a "
                "command that proves it done",
            ),
            Ref(
                'pn q "TITLE" [-t TYPE] [-p P] [--spec S] [--description-file F]',
                "quick capture: prints only the id",
            ),
            Ref(
                "pn update ID [--title T] [--status S] [-p P] "
                "[-a A] [--description D | --description-file F] [--spec S] [--fixes BUG] "
                "[--label L]... [--claim] "
                "[--unclaim] [--parent ID] [--discovered-from ID] [--size S|M|L] "
                "[--objective O] [--artifact A] [--verify CMD]...",
                "change fields; `--claim` takes it, `--unclaim` gives it back; empty text "
                "clears; `--label` adds; `--verify` replaces the list",
            ),
            Ref(
                "pn edit ID",
                "edit title, priority, labels and description in $EDITOR, in one transaction",
            ),
            Ref(
                "pn reopen ID... [--reason R]",
                "reopen closed issues, all or none; each is unassigned (history keeps who had it)",
            ),
            Ref(
                "pn delete ID [--force] [--yes]",
                "delete, printing the full id; on a terminal it asks first (`--yes` does not); "
                "`--force` also removes its deps and comments",
            ),
            Ref(
                "pn show ID [--short]",
                "one issue with deps, dependents, parent, children and comments (for a bug, "
                "also its fixes)",
            ),
        ),
    ),
    (
        "Views",
        (
            Ref(
                "pn list [--status S] [--all] [-p P] [-a "
                "A] [-t TYPE] [--spec S] [--label L]... [--sort KEY] [-n N]",
                "open and in-progress issues (unless --status/--all), priority then age",
            ),
            Ref(
                "pn blocked",
                "issues waiting on a dependency that is not closed (and, for people, on which)",
            ),
            Ref("pn search TEXT", "substring match on title and description, any status"),
            Ref(
                "pn count [--all] [--status S] [--label L]... "
                "[--by-status|--by-priority|--by-issue-type|--by-assignee]",
                "count what `list` would show, or groups",
            ),
            Ref("pn status", "project snapshot: counts per type and status, ready, blocked"),
            Ref("pn history ID", "the issue's audit log, newest first"),
        ),
    ),
    (
        "Dependencies (CHILD depends on PARENT)",
        (
            Ref(
                "pn dep add CHILD PARENT [--kind blocks|parent|discovered-from]",
                "CHILD waits for PARENT; `--kind parent`: PARENT is CHILD's epic or feature "
                "(and waits for it); cycles and self-deps are refused",
            ),
            Ref("pn dep remove CHILD PARENT [--kind K]", "drop the edge (or the link)"),
            Ref("pn dep list ID", "what ID depends on, and what depends on it"),
            Ref(
                "pn dep tree ID [--direction down|up]",
                "down: what it depends on; up: what depends on it",
            ),
            Ref("pn dep cycles", "list cycles of dependencies and parents (there should be none)"),
            Ref(
                "pn graph [ID] [--format mermaid|dot] [--all]",
                "the dependency graph as Mermaid or DOT text: status as colour, priority in "
                "the label",
            ),
        ),
    ),
    (
        "Labels (`--label L` on list/ready/count/claim-next keeps issues carrying every L)",
        (
            Ref("pn label add ID LABEL...", "add labels to an issue"),
            Ref("pn label remove ID LABEL...", "remove labels from an issue"),
            Ref("pn label list", "every label in use, with how many issues carry it"),
        ),
    ),
    (
        "Comments",
        (
            Ref('pn comment add ID "TEXT"', "record an observation on an issue"),
            Ref("pn comment list ID", "the issue's comments, oldest first"),
        ),
    ),
    (
        "Data",
        (
            Ref(
                "pn export [--stage]",
                "merge in edits made to .pensa/*.jsonl, then write them; stages them as the "
                "pre-commit hook",
            ),
            Ref(
                "pn sync",
                "merge .pensa/*.jsonl into the database, keeping uncommitted work (git hooks)",
            ),
            Ref(
                "pn import [--discard-local] [--from-beads PATH]",
                "rebuild the database from .pensa/*.jsonl, all or nothing; refuses when the "
                "database holds work the files lack, unless --discard-local; --from-beads: add "
                "a beads export's issues",
            ),
            Ref(
                "pn init",
                "set this git repository up: .pensa/, hooks, merge driver (once per clone)",
            ),
            Ref(
                "pn merge-driver BASE OURS THEIRS [PATH]",
                "git's merge driver for .pensa/*.jsonl (registered by pn init)",
            ),
            Ref(
                "pn doctor [--fix] [--full]",
                "current claims; stale claims, orphans, dangling fixes, JSONL drift, integrity "
                "(`--full`: SQLite's complete integrity_check); `--fix` also rebuilds a damaged "
                "database, keeping a copy",
            ),
            Ref("pn where", "print the .pensa directory in use"),
            Ref("pn prime", "print the agent cheat sheet: commands, values, common mistakes"),
        ),
    ),
)

PITFALLS = (
    "There is no `pn claim`: use `pn claim-next` (next ready issue) or `pn update ID --claim`.",
    "Statuses use underscores: `in_progress` (not `in-progress`).",
    "Ids may be typed as any unique prefix of 4+ hex digits (`pn show 1a2b`); output always "
    "has the full id.",
    "Bugs are never ready: plan a task with `--fixes BUG`; closing it closes the bug.",
    "An epic or feature is not ready work while it has open children: its children are; "
    "it closes when its last child closes, and reopens when one reopens. A child waits "
    "with its parent: if the feature waits on another, so do its tasks.",
    "A task's Ready Contract: `--objective`, `--artifact` and `--verify CMD` (repeat, in "
    "order): the commands a check runs to decide it is done; `--size S|M|L`.",
    "Work found while doing a task: `pn create ... --discovered-from TASK` (and the task's "
    "`--parent`), not more work in the same task.",
    "`--json` works before or after the command; errors then come as one JSON line on stderr.",
)


def all_refs() -> list[Ref]:
    """Every documented command."""
    return [ref for _, refs in SECTIONS for ref in refs]


def values_lines() -> list[str]:
    """The allowed values of each vocabulary, one line each."""
    return [
        f"types: {IssueType.allowed()} (fixed at creation, default task)",
        f"sizes: {Size.allowed()} (an L wants splitting into children)",
        f"statuses: {Status.allowed()}",
        f"priorities: {Priority.allowed()} (p0 most urgent, default p2; `1` and `P1` mean p1)",
    ]


def prime() -> str:
    """The compact agent-facing cheat sheet."""
    out = ["pn (pensa): the issue tracker. Add --json for machine output.", ""]
    for title, refs in SECTIONS:
        out.append(f"{title}:")
        width = max(len(r.usage) for r in refs)
        out.extend(f"  {r.usage.ljust(width)}  # {r.summary}" for r in refs)
        out.append("")
    out.append("Values:")
    out.extend(f"  {line}" for line in values_lines())
    out.append("")
    out.append("Remember:")
    out.extend(f"  - {p}" for p in PITFALLS)
    return "\n".join(out)


def readme_commands() -> str:
    """docs/pensa.md's command table and values, in Markdown."""
    out = ["| command | what it does |", "|---|---|"]
    for _, refs in SECTIONS:
        out.extend("| `" + r.usage.replace("|", "\\|") + f"` | {r.summary} |" for r in refs)
    out += ["", "Values: " + "; ".join(values_lines()) + "."]
    return "\n".join(out)


def readme_errors() -> str:
    """docs/pensa.md's error-code table, in Markdown."""
    out = ["| error code | when |", "|---|---|"]
    out.extend(f"| `{e.code}` | {e.description} |" for e in ALL_ERRORS)
    return "\n".join(out)
