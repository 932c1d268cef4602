"""Drift for `pn doctor`: lines in the committed files that neither the database nor the last
sync's base holds, so `pn sync` would bring them in."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pensa.errors import PensaError

if TYPE_CHECKING:
    from pensa.project import Project
    from pensa.store import Store


def drift(store: Store, project: Project | None) -> list[str]:
    """The files on disk hold lines neither the database nor the last sync's base has.

    The database being ahead of the files is the normal state between commits (work not yet
    exported; the pre-commit hook exports it), so it is not reported. What is
    reported is what `pn sync` (or the merge in `pn export`) would bring in: a hand edit, a
    pull or checkout whose hook did not run, or a line the sync refused."""
    if project is None or not project.exists():
        return []
    from pensa.committed.disk import MISSING, changed, fingerprints
    from pensa.committed.snapshot import parse, render_db

    # A file whose fingerprint is the last sync's is that sync's base or pensa's own export:
    # nothing new in it. The usual case (the hook exported and synced) costs a listing of
    # the folder, and only a changed file's shard is rendered.
    stored: dict[str, str] = dict(store.rows("SELECT name, fingerprint FROM sync_base"))
    current = fingerprints(project)
    names = [n for n in changed(stored, current) if current.get(n, MISSING) != MISSING]
    if not names:
        return []
    bases: dict[str, bytes] = {
        str(name): bytes(content)
        for name, content in store.rows("SELECT name, content FROM sync_base")
        if name in names
    }
    with store.snapshot() as conn:
        rendered = render_db(conn, names)
    found: list[str] = []
    for name in names:
        current_text = _read(os.path.join(project.dir, name))
        if current_text is None:
            continue  # a missing file holds nothing the database lacks
        known = set(bases.get(name, b"").splitlines())
        known.update(rendered[name].encode().splitlines())
        new = [line for line in current_text.splitlines() if line.strip() and line not in known]
        if not new:
            continue
        count = f"{len(new)} line{'s' if len(new) > 1 else ''}"
        try:
            parse({name: current_text})
        except PensaError as e:
            message = (
                f"{name} has {count} the database lacks, and {e}: fix that line, then `pn sync`"
            )
        else:
            message = (
                f"{name} has {count} the database lacks (changed since the last sync): "
                "`pn sync` merges them in"
            )
        found.append(message)
    return found


def _read(path: str) -> bytes | None:
    from pensa.safefile import read_regular

    return read_regular(path)
