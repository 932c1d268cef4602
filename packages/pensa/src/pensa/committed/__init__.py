"""The committed layer: `.pensa/*.jsonl`, the tracker's copy that travels in git.

Every module here reads, writes or reconciles those files; nothing above the files knows
their format. `files` writes every file pensa writes (never through a planted link),
`freshness` says whether the files changed since the last sync, `records` and `contents` read
and check them, `snapshot` holds them as plain records, `merge` and `mergefile` merge three
versions, `sync` merges the files into the database, `rebuild` and `localwork` are `pn import`,
`jsonl` is export and import's entry, `writeback` keeps the files current after a write,
`head` reads what the last commit holds, and `shared` is the rule for a database shared by
worktree loops.
"""
