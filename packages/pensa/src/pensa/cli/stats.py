"""Counting commands: count and status."""

from __future__ import annotations

import click

from pensa.cli.base import Env, VocabType, cli, common, label_option, pass_env
from pensa.models import Status
from pensa.views import ACTIVE, Filters


@cli.command()
@click.option("--status", type=VocabType(Status), multiple=True, help="Only this status.")
@click.option("--all", "all_", is_flag=True, help="Include closed issues.")
@label_option(only=True)
# One flag each, not a shared flag_value: click would silently keep the last of two.
@click.option("--by-status", "by", flag_value="status", multiple=True, help="Group by status.")
@click.option(
    "--by-priority", "by", flag_value="priority", multiple=True, help="Group by priority."
)
@click.option(
    "--by-issue-type", "by", flag_value="issue_type", multiple=True, help="Group by type."
)
@click.option(
    "--by-assignee", "by", flag_value="assignee", multiple=True, help="Group by assignee."
)
@common
@pass_env
def count(
    env: Env,
    status: tuple[Status, ...],
    all_: bool,
    labels: tuple[str, ...],
    by: tuple[str, ...],
) -> None:
    """Count the issues `list` would show (--all includes closed), optionally grouped."""
    statuses = status or (None if all_ else ACTIVE)
    from pensa import stats

    if len(set(by)) > 1:
        flags = " and ".join(f"--by-{key.replace('_', '-')}" for key in sorted(set(by)))
        raise click.UsageError(f"group by one thing at a time, not {flags}")
    by_key = stats.GroupKey(by[0]) if by else None
    counts = stats.count(env.session.store(), Filters(statuses, labels=labels), by=by_key)
    if counts.groups is None:
        text = f"count: {counts.total}"
    else:
        text = "\n".join(
            [f"total: {counts.total}", *(f"  {k}: {n}" for k, n in counts.groups.items())]
        )
    env.out.emit(counts.to_json(), text)


@cli.command()
@common
@pass_env
def status(env: Env) -> None:
    """Show a project snapshot: issues per type and status, how many ready and blocked.

    On a terminal each type is a bar of open, in progress, blocked and closed."""
    from pensa import stats
    from pensa.render import table

    report = stats.status(env.session.store())
    rows = [("type", *(s.value for s in Status))]
    rows += [(t, *(str(n) for n in by.values())) for t, by in report.by_type.items()]
    totals = report.totals()
    rows.append(("total", *(str(totals[s.value]) for s in Status)))
    summary = f"ready: {report.ready}  blocked: {report.blocked}"
    if report.needs_human:
        summary += (
            f"\nneeding a human: {report.needs_human} stuck (`pn list -a human`; "
            "`pn release ID` hands one back)"
        )
    if env.out.color:
        from pensa.render import status_bars

        env.out.rich(status_bars(report.bars) + "\n" + _escape(summary))
        return
    env.out.emit(report.to_json(), table(rows) + "\n" + summary)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
