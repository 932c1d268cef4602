"""What the repository held when the iteration began: what the guard decides on.

"Uncommitted work this iteration did not make" and "commits a branch had before" are only as
trustworthy as the record of the start. The hooks run as the agent, so anything they write
the agent can rewrite; ralph therefore writes this record itself, on the host, before each
iteration (hooks.begin), into `<run>/guard/`, which the container mounts read-only. The hook
only reads it; when it is missing or unreadable the guard treats every uncommitted file as
someone else's and every branch's current commit as one it must keep (it fails closed).

One module owns the file and the git commands that fill it, for both sides: ralph on the
host imports it, the hook in the sandbox runs it from the read-only copy (standard library
only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FILE = "baseline.json"
# `git status` as both sides read it: NUL-separated, so no name is quoted or mangled.
STATUS = ("status", "--porcelain", "-z", "--untracked-files=all")
REFS = ("for-each-ref", "--format=%(objectname) %(refname)")
# The stop is never the sentinel's or the task's files: they belong to ralph and pn.
IGNORED = (".ralph-complete", ".ralph-ding")


@dataclass(frozen=True, slots=True)
class Baseline:
    """HEAD, the uncommitted paths (None: unknown) and every ref's commit at the start."""

    head: str
    dirty: tuple[str, ...] | None
    refs: dict[str, str]

    def dumps(self) -> str:
        """The file's text."""
        dirty = None if self.dirty is None else list(self.dirty)
        return json.dumps({"head": self.head, "dirty": dirty, "refs": self.refs})


def status_paths(porcelain: str) -> list[str]:
    """The paths in `git status --porcelain -z` output (a rename's new name), sentinels out."""
    entries = porcelain.split("\0")
    paths: list[str] = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        if {"R", "C"} & set(entry[:2]):  # a rename or copy: the next entry is the old name
            i += 1
        if entry[3:] not in IGNORED:
            paths.append(entry[3:])
    return paths


def parse_refs(listing: str) -> dict[str, str]:
    """`{refname: commit}` from `git for-each-ref` in the REFS format."""
    refs: dict[str, str] = {}
    for line in listing.splitlines():
        commit, _, name = line.partition(" ")
        if commit and name:
            refs[name] = commit
    return refs


def load(path: Path) -> Baseline | None:
    """The record at `path`, or None when it is missing or not what ralph writes."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    head, dirty, refs = data.get("head"), data.get("dirty"), data.get("refs")
    if not isinstance(head, str) or not isinstance(refs, dict):
        return None
    listed = dirty if isinstance(dirty, list) else []
    if dirty is not None and (listed is not dirty or not all(isinstance(p, str) for p in listed)):
        return None
    kept = {str(k): str(v) for k, v in refs.items()}
    return Baseline(head, None if dirty is None else tuple(dirty), kept)
