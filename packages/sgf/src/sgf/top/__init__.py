"""`sgf top`: a live dashboard of every loop, across projects.

discovery.py finds projects (the per-user index of `sgf.loop.loopindex`, Docker labels),
board.py reads pensa through `pn`, collect.py folds both with `sgf.loop.loopstate` into a
Snapshot once a second; columns.py turns rows into cells; logview.py follows a loop's log;
control.py stops and restarts loops; app.py is the Textual view (imported only when
`sgf top` runs); watch.py is `sgf status --watch`; command.py wires them to the CLI.
"""
