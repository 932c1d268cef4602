"""The sandbox image ralph runs agents in, and the Docker engine that holds it.

engine.py is the one door to Docker; baseimage.py finds, pulls or makes the image the sandbox
is built FROM, sandboximage.py builds the sandbox image itself (installed.py supplies pensa's
source when sgf was installed without a clone); buildprogress.py shows the slow work live,
buildview.py reads the builder's output and timings.py remembers how long each phase took;
containers.py lists the loops' running containers.
"""
