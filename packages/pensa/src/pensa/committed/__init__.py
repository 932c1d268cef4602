"""The committed layer: `.pensa/*.jsonl`, the tracker's copy that travels in git.

Every module here reads, writes or reconciles those files; nothing above them knows their
format. `disk` owns the files on disk (their names, the shards by id, whether they changed
since the last sync, reading and writing them); `files` reads and writes every file pensa
touches, never through a planted link or from a FIFO or device; `records` and `contents`
check what was read; `snapshot` holds the files as plain records and renders them; `merge`
and `mergefile` merge three versions; `sync` merges the files into the database and writes
the export, `apply` writes a merge's result into the database, `base` keeps each file's sync
base and `pending` what the database changed since the last export; `rebuild` and
`localwork` are `pn import`; `jsonl` is export and import's entry; `writeback` is what a
write leaves for git (`.pensa/uncommitted`) and the staging of the hook's export; `head`
reads what the last commit holds; `shared` is the rule for a database shared by worktree
loops; `drift` finds lines the files hold that the database lacks (`pn doctor`); `waiting`
keeps the comments and edges that came without their issue until it comes.
"""
