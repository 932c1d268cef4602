"""Published contract modules: the rules pensa, ralph and sgf hold in common, each with one owner.

ralph and sgf import these modules (downward: sgf above ralph above pensa), so a shared
security rule is written once and cannot drift into two rules. What lives here:

- `safefile`: the link-refusing writer every tool's host writes go through;
- `hardgit`: the git options that keep a repository's configuration from choosing what runs;
- `crash`: the crash report of an unexpected exception (one line, a log with the traceback);
- `console`: what a console script refuses before anything runs (argv that is not UTF-8);
- `process`: whether a process is alive (exists and is no zombie);
- `assignee`: the assignee that takes a task out of the loops' queue (`HUMAN`).

They import nothing else of pensa, and only the standard library: an upper tool pays for what
it uses and never loads pensa's tracker. `tests/test_boundaries.py` holds both rules, and that
ralph and sgf import nothing of pensa but this package.
"""

from __future__ import annotations
