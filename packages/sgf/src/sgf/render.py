"""Turning sgf's results into text: rich on a terminal, plain when piped or NO_COLOR."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import click

if TYPE_CHECKING:
    from rich.text import Text

    from sgf.proc import Sink
    from sgf.recovery import Report
    from sgf.scaffold import Step
    from sgf.status import Running, Status


_CONTROLS = (*range(0x00, 0x20), *range(0x7F, 0xA0))
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_INERT = {cp: f"\\x{cp:02x}" for cp in _CONTROLS if cp != 0x09}
_INERT.update({cp: f"\\u{cp:04x}" for cp in _BIDI})


_INERT_LINES = {k: v for k, v in _INERT.items() if k != 0x0A}


def inert(value: object, *, multiline: bool = False) -> str:
    """Text from users, agents or the model made harmless for a terminal (issue 9): control
    characters and bidirectional overrides become visible escapes; newlines stay only where
    `multiline` says a message may span lines. (pensa and ralph have the same few lines:
    packages share no code.)"""
    return str(value).translate(_INERT_LINES if multiline else _INERT)


class _Console:
    """A rich console that never reads markup from text (issue 12: a warning holding
    `[/x]` raised MarkupError) and prints every line inert."""

    def __init__(self, *, stderr: bool) -> None:
        from rich.console import Console

        self._console = Console(stderr=stderr, highlight=False, soft_wrap=True)

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


def init_steps(steps: list[Step], root: str) -> None:
    """Print what `sgf init` did, one line per path."""
    out = console()
    out.print(f"sgf init in {root}", style="bold")
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
    for container in report.removed:
        out.print(f"removed orphan container {container} (its ralph was killed)")
    for warning in report.warnings:
        out.print(cell(f"warning: {warning}"))
    if report.running:
        table = Table(title="Running loops", title_justify="left")
        grouped = any(r.group for r in report.running)  # sgf build --parallel N (issue 14)
        heads = ("stage", "loop id", "iteration", "task", "cost", "uptime", "idle", "log")
        for column in (("group",) if grouped else ()) + heads:
            table.add_column(column)
        for r in report.running:
            step = f"{r.iteration}/{r.iterations}" if r.iteration else "-"
            task = f"{r.task} {r.task_title}" if r.task else "-"
            idle = _uptime(r.idle_seconds) if r.idle_seconds is not None else "-"
            cells = (r.stage, r.loop_id, step, task, f"${r.cost:.4f}", _uptime(r.uptime_seconds))
            group = (_group(r.group, report.running),) if grouped else ()
            table.add_row(*map(cell, (*group, *cells, idle, r.log)))
        out.print(table)
    else:
        out.print("No loops running.")
    if report.stale:
        out.print(f"Crashed (recovered at next launch): {', '.join(report.stale)}")
    if report.recent:
        table = Table(title="Recent loops", title_justify="left")
        columns = ("loop id", "ended", "outcome", "exit", "iterations", "closed", "cost")
        for column in (*columns, "stop reason", "guardrails"):
            table.add_column(column)
        for o in report.recent:
            code = "-" if o.exit_code is None else str(o.exit_code)
            totals = report.totals.get(o.loop_id, {})
            cost = totals.get("cost")
            shown_cost = f"${cost:.4f}" if isinstance(cost, int | float) else "-"
            iterations = totals.get("iterations")
            closed = totals.get("tasks_closed")
            recent_row = (
                o.loop_id,
                o.ended_at,
                o.outcome,
                code,
                iterations if isinstance(iterations, int) else "-",
                len(closed) if isinstance(closed, list) else "-",
                shown_cost,
                totals.get("stop_reason") or "-",
                totals.get("guardrails") or "-",
            )
            table.add_row(*map(cell, recent_row))
        out.print(table)
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
        table = Table(title="Per spec", title_justify="left")
        for column in ("spec", "ready", "in progress", "blocked", "open bugs"):
            table.add_column(column, justify="left" if column == "spec" else "right")
        for s in p.by_spec:
            row: list[Any] = [s.spec, s.ready, s.in_progress, s.blocked, s.open_bugs]
            table.add_row(*map(cell, row))
        out.print(table)


@contextlib.contextmanager
def build_view(log: BinaryIO, *, verbose: bool) -> Iterator[Sink]:
    """Where `sgf sandbox build` sends docker's output: all of it to `log`; on stderr either
    everything (`verbose`) or one dim line per step under a rich spinner (issue 11)."""
    import sys

    from sgf.buildview import BuildView

    if verbose:
        yield Tee(log, sys.stderr.buffer)
        return
    from rich.console import Console

    err = Console(stderr=True, highlight=False)
    with err.status("building the sandbox image…") as spinner:

        def show(step: str) -> None:
            err.print(inert(step), style="dim", markup=False)
            spinner.update(inert(step))

        yield BuildView(log, show)


class Tee:
    """A proc.Sink writing to several binary files."""

    def __init__(self, *files: BinaryIO) -> None:
        self.files = files

    def write(self, data: bytes, /) -> int:
        """Write `data` to every file."""
        for file in self.files:
            file.write(data)
        return len(data)

    def flush(self) -> None:
        """Flush every file."""
        for file in self.files:
            file.flush()
