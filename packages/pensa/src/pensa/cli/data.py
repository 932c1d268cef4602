"""Data and maintenance: export, import, sync, merge-driver, init, doctor, where, prime."""

from __future__ import annotations

import click

from pensa.cli.base import Env, cli, common, pass_env


@cli.command()
@click.option("--stage", is_flag=True, help="git add the files (automatic in a pre-commit hook).")
@common
@pass_env
def export(env: Env, stage: bool) -> None:
    """Write .pensa/*.jsonl (sharded by id) from the database.

    Only the shards the database changed since the last export are rendered, after merging
    in anything changed in the files. Run as the pre-commit hook (PRE_COMMIT=1 or
    GIT_INDEX_FILE set) it also stages them and takes .pensa/uncommitted out of the commit,
    so the commit carries the tracker next to the code. Without a .pensa directory it does
    nothing.
    """
    summary = env.session.export(stage=stage)
    if summary is None:
        env.out.emit({"issues": 0, "deps": 0, "comments": 0, "staged": False}, "nothing to export")
        return
    text = f"exported {summary.issues} issues, {summary.deps} deps, {summary.comments} comments"
    env.out.emit(summary.to_json(), text + (" (staged)" if summary.staged else ""))


@cli.command("import")
@click.option(
    "--from-beads",
    "beads_path",
    metavar="PATH",
    help="Add the issues of a beads export (.beads/issues.jsonl, its directory, or a "
    "`bd export` file) instead.",
)
@click.option(
    "--discard-local",
    is_flag=True,
    help="Drop what the database holds that the files lack (claims, issues, comments...).",
)
@common
@pass_env
def import_(env: Env, beads_path: str | None, discard_local: bool) -> None:
    """Rebuild the database from the JSONL files, all or nothing.

    A bad line fails with file:line and leaves the database untouched; events of issues that
    still exist are kept. Without committed files there is nothing to import (exit 0). When the
    database holds work the files lack (a claim, an issue, a comment, a newer edit), it
    refuses and says how many: `pn export` first keeps them, --discard-local drops them.

    With --from-beads, add a beads export's issues to this tracker instead (all or nothing;
    issues imported before are skipped) and say what had no counterpart.

    \b
    Example:
        pn import --from-beads .beads/issues.jsonl
    """
    if beads_path is not None:
        done = env.session.import_beads(beads_path)
        env.out.emit(done.to_json(), done.text())
        return
    summary = env.session.import_(discard_local=discard_local)
    if summary is None:
        env.out.emit({"issues": 0, "deps": 0, "comments": 0, "events_kept": 0}, "nothing to import")
        return
    env.out.emit(
        summary.to_json(),
        f"imported {summary.issues} issues, {summary.deps} deps, {summary.comments} comments",
    )


@cli.command()
@click.option(
    "--adopt",
    is_flag=True,
    help="Record the files as in sync without merging them: they are exports of this database.",
)
@common
@pass_env
def sync(env: Env, adopt: bool) -> None:
    """Merge .pensa/*.jsonl into the database; uncommitted work is kept (the git hooks).

    A three-way merge against the files as last synced: what changed only in the files is
    taken, what changed only here is kept, a close always wins over a stale claim or edit.
    Issues that only a checkout dropped go, unless changed here; tombstones always win.
    Without a .pensa directory it does nothing.

    \b
    Example:
        git switch feature && pn sync
    """
    from pensa.session import Skipped

    done = env.session.sync(adopt=adopt)
    if isinstance(done, Skipped):
        env.out.emit({"added": 0, "updated": 0, "removed": 0, "changed": False}, done.reason)
        return
    text = (
        f"synced: {done.added} added, {done.updated} updated, {done.removed} removed"
        if done.changed
        else "in sync: nothing changed"
    )
    env.out.emit(done.to_json(), text)


@cli.command("merge-driver")
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("ours", type=click.Path(dir_okay=False))
@click.argument("theirs", type=click.Path(dir_okay=False))
@click.argument("path", required=False, default="")
@common
@pass_env
def merge_driver(env: Env, base: str, ours: str, theirs: str, path: str) -> None:
    """Merge three versions of a .pensa/*.jsonl file into OURS (git's merge driver).

    Registered by `pn init` as `merge.pensa.driver` for `.pensa/*.jsonl merge=pensa`: issues
    merge by id and field, edges as a set, comments and tombstones as unions. The result is
    sorted canonical JSONL, and the exit code 0, so no conflict is left for a human.
    """
    from pensa.committed import mergefile

    written = mergefile.merge_paths(base, ours, theirs, path)
    env.out.emit(
        {"path": path or ours, "lines": written}, f"merged {path or ours}: {written} lines"
    )


@cli.command()
@common
@pass_env
def init(env: Env) -> None:
    """Set this git repository up for pensa (idempotent; run once per clone).

    Creates .pensa/ (database, JSONL, .gitignore), adds pensa's hooks to
    .pre-commit-config.yaml, installs the git hooks, writes `.pensa/*.jsonl merge=pensa` to
    .gitattributes and registers the merge driver in .git/config.
    """
    steps = env.session.init()
    width = max(len(s.path) for s in steps)
    env.out.emit(
        [s.to_json() for s in steps], "\n".join(f"{s.path:<{width}}  {s.action}" for s in steps)
    )


@cli.command()
@click.option(
    "--fix",
    is_flag=True,
    help=(
        "Release stale claims, drop orphaned deps and comments, clear dangling fixes; rebuild "
        "a damaged database from the JSONL, keeping a copy."
    ),
)
@click.option(
    "--full",
    is_flag=True,
    help="SQLite's full integrity_check (indexes too) instead of the quicker quick_check.",
)
@common
@pass_env
def doctor(env: Env, fix: bool, full: bool) -> None:
    """Show claims; check stale claims, orphans, dangling fixes, JSONL drift and integrity.

    Every in-progress issue is listed (check `claim`, or `stale_claim` when its latest claim
    is over 30 minutes old). Each finding is one line ending with its fix. Work in the
    database not yet exported is normal, not drift. A database SQLite cannot read is one
    finding; `--fix` moves it aside (and says where) and rebuilds it from the JSONL.
    Findings are data: doctor exits 0 whenever it could run.
    """
    report = env.session.doctor(fix=fix, full=full)
    lines = [f"[{f.check}] {f.message}" for f in report.findings]
    if not any(f.is_problem for f in report.findings):
        lines.append("no problems found")
    if report.fixes:
        lines += ["fixed:", *(f"  [{f.check}] {f.message}" for f in report.fixes)]
    env.out.emit(report.to_json(), "\n".join(lines))


@cli.command()
@common
@pass_env
def where(env: Env) -> None:
    """Print the .pensa directory in use (or the one a first write would create)."""
    found = env.session.project(create=False)
    exists = found is not None
    where = found if found is not None else env.session.project(create=True)
    assert where is not None  # create=True always answers
    env.out.emit({"path": where.dir, "exists": exists and where.exists()}, where.dir)


@cli.command()
@common
@pass_env
def prime(env: Env) -> None:
    """Print the agent cheat sheet: every command and value, and common mistakes."""
    from pensa.reference import prime as cheat_sheet

    env.out.emit({"text": cheat_sheet()}, cheat_sheet())
