"""`sgf top`: a live dashboard of every loop, across projects (issue 15).

discovery.py finds projects, board.py reads pensa, collect.py folds both with
`sgf.loopstate` into a Snapshot once a second; control.py stops and restarts loops;
app.py is the Textual view (imported only when `sgf top` runs); watch.py is the rich
`sgf status --watch` for terminals where a TUI is unwelcome.
"""
