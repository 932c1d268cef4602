"""`pn edit`: change an issue in $EDITOR, as a small text form."""

from __future__ import annotations

import sys

import click

from pensa.cli.base import Env, cli, common, pass_env


@cli.command()
@click.argument("issue_id", metavar="ID")
@common
@pass_env
def edit(env: Env, issue_id: str) -> None:
    """Edit an issue's title, priority, labels and description in $EDITOR.

    The changes are applied in one transaction, and only the fields you changed are
    written, so a change someone made meanwhile to another field is kept. A form pn cannot
    read is kept in a file named in the error.

    \b
    Example:
        EDITOR=nano pn edit 1a2b
    """
    from pensa import form
    from pensa.errors import InvalidArgument

    editor = env.environ.get("VISUAL") or env.environ.get("EDITOR") or None
    if editor is None and not sys.stdin.isatty():
        # click would start vi on a pipe: an agent's `pn edit` must fail, not hang
        raise InvalidArgument(
            "pn edit opens $EDITOR on a terminal and neither is here; set EDITOR, or change "
            "fields with `pn update ID --title ... -p ... --label ...`"
        )
    tracker = env.session.tracker(write=True)
    issue = tracker.get(issue_id)
    text = click.edit(form.render(issue), editor=editor, extension=".txt", require_save=True)
    if text is None:
        env.out.issue(issue)  # quit without saving: nothing changes
        return
    try:
        edited = form.parse(text)
    except InvalidArgument as e:
        raise InvalidArgument(f"{e}; your text is in {keep(text)}") from None
    changes = edited.changes(form.Form.of(issue))
    if not changes:
        env.out.issue(issue)
        return
    labels = changes.get("labels")
    updated = tracker.update(
        issue.id,
        actor=env.session.actor,
        title=edited.title if "title" in changes else None,
        priority=edited.priority if "priority" in changes else None,
        description=(edited.description or "") if "description" in changes else None,
        replace_labels=edited.labels if labels is not None else None,
    )
    env.out.issue(updated)


def keep(text: str) -> str:
    """Save a form pn could not read, so the typing is not lost; return where it went."""
    import tempfile

    with tempfile.NamedTemporaryFile(
        "w", prefix="pn-edit-", suffix=".txt", delete=False, encoding="utf-8"
    ) as f:
        f.write(text)
        return f.name
