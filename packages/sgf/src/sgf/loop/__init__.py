"""A loop's life, from the request to its ending, and the records it leaves on disk.

loops.py names the stages and the ralph command line each one turns into; stage.py runs a
stage start to end: launch.py prepares one loop (prompts.py assembles its prompt, with
timelimit.py's bound; recovery.py makes the project ready after a crash; offline.py hands
ralph the scripted model, gitclaims.py the environment for claims through git), parallel.py
prepares `--parallel` ones, runner.py runs each (terminal.py on a pseudo-terminal, plainlog.py
keeping its log readable) and ending.py settles what ralph left. runs.py, loopindex.py,
relaunch.py and loopstate.py are the loop's bookkeeping and how the views read it back;
groupbudget.py is one budget for a group of loops.
"""
