"""The assignee that takes a task out of the loops' queue: pensa hands a stuck task to HUMAN
(`claims.mark_stuck`), ralph's check step hands it a task that failed its check too often,
and `ready` and `claim-next` leave such a task to the human who asks for it (`-a human`)."""

from __future__ import annotations

HUMAN = "human"
