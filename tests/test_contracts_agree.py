"""The three tools talk through command lines, variables, image labels and exit codes. The
rules they hold in common are code with one owner, imported downward (test_shared_owners.py);
these contracts are spelt on both sides instead: each side names its half, and these tests
hold the halves together. A name, code or variable one tool changes without the other fails
here."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from ralph import agents as ralph_agents
from ralph import cli as ralph_cli
from ralph.models import Exit
from ralph.shared import backends
from sgf import config as sgf_config
from sgf import preflight
from sgf.loop import launch
from sgf.loop.loops import ExitCode

ROOT = Path(__file__).parent.parent
CONFTEST = ROOT / "conftest.py"


def source_text(package: str) -> str:
    return "\n".join(
        p.read_text() for p in sorted((ROOT / "packages" / package / "src").rglob("*.py"))
    )


def literals(package: str, prefix: str) -> set[str]:
    """Every quoted variable name starting with `prefix` in `package`'s source."""
    return set(re.findall(rf'"({prefix}[A-Z_]+)"', source_text(package)))


def test_the_agents_and_their_image_labels_are_written_once() -> None:
    """ralph's backends, sgf's config values and keys, and both tools' image labels all come
    from one registry (`ralph.shared.backends`)."""
    assert ralph_agents.names() == sgf_config.AGENTS == tuple(backends.BACKENDS)
    assert {n: k for n, k in backends.BACKENDS.items() if k} == preflight.AGENT_KEYS
    spelt = [
        path
        for package in ("pensa", "ralph", "sgf")
        for path in (ROOT / "packages" / package / "src").rglob("*.py")
        if re.search(r"[\"']springfield\.agent\.", path.read_text())
    ]
    assert spelt == [ROOT / "packages/ralph/src/ralph/shared/backends.py"]


@pytest.mark.parametrize("name", ralph_agents.names())
def test_each_agent_has_its_test_marker_and_the_fast_suite_leaves_it_out(name: str) -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'"{name}: needs', pyproject), f"no pytest marker for {name}"
    fast = (ROOT / "Makefile").read_text().split("test-fast:", 1)[1].split("\n\n", 1)[0]
    [left_out] = re.findall(r'-m "not \(([a-z0-9 ]+)\)"', fast)
    assert name in left_out.split(" or ")
    # and a test marked with it may start programs without `process`
    assert re.search(rf'^SLOW = frozenset\(\{{[^}}]*"{name}"', CONFTEST.read_text(), re.M)


def test_sgf_reads_ralphs_exit_codes_as_ralph_means_them() -> None:
    assert {e.name: e.value for e in ExitCode} == {e.name: e.value for e in Exit}
    assert set(launch.OUTCOMES) == {e.value for e in Exit}
    assert launch.OUTCOMES[Exit.EXHAUSTED] == "exhausted"
    assert launch.OUTCOMES[Exit.INTERRUPTED] == "interrupted"


def ralphs_variables() -> set[str]:
    command = ralph_cli.cli
    assert isinstance(command, click.Command)
    found: set[str] = set()
    for param in command.params:
        envvar = param.envvar
        found.update([envvar] if isinstance(envvar, str) else list(envvar or ()))
    return found


def test_every_ralph_variable_sgf_sets_is_one_ralph_reads() -> None:
    sets = literals("sgf", "RALPH_")
    assert sets, "sgf sets no RALPH_ variable: the pattern no longer finds them"
    assert sets <= ralphs_variables()


def test_every_pn_variable_ralph_sets_is_one_pensa_reads() -> None:
    sets = literals("ralph", "PN_")
    assert sets, "ralph sets no PN_ variable: the pattern no longer finds them"
    pensa = source_text("pensa")
    assert [name for name in sorted(sets) if name not in pensa] == []


def test_the_variable_checks_see_what_they_compare() -> None:
    assert {"RALPH_RECORD", "RALPH_STOP_FILE"} <= literals("sgf", "RALPH_")
    assert {"RALPH_RECORD", "RALPH_STOP_FILE"} <= ralphs_variables()
    assert "RALPH_NO_SUCH_SETTING" not in ralphs_variables()
