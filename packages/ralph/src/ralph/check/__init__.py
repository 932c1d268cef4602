"""The check step: done is decided by a check, not by the agent that did the work.

step.py runs it at every landing (the tasks' Verify commands or the project's
`--check-command`, then the check agent), verdict.py says what a verdict is and reads the
check agent's file as untrusted data, contract.py reads a task's contract from pn, agent.py
runs the check agent in the sandbox, act.py tells the tracker.
"""
