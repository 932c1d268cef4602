"""Commands that look at one issue: show, history and comments."""

from __future__ import annotations

import click

from pensa.cli.base import Env, PnGroup, cli, common, pass_env
from pensa.render import comment_line, detail_text, events_text


@cli.command()
@click.argument("issue_id", metavar="ID")
@click.option("--short", is_flag=True, help="One line (JSON: the issue object alone).")
@common
@pass_env
def show(env: Env, issue_id: str, short: bool) -> None:
    """Show an issue with its dependencies, dependents and comments."""
    tracker = env.session.tracker()
    if short:
        env.out.issue(tracker.get(issue_id))
        return
    detail = tracker.show(issue_id)
    env.out.emit(detail.to_json(), detail_text(detail, env.now()))


@cli.group(cls=PnGroup)
def comment() -> None:
    """Add and list comments on an issue."""


@comment.command("add")
@click.argument("issue_id", metavar="ID")
@click.argument("text")
@common
@pass_env
def comment_add(env: Env, issue_id: str, text: str) -> None:
    """Attach a comment to an issue.

    \b
    Example:
        pn comment add pn-1a2b3c4d "reproduced with an empty password only"
    """
    c = env.session.tracker(write=True).add_comment(issue_id, text, actor=env.session.actor)
    env.out.emit(c.to_json(), comment_line(c, env.now()))


@comment.command("list")
@click.argument("issue_id", metavar="ID")
@common
@pass_env
def comment_list(env: Env, issue_id: str) -> None:
    """List an issue's comments, oldest first."""
    comments = env.session.tracker().comments(issue_id)
    now = env.now()
    env.out.emit(
        [c.to_json() for c in comments],
        "\n".join(comment_line(c, now) for c in comments) or "(no comments)",
    )


@cli.command()
@click.argument("issue_id", metavar="ID")
@common
@pass_env
def history(env: Env, issue_id: str) -> None:
    """Show an issue's audit log, newest first."""
    events = env.session.tracker().history(issue_id)
    env.out.emit([e.to_json() for e in events], events_text(events, env.now()))
