"""Published contract modules: what ralph and sgf hold in common, owned here and imported by
sgf (downward: sgf above ralph above pensa); what all three share is `pensa.shared`'s.

- `backends`: the agent backends by name, the one list the tools' agent names come from;
- `protected`: the control plane's paths, which an agent's commits may not change and sgf
  never advises stashing without a review;
- `pids`: a process named for good, by pid and start time;
- `figures`: a run's cost, tokens and time in the one form every view of ralph and sgf prints;
- `failure`: the one-line-plus-tails report of a program that failed (`ProgramFailed`), the
  base of ralph's and sgf's `CommandFailed`.

They import nothing else of ralph: sgf pays for what it uses and never loads ralph's loop.
`tests/test_boundaries.py` holds that, and that sgf imports nothing of ralph but this package.
"""

from __future__ import annotations
