"""`--offline`: a stage played by the scripted model that ships with sgf; no account needed.

A stage that has one plays `templates/scenarios/<stage>.json`, the greeter of README "Try it
offline". sgf hands the file to ralph (`ralph --scenario FILE`), which starts the scripted
model server for the run and makes up the credential the agent sends it, so the preflight
asks for no credential and nobody invents a placeholder token.
"""

from __future__ import annotations

from pathlib import Path

from sgf import resources
from sgf.errors import NoOfflineScenario
from sgf.stages import Stage

FOLDER = "scenarios"
# The scenarios play Claude Code's own tools (Read, Write, Edit, Bash).
AGENT = "claude"


def stages() -> list[Stage]:
    """The stages a shipped scenario plays, in the order of the Stage enum."""
    shipped = {name.removesuffix(".json") for name in resources.names(FOLDER)}
    return [stage for stage in Stage if stage.value in shipped]


def scenario(stage: Stage, agent: str) -> Path:
    """The shipped scenario of `stage`, for ralph's `--scenario`."""
    if stage not in stages():
        listed = ", ".join(f"`{s.command}`" for s in stages())
        raise NoOfflineScenario(
            f"`{stage.command} --offline`: no scripted scenario ships for this stage; "
            f"these have one: {listed}"
        )
    if agent != AGENT:
        raise NoOfflineScenario(
            f"`{stage.command} --offline` plays Claude Code's tools, and this stage runs "
            f"{agent} (`agent` in .sgf/config.toml); set it to claude for the offline run"
        )
    return resources.path(FOLDER, f"{stage.value}.json")
