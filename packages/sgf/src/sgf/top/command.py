"""`sgf top` wired up: which project, which sources, then the Textual app."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sgf import git
from sgf.errors import InsideGitDir, NotAGitRepo, SgfError
from sgf.top.collect import Collector


def current_project(cwd: Path, *, all_projects: bool) -> Path | None:
    """The project the command runs in; None outside one when every project is asked for."""
    try:
        return git.toplevel(cwd)
    except (NotAGitRepo, InsideGitDir):
        if all_projects:
            return None
        raise


def run(
    cwd: Path,
    *,
    all_projects: bool,
    env: Mapping[str, str],
    sgf: Sequence[str],
    interval: float = 1.0,
    on_terminal: bool = True,
) -> int:
    """Run the dashboard until the user quits; its exit code."""
    if not on_terminal:
        raise SgfError("sgf top needs a terminal; `sgf status --watch` prints plain text")
    root = current_project(cwd, all_projects=all_projects)
    collector = Collector(root, all_projects=all_projects, env=env)
    from sgf.top.app import TopApp

    scope = "all projects" if all_projects else (root.name if root else "")
    TopApp(collector, scope=scope, interval=interval, sgf=sgf, env=env).run()
    return 0


def watch(root: Path, *, env: Mapping[str, str], interval: float = 1.0) -> None:
    """`sgf status --watch`: the project's loop table, redrawn until Ctrl+C."""
    from rich.console import Console

    from sgf.top import watch as watching

    collector = Collector(root, all_projects=False, env=env)
    watching.run(collector, console=Console(highlight=False), interval=interval)
