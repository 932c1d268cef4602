"""Commands that create and change issues, and their comments."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, TypeVar

import click

from pensa.cli.base import Env, VocabType, cli, common, label_option, pass_env, priority_option
from pensa.cli.shape import shape_options
from pensa.models import IssueType, Priority, Status

if TYPE_CHECKING:
    from datetime import datetime

    from pensa.changes import Shape


F = TypeVar("F", bound=Callable[..., object])


def description_file_option() -> Callable[[F], F]:
    """`--description-file FILE`, `-` for stdin (as `gh --body-file`)."""
    return click.option(
        "--description-file",
        type=click.File("r", encoding="utf-8"),
        metavar="FILE",
        help="Read the description from FILE (- for stdin).",
    )


def read_description(text: str | None, file: IO[str] | None) -> str | None:
    """The description from --description or --description-file (never both)."""
    if file is None:
        return text
    if text is not None:
        raise click.UsageError("give --description or --description-file, not both")
    try:
        return file.read()
    except UnicodeDecodeError as e:
        raise click.UsageError(f"--description-file is not UTF-8 text ({e.reason})") from None


@cli.command()
@click.argument("title")
@click.option(
    "-t",
    "--type",
    "issue_type",
    type=VocabType(IssueType),
    default="task",
    show_default=True,
    help="epic, feature, task, bug, spike, test or chore.",
)
@priority_option(default="p2")
@click.option("-a", "--assignee", help="Who the issue is for.")
@click.option("--spec", help="Stem of the spec it implements (auth for specs/auth.md).")
@click.option("--fixes", metavar="BUG", help="Id of the bug this issue fixes.")
@click.option("--description", help="Longer text.")
@description_file_option()
@click.option(
    "--dep", "deps", multiple=True, metavar="ID", help="An issue this one depends on (repeatable)."
)
@label_option()
@shape_options(update=False)
@common
@pass_env
def create(
    env: Env,
    title: str,
    issue_type: IssueType,
    priority: Priority,
    assignee: str | None,
    spec: str | None,
    fixes: str | None,
    description: str | None,
    description_file: IO[str] | None,
    deps: tuple[str, ...],
    labels: tuple[str, ...],
    shape: Shape,
) -> None:
    """Create an issue and print it.

    \b
    Example:
        pn create "login crash on empty password" -t bug -p p0
        pn create "reject empty passwords" -t task --spec auth --fixes pn-1a2b3c4d
        pn create "sign-in" -t feature --parent pn-0e1f2a3b
        pn create "hash passwords" --parent pn-5c6d7e8f --size S \\
            --objective "no clear-text password is stored" --artifact src/auth.py \\
            --verify "pytest -q tests/test_auth.py"
        git log -1 --format=%b | pn create "follow up" --description-file -
    """
    description = read_description(description, description_file)
    issue = env.session.tracker(write=True).create(
        title,
        issue_type=issue_type,
        actor=env.session.actor,
        priority=priority,
        assignee=assignee,
        spec=spec,
        fixes=fixes,
        description=description,
        deps=deps,
        labels=labels,
        shape=shape,
    )
    env.out.issue(issue)


@cli.command()
@click.argument("title")
@click.option(
    "-t",
    "--type",
    "issue_type",
    type=VocabType(IssueType),
    default="task",
    show_default=True,
    help="epic, feature, task, bug, spike, test or chore.",
)
@priority_option(default="p2")
@click.option("--spec", help="Stem of the spec it implements.")
@description_file_option()
@common
@pass_env
def q(
    env: Env,
    title: str,
    issue_type: IssueType,
    priority: Priority,
    spec: str | None,
    description_file: IO[str] | None,
) -> None:
    """Quick capture: create an issue and print only its id.

    \b
    Example:
        pn q "flaky test in auth" -t bug
        pytest -x 2>&1 | tail -20 | pn q "auth test fails" -t bug --description-file -
    """
    issue = env.session.tracker(write=True).create(
        title,
        issue_type=issue_type,
        actor=env.session.actor,
        priority=priority,
        spec=spec,
        description=read_description(None, description_file),
    )
    env.out.emit({"id": issue.id}, issue.id)


@cli.command()
@click.argument("issue_id", metavar="ID")
@click.option("--title", help="New title.")
@click.option(
    "--status", type=VocabType(Status), help="open or in_progress (close with `pn close`)."
)
@priority_option()
@click.option("-a", "--assignee", help='New assignee ("" clears it).')
@click.option("--description", help='New description ("" clears it).')
@description_file_option()
@click.option("--spec", help='New spec stem ("" clears it).')
@click.option("--fixes", metavar="BUG", help='Bug this issue fixes ("" clears it).')
@click.option("-t", "--type", "issue_type", hidden=True, help="Refused: the type is fixed.")
@label_option()
@click.option("--claim", is_flag=True, help="Take it: in_progress, assigned to you.")
@click.option("--unclaim", is_flag=True, help="Give it back: open, unassigned.")
@shape_options(update=True)
@common
@pass_env
def update(
    env: Env,
    issue_id: str,
    title: str | None,
    status: Status | None,
    priority: Priority | None,
    assignee: str | None,
    description: str | None,
    description_file: IO[str] | None,
    spec: str | None,
    fixes: str | None,
    issue_type: str | None,
    labels: tuple[str, ...],
    claim: bool,
    unclaim: bool,
    shape: Shape,
) -> None:
    """Change an issue's fields, or claim/unclaim it, and print it.

    \b
    Example:
        pn update pn-1a2b3c4d --claim
        pn update pn-1a2b3c4d -p p1 --description "fails only on empty input"
        pn update pn-1a2b3c4d --parent pn-0e1f2a3b --verify "make test"
    """
    if issue_type is not None:
        raise click.UsageError("an issue's type is fixed at creation; create a new issue instead")
    description = read_description(description, description_file)
    if not any(
        v is not None for v in (title, status, priority, assignee, description, spec, fixes)
    ) and not (claim or unclaim or labels or shape):
        raise click.UsageError("nothing to change: name a field to set, or --claim/--unclaim")
    tracker = env.session.tracker(write=True)
    if claim or unclaim:
        from pensa.changes import Changes
        from pensa.errors import InvalidArgument

        if claim and unclaim:
            raise InvalidArgument("--claim and --unclaim contradict each other; pick one")
        if status is not None or assignee is not None:
            raise InvalidArgument("--claim/--unclaim set status and assignee; drop --status/-a")
        changes = Changes(
            title=title,
            priority=priority,
            description=description,
            spec=spec,
            fixes=fixes,
            labels=labels,
            shape=shape,
        )
        take_or_give_back = tracker.claim if claim else tracker.release
        issue = take_or_give_back(issue_id, actor=env.session.actor, changes=changes)
    else:
        issue = tracker.update(
            issue_id,
            actor=env.session.actor,
            title=title,
            status=status,
            priority=priority,
            assignee=assignee,
            description=description,
            spec=spec,
            fixes=fixes,
            labels=labels,
            shape=shape,
        )
    env.out.issue(issue)


@cli.command()
@click.argument("issue_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--reason", "-r", help="Why it is closed.")
@click.option(
    "--force", is_flag=True, help="Close it even if closed already or claimed by someone else."
)
@common
@pass_env
def close(env: Env, issue_ids: tuple[str, ...], reason: str | None, force: bool) -> None:
    """Close issues (all or none), recording why; say what that made ready.

    Closing the last open issue whose --fixes names a bug closes that bug too. With one ID,
    --json prints the issue; with several, an array of them.

    \b
    Example:
        pn close pn-1a2b3c4d --reason "implemented in auth.py"
        pn close 1a2b 5e6f -r "duplicates"
    """
    done = env.session.tracker(write=True).close_many(
        issue_ids, actor=env.session.actor, reason=reason, force=force
    )
    if env.out.as_json:
        env.out.emit(
            [i.to_json() for i in done.closed] if len(issue_ids) > 1 else done.closed[0].to_json(),
            "",
        )
        return
    from pensa.render import closed_text

    env.out.emit(None, closed_text(done))


@cli.command()
@click.argument("issue_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--reason", "-r", help="Why it is reopened.")
@common
@pass_env
def reopen(env: Env, issue_ids: tuple[str, ...], reason: str | None) -> None:
    """Reopen closed issues, all or none (clears closed_at and close_reason).

    With one ID, --json prints the issue; with several, an array of them."""
    issues = env.session.tracker(write=True).reopen_many(
        issue_ids, actor=env.session.actor, reason=reason
    )
    if len(issue_ids) > 1:
        env.out.issues(issues)
    else:
        env.out.issue(issues[0])


@cli.command()
@click.argument("issue_id", metavar="ID", required=False)
@click.option(
    "--held-by",
    metavar="ACTOR",
    help="Release every in-progress issue ACTOR holds (a loop that ended) instead of one ID.",
)
@click.option("--reason", "-r", help="Why (recorded in each issue's history; with --held-by).")
@click.option(
    "--interrupted-since",
    metavar="TIME",
    help="With --held-by: claims made since TIME (RFC 3339) were cut short by a stop, not "
    "given up on; they do not count towards the stuck threshold.",
)
@common
@pass_env
def release(
    env: Env,
    issue_id: str | None,
    held_by: str | None,
    reason: str | None,
    interrupted_since: str | None,
) -> None:
    """Give a claim back: status open, no assignee (same as update --unclaim).

    \b
    Example:
        pn release pn-1a2b3c4d
        pn release --held-by build-20260226T143000 --reason "loop ended: interrupted"
    """
    from pensa.errors import InvalidArgument

    if (issue_id is None) == (held_by is None):
        raise InvalidArgument("give either ID or --held-by ACTOR")
    if interrupted_since is not None and held_by is None:
        raise InvalidArgument("--interrupted-since goes with --held-by")
    since = None if interrupted_since is None else parse_since(interrupted_since)
    released = env.session.release(issue_id, held_by=held_by, reason=reason, cut_short_since=since)
    if held_by is not None:
        env.out.issues(released)
    else:
        env.out.issue(released[0])


@cli.command()
@click.argument("issue_id", metavar="ID")
@click.option("--force", is_flag=True, help="Also delete its dependencies and comments.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask first (pn asks only on a terminal).")
@common
@pass_env
def delete(env: Env, issue_id: str, force: bool, yes: bool) -> None:
    """Delete an issue (refused while it has deps, dependents or comments, unless --force).

    On a terminal pn names the issue and asks first; piped or scripted it does not.
    """
    from pensa.shared.inert import inert

    tracker = env.session.tracker(write=True)
    issue = tracker.get(issue_id)  # the full id, for the question and the answer
    if not yes and sys.stdin.isatty():
        asked = f'delete {issue.id} "{inert(issue.title)}"?'
        if not click.confirm(asked, default=False, err=True):
            raise click.ClickException(f"{issue.id} not deleted")
    tracker.delete(issue.id, actor=env.session.actor, force=force)
    env.out.emit({"deleted": issue.id}, f"deleted {issue.id}")


def parse_since(text: str) -> datetime:
    """`--interrupted-since`'s RFC 3339 time (a `Z` or an offset), or a one-line error."""
    from pensa.errors import InvalidArgument
    from pensa.models import parse_timestamp

    try:
        moment = parse_timestamp(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidArgument(f"--interrupted-since wants an RFC 3339 time with a zone: {text!r}")
    return moment
