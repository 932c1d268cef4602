"""Turning sgf's results into text: rich on a terminal, plain when piped or NO_COLOR."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

    from sgf.recovery import Report
    from sgf.scaffold import Step
    from sgf.status import Status


def console(*, stderr: bool = False) -> Console:
    """A rich console; rich itself turns colour off when piped or NO_COLOR is set."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def init_steps(steps: list[Step], root: str) -> None:
    """Print what `sgf init` did, one line per path."""
    out = console()
    out.print(f"[bold]sgf init[/bold] in {root}")
    for step in steps:
        note = f" ({step.note})" if step.note else ""
        out.print(f"  {step.action.value:<11} {step.path}{note}")


def recovery(report: Report) -> None:
    """Tell the user, on stderr, what pre-launch recovery did and how to get work back."""
    err = console(stderr=True)
    if report.live:
        err.print(f"sgf: loop running ({', '.join(report.live)}): recovery skipped")
    if report.crashed:
        err.print(f"sgf: recovered from crashed loop {', '.join(report.crashed)}")
    if report.stash:
        err.print(
            f"sgf: uncommitted changes stashed as {report.stash_message!r} ({report.stash[:12]});"
            " get them back with `git stash list` and `git stash pop`"
        )
    if report.released:
        err.print(f"sgf: released claims {', '.join(report.released)}")
    for warning in report.warnings:
        err.print(f"sgf: warning: {warning}")


def _uptime(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def status(report: Status, *, as_json: bool) -> None:
    """Print `sgf status`."""
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    from rich.table import Table

    out = console()
    if report.running:
        table = Table(title="Running loops", title_justify="left")
        for column in ("stage", "loop id", "pid", "uptime", "log"):
            table.add_column(column)
        for r in report.running:
            table.add_row(r.stage, r.loop_id, str(r.pid), _uptime(r.uptime_seconds), r.log)
        out.print(table)
    else:
        out.print("No loops running.")
    if report.stale:
        out.print(f"Crashed (recovered at next launch): {', '.join(report.stale)}")
    if report.recent:
        table = Table(title="Recent loops", title_justify="left")
        for column in ("loop id", "ended", "outcome", "exit"):
            table.add_column(column)
        for o in report.recent:
            code = "-" if o.exit_code is None else str(o.exit_code)
            table.add_row(o.loop_id, o.ended_at, o.outcome, code)
        out.print(table)
    if report.pensa is None:
        out.print(f"pensa: unavailable ({report.pensa_error})")
        return
    p = report.pensa
    out.print(
        f"pensa: {p.ready} ready, {p.in_progress} in progress, {p.blocked} blocked, "
        f"{p.open_bugs} open bugs"
    )
    if p.by_spec:
        table = Table(title="Per spec", title_justify="left")
        for column in ("spec", "ready", "in progress", "blocked", "open bugs"):
            table.add_column(column, justify="left" if column == "spec" else "right")
        for s in p.by_spec:
            row: list[Any] = [s.spec, s.ready, s.in_progress, s.blocked, s.open_bugs]
            table.add_row(*map(str, row))
        out.print(table)
