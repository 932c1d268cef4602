"""Every file ralph writes on the host, written without following a link: through the one
link-refusing writer, `pensa.shared.safefile`, which owns the rule; a refusal is ralph's own
one-line `LinkRefused`.

In Docker the agent can write the project, the repository's common git directory and
ralph's per-run directory; with `--sandbox none` anything. A symbolic link planted where
ralph writes (a run record, a lock, a log) would make ralph, running as the user, write
wherever it points: `~/.bashrc` gets a JSON line (docs/security.md). ralph names no root:
the folders it writes into are its own or the user's (`--log-file`, `--record`).
"""

from __future__ import annotations

from pensa.shared.safefile import SafeFiles

from ralph.errors import LinkRefused

FILES = SafeFiles(LinkRefused)
replace = FILES.replace
create = FILES.create
append = FILES.append
open_plain = FILES.open_plain
