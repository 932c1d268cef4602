"""Data and maintenance: export, import, doctor, where, prime."""

from __future__ import annotations

import click

from pensa.cli.base import Env, cli, common, pass_env


@cli.command()
@click.option("--stage", is_flag=True, help="git add the files (automatic in a pre-commit hook).")
@common
@pass_env
def export(env: Env, stage: bool) -> None:
    """Write .pensa/issues.jsonl, deps.jsonl and comments.jsonl from the database.

    Run as the pre-commit hook (PRE_COMMIT=1 or GIT_INDEX_FILE set) it also stages the three
    files, so the commit carries them next to the code. Without a .pensa directory it does
    nothing.
    """
    from pensa import git, jsonl

    found = env.project(create=False)
    if found is None:
        env.out.emit({"issues": 0, "deps": 0, "comments": 0, "staged": False}, "nothing to export")
        return
    summary = jsonl.export(env.store(), found)
    if stage or git.in_commit_hook(env.environ):
        git.add(found.jsonl_files(), cwd=found.dir, env=env.environ)
        summary = summary._replace(staged=True)
    text = f"exported {summary.issues} issues, {summary.deps} deps, {summary.comments} comments"
    env.out.emit(summary.to_json(), text + (" (staged)" if summary.staged else ""))


@cli.command("import")
@common
@pass_env
def import_(env: Env) -> None:
    """Rebuild the database from the JSONL files, all or nothing.

    A bad line fails with file:line and leaves the database untouched; events of issues that
    still exist are kept. Without issues.jsonl there is nothing to import (exit 0).
    """
    from pensa import jsonl

    found = env.project(create=False)
    summary = jsonl.import_(found) if found is not None else None
    if summary is None:
        env.out.emit({"issues": 0, "deps": 0, "comments": 0, "events_kept": 0}, "nothing to import")
        return
    env.out.emit(
        summary.to_json(),
        f"imported {summary.issues} issues, {summary.deps} deps, {summary.comments} comments",
    )


@cli.command()
@click.option(
    "--fix", is_flag=True, help="Release stale claims, drop orphaned deps, clear dangling fixes."
)
@common
@pass_env
def doctor(env: Env, fix: bool) -> None:
    """Show claims; check stale claims, orphans, dangling fixes, JSONL drift and integrity.

    Every in-progress issue is listed (check `claim`, or `stale_claim` when its latest claim
    is over 30 minutes old). Findings are data: doctor exits 0 whenever it could run.
    """
    from pensa import doctor as checks

    found = env.project(create=False)
    store = env.store(write=fix and found is not None)
    report = checks.run(store, found, now=env.now(), fix=fix, actor=env.actor if fix else "")
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
    found = env.project(create=False)
    exists = found is not None
    where = found if found is not None else env.project(create=True)
    assert where is not None  # create=True always answers
    env.out.emit({"path": where.dir, "exists": exists and where.exists()}, where.dir)


@cli.command()
@common
@pass_env
def prime(env: Env) -> None:
    """Print the agent cheat sheet: every command and value, and common mistakes."""
    from pensa.reference import prime as cheat_sheet

    env.out.emit({"text": cheat_sheet()}, cheat_sheet())
