"""The loops' workspaces: where an agent's files are while its iteration runs.

The agent works in a repository of its own outside the project (ralph's workspace.py); what
it writes reaches the human's tree only as commits or, at a stop, as a stash. A test that
waits for the agent to have written something looks there.
"""

from __future__ import annotations

from pathlib import Path

from ralph import workspace

from tests.e2e_harness.project import Project


def written(project: Project, relative: str) -> list[Path]:
    """`relative` in each of the project's loops' workspaces where the agent has written it."""
    return [
        ws.repo / relative
        for ws in workspace.found(project.root, project.env)
        if (ws.repo / relative).exists()
    ]


def left_in(project: Project, relative: str) -> list[Path]:
    """`relative` in the work tree of any workspace of the project, parked ones included."""
    folder = workspace.folder(project.root, project.env)
    repos = (*folder.glob("*/repo"), *folder.glob("parked/*/repo"))
    return [repo / relative for repo in repos if (repo / relative).exists()]
