"""pensa's committed files as a commit holds them (`pensa.committed.disk`: the issues of
`pn-1a2b3c4d` in `.pensa/issues-1.jsonl`, and so on): which paths they are, and the issues in
them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

ISSUE_FILES = re.compile(r"\.pensa/issues(-[0-9a-f])?\.jsonl")


def touches_issues(files: Iterable[str]) -> bool:
    """Whether a commit's changed `files` include one of pensa's issue files."""
    return any(ISSUE_FILES.fullmatch(path) for path in files)


def committed_issues(git: Callable[..., str], ref: str) -> dict[str, dict[str, Any]]:
    """The issues `ref` holds, by id; `git` runs git (in a work tree or a bare remote) and
    returns its stdout."""
    names = git("ls-tree", "--name-only", f"{ref}:.pensa").split()
    issues: dict[str, dict[str, Any]] = {}
    for name in names:
        if ISSUE_FILES.fullmatch(f".pensa/{name}"):
            for line in git("show", f"{ref}:.pensa/{name}").splitlines():
                if line.strip():
                    record = json.loads(line)
                    issues[str(record["id"])] = record
    return issues
