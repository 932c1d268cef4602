"""Turning sgf's results into text: rich on a terminal, plain when piped or NO_COLOR."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import click
from pensa.shared.inert import inert

from sgf import figures

if TYPE_CHECKING:
    from rich.text import Text

    from sgf.doctor import Finding
    from sgf.loop.recovery import Report
    from sgf.scaffold import Step
    from sgf.status import Running, Status


class _Console:
    """A rich console that never reads markup from text (a warning holding
    `[/x]` raised MarkupError) and prints every line inert."""

    def __init__(self, *, stderr: bool) -> None:
        from rich.console import Console

        self._console = Console(stderr=stderr, highlight=False, soft_wrap=True)

    @property
    def width(self) -> int:
        """The terminal's width in characters (`COLUMNS` when set)."""
        return self._console.width

    @property
    def is_terminal(self) -> bool:
        """Whether the output is a terminal (piped: plain rows, no tables)."""
        return self._console.is_terminal

    def print(self, renderable: object, *, style: str | None = None) -> None:
        """Print a plain string (made inert, no markup) or a rich renderable (a Table)."""
        if isinstance(renderable, str):
            self._console.print(inert(renderable, multiline=True), style=style, markup=False)
        else:
            self._console.print(renderable)


def console(*, stderr: bool = False) -> _Console:
    """A console for sgf's output; rich turns colour off when piped or NO_COLOR is set."""
    return _Console(stderr=stderr)


def cell(value: object) -> Text:
    """A table cell: plain text, never markup, never a raw control character."""
    from rich.text import Text

    return Text(inert(value))


# What a newcomer runs after `sgf init`, in order (README "Your first project").
AFTER_INIT = (
    "next: `sgf sandbox build` (the agents' image; it records its base in .sgf/config.toml), "
    'commit these files (`git add -A && git commit -m "chore: sgf init"`), then `sgf doctor` '
    "(what a first loop needs) and `sgf spec` (write the first spec)"
)


def init_steps(steps: list[Step], root: str) -> None:
    """Print what `sgf init` did, one line per path, then what to run next."""
    out = console()
    out.print(f"sgf init in {root}", style="bold")
    for step in steps:
        note = f" ({step.note})" if step.note else ""
        out.print(f"  {step.action.value:<11} {step.path}{note}")
    out.print(AFTER_INIT)


def recovery(report: Report) -> None:
    """Tell the user, on stderr, what pre-launch recovery did and how to get work back."""
    err = console(stderr=True)
    if report.crashed:
        err.print(f"sgf: recovered from crashed loop {', '.join(report.crashed)}")
    if report.stash and report.stash_protected:
        paths = ", ".join(report.stash_protected)
        err.print(
            f"sgf: uncommitted changes stashed as {report.stash_message!r} ({report.stash[:12]});"
            f" they touch protected paths ({paths}), which decide what runs on this machine:"
            f" review them with `git stash show -p --include-untracked {report.stash[:12]}`"
            " before you pop or apply any of it"
        )
    elif report.stash:
        err.print(
            f"sgf: uncommitted changes stashed as {report.stash_message!r} ({report.stash[:12]});"
            " get them back with `git stash list` and `git stash pop`"
        )
    if report.released:
        err.print(f"sgf: released claims {', '.join(report.released)}")
    for warning in report.warnings:
        err.print(f"sgf: warning: {warning}")


def _group(name: str | None, running: list[Running]) -> str:
    """`3 at 14:30:00`: how many loops one `--parallel` run started, and when (its first id)."""
    if not name:
        return "-"
    stamp = name.rsplit("T", 1)[-1]
    when = f"{stamp[:2]}:{stamp[2:4]}:{stamp[4:6]}" if len(stamp) == 6 else name
    return f"{sum(r.group == name for r in running)} at {when}"


Rows = Sequence[Sequence[str]]


class Columns(NamedTuple):
    """How a table gives way on a narrow terminal (`sgf.tablefit`): its free-text columns
    with the least each keeps, and the columns it can do without, least useful first."""

    shrink: Mapping[str, int]
    optional: tuple[str, ...] = ()


def table(
    title: str, heads: Sequence[str], rows: Rows, *, width: int | None, fits: Columns
) -> object:
    """A titled table: on a terminal (`width` characters) fitted as `sgf top` fits its own,
    identifiers never cut; piped (`width` None), or on a terminal too narrow for it, plain
    aligned rows under one header line, every cell whole (no cut), like `gh`."""
    from sgf import tablefit

    rows = [tuple(inert(c) for c in r) for r in rows]
    if width is not None:
        sizes = tablefit.fit(heads, rows, width, shrink=fits.shrink, optional=fits.optional)
        if sizes is not None:
            return tablefit.table(
                title, heads, [list(map(cell, sizes.row(r))) for r in rows], sizes
            )
    return "\n".join([f"{title}:", *tablefit.aligned(heads, rows)])


# What each `sgf status` table gives up on a narrow terminal; the loop ids stay whole.
RUNNING = Columns({"task": 12, "log": 12}, ("log", "active", "tokens", "group", "time", "task"))
RECENT = Columns(
    {"stop reason": 12, "guardrails": 10},
    ("guardrails", "exit", "ended", "tokens", "closed", "time", "iterations"),
)
PER_SPEC = Columns({"spec": 8})


def _running(report: Status) -> tuple[tuple[str, ...], Rows]:
    grouped = any(r.group for r in report.running)  # sgf build --parallel N
    # the names `sgf top` uses; `active`: how long ago the loop's log last grew
    heads = ("loop id", "stage", *figures.NAMES, "task", "active", "log")
    rows: list[tuple[str, ...]] = []
    for r in report.running:
        task = f"{r.task} {r.task_title}" if r.task else "-"
        group = (_group(r.group, report.running),) if grouped else ()
        rows.append(
            (
                *group,
                r.loop_id,
                r.stage,
                figures.iterations(r.iteration, r.iterations),
                figures.cost(r.cost),
                figures.tokens(r.tokens),
                figures.duration(r.uptime_seconds),
                task,
                figures.duration(r.idle_seconds),
                r.log,
            )
        )
    return (("group",) if grouped else ()) + heads, rows


def _recent(report: Status) -> tuple[tuple[str, ...], Rows]:
    heads: tuple[str, ...] = ("loop id", "ended", "outcome", "exit", *figures.NAMES)
    heads += ("closed", "stop reason", "guardrails")
    rows: list[tuple[str, ...]] = []
    for o in report.recent:
        t = report.totals.get(o.loop_id, {})
        count = t.get("iterations")
        closed = t.get("tasks_closed")
        cost, tokens, seconds = t.get("cost"), t.get("tokens"), t.get("seconds")
        rows.append(
            (
                o.loop_id,
                o.ended_at,
                o.outcome,
                "-" if o.exit_code is None else str(o.exit_code),
                figures.iterations(count, t.get("planned")) if isinstance(count, int) else "-",
                figures.cost(cost) if isinstance(cost, int | float) else "-",
                figures.tokens(tokens) if isinstance(tokens, int) else "-",
                figures.duration(seconds) if isinstance(seconds, int | float) else "-",
                str(len(closed)) if isinstance(closed, list) else "-",
                str(t.get("stop_reason") or "-"),
                str(t.get("guardrails") or "-"),
            )
        )
    return heads, rows


def status(report: Status, *, as_json: bool) -> None:
    """Print `sgf status`."""
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    out = console()
    width = out.width if out.is_terminal else None
    for container in report.removed:
        out.print(f"removed orphan container {container} (its ralph was killed)")
    for warning in report.warnings:
        out.print(f"warning: {warning}")
    if report.running:
        out.print(table("Running loops", *_running(report), width=width, fits=RUNNING))
    else:
        out.print("No loops running.")
    if report.stale:
        out.print(f"Crashed (recovered at next launch): {', '.join(report.stale)}")
    if report.recent:
        out.print(table("Recent loops", *_recent(report), width=width, fits=RECENT))
    if report.pensa is None:
        out.print(f"pensa: unavailable ({report.pensa_error})")
        return
    p = report.pensa
    out.print(
        f"pensa: {p.ready} ready, {p.in_progress} in progress, {p.blocked} blocked, "
        f"{p.open_bugs} open bugs"
        + (f", {p.needs_human} needing a human (`pn list -a human`)" if p.needs_human else "")
    )
    if p.stuck:
        out.print("Needing a human (agents gave up on these; `pn release ID` hands one back):")
        for issue in p.stuck:
            out.print(f"  {issue.id}  {issue.title}")
    if p.by_spec:
        heads = ("spec", "ready", "in progress", "blocked", "open bugs")
        rows = [
            (s.spec, str(s.ready), str(s.in_progress), str(s.blocked), str(s.open_bugs))
            for s in p.by_spec
        ]
        out.print(table("Per spec", heads, rows, width=width, fits=PER_SPEC))


def doctor(findings: list[Finding], *, as_json: bool) -> None:
    """Print `sgf doctor`: one line per finding, its fix after it."""
    if as_json:
        click.echo(json.dumps({"findings": [f.to_json() for f in findings]}, indent=2))
        return
    out = console()
    style = {"ok": "green", "warning": "yellow", "problem": "bold red"}
    for f in findings:
        fix = f" — {f.fix}" if f.fix else ""
        out.print(f"{f.level.value:<8} {f.check:<12} {f.message}{fix}", style=style[f.level.value])
