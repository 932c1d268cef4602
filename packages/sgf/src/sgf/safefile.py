"""Every file sgf writes inside the project, written without following a link: through the
one link-refusing writer, `pensa.shared.safefile`, which owns the rule; a refusal is sgf's own
one-line `PathRefused`.

The agent can write the project (all but `.sgf/`, read-only in its container) and, in a
worktree loop, its whole worktree under `.sgf/worktrees/`; with `--sandbox none` anything.
A symbolic link where sgf writes a log, a PID file, a run record or an assembled prompt
would make sgf, running as the user, write wherever it points. So every write names its
`root` (the project, or sgf's own cache folder): below it no folder on the way may be a link
(a missing one is made, one level at a time), and what is refused is one line naming it
(docs/security.md).
"""

from __future__ import annotations

from pensa.shared.safefile import SafeFiles

from sgf.errors import PathRefused

FILES = SafeFiles(PathRefused)
folder = FILES.folder
replace = FILES.replace
create = FILES.create
append = FILES.append
truncate = FILES.truncate
