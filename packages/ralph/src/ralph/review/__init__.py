"""Reviews: when a feature's work has landed (or a task's, or the whole plan's), several
reviewers judge the combined change at once, each with its own focus.

subject.py says what a landing completed and which change to review, panel.py runs the
reviewers concurrently (each one the check step's agent machinery: a container of its own on
a clean checkout, a verdict file read as data), act.py tells the tracker.
"""
