"""What `pn ready` means, as SQL conditions on `issues`, written once: open, not a bug, not
blocked (`pensa.blocked`'s flag), no open child, nothing blocked above it, and free for
anyone. `pensa.views` runs them; a close asks them of the issues it may unblock
(`pensa.closing`) without loading the views.
"""

from __future__ import annotations

from pensa.blocked import waits_on_open

# An issue is blocked while any issue it depends on is not closed: the flag the triggers
# keep (`pensa.blocked`), which issues_ready holds beside the open issue's JSON.
BLOCKED = "blocked"
# An epic or feature (or any issue given children) is not work while a child is open: its
# children are (schema.m008_shapes' issues_children answers from the issues with a parent).
OPEN_CHILDREN = "EXISTS (SELECT 1 FROM issues c WHERE c.parent = issues.id AND c.status > 'closed')"
# A child inherits its ancestors' blockers: a feature that waits on another waits with all its
# tasks. Computed once per query, walking down from the children of blocked issues through
# issues_children (which holds only issues with a parent, and their ids): nothing for the many
# trackers with no parents, no row of the table read (a parent's dependencies come from the
# indexes, as its flag would come from its row).
BLOCKED_ABOVE = (
    "seq IN (WITH RECURSIVE below(id, seq) AS ("  # noqa: S608 - pensa's own SQL
    "SELECT c.id, c.seq FROM issues c INDEXED BY issues_children WHERE c.parent IS NOT NULL "
    f"AND {waits_on_open('c.parent')} "
    "UNION SELECT c.id, c.seq FROM below JOIN issues c INDEXED BY issues_children "
    "ON c.parent = below.id WHERE c.parent IS NOT NULL) "
    "SELECT seq FROM below)"
)
READY = (
    f"status = 'open' AND issue_type != 'bug' AND NOT {BLOCKED} AND NOT {OPEN_CHILDREN} "
    f"AND NOT {BLOCKED_ABOVE}"
)
# A project that wants every task to say how it is checked (`--require-verify`) asks this too.
HAS_VERIFY = "verify IS NOT NULL"
# Ready means claimable by anyone: claim-next skips an open issue assigned to someone else,
# so `ready` does too, unless `-a ACTOR` asks for what is assigned to ACTOR. An open issue
# whose assignee holds no live claim is `pn doctor`'s `idle_assignee`.
UNASSIGNED = "assignee IS NULL"
