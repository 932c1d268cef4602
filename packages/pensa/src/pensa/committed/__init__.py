"""The committed layer: `.pensa/*.jsonl`, the tracker's copy that travels in git.

Every module here reads, writes or reconciles those files; nothing above them knows their
format. `disk` owns the files on disk (which they are, whether they changed since the last
sync, reading and writing them); `files` writes every file pensa writes, never through a
planted link; `records` and `contents` check what was read; `snapshot` holds the files as
plain records and renders them; `merge` and `mergefile` merge three versions; `sync` merges
the files into the database; `rebuild` and `localwork` are `pn import`; `jsonl` is export and
import's entry; `writeback` keeps the files current after a write; `head` reads what the last
commit holds; `shared` is the rule for a database shared by worktree loops; `drift` finds
lines the files hold that the database lacks (`pn doctor`).
"""
