"""What each hot command loads: nothing it does not use (STYLE.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from .conftest import Pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def loaded(args: list[str], cwd: Path) -> set[str]:
    # Without coverage's start-up hook: under `make test` it would load modules of its own
    # (json among them) into the pn process being inspected.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pensa", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}


@pytest.mark.parametrize("command", [["import"], ["sync"], ["export"]])
def test_the_file_commands_load_neither_tracker_nor_views(repo: Path, command: list[str]) -> None:
    modules = loaded(command, repo)
    assert "pensa.committed.jsonl" in modules or "pensa.committed.sync" in modules
    assert not {"pensa.tracker", "pensa.views", "pensa.graph"} & modules


def test_ready_loads_no_write_path(repo: Path) -> None:
    modules = loaded(["ready", "--json"], repo)
    assert "pensa.views" in modules
    heavy = {
        "pensa.tracker",
        "pensa.committed.jsonl",
        "pensa.committed.sync",
        "sqlite_utils",
        "rich",
        "yaml",
    }
    assert not heavy & modules


def test_create_loads_no_read_views(repo: Path) -> None:
    """pensa.views is ~0.3 ms of import that `pn create` never uses."""
    modules = loaded(["create", "t", "-t", "bug"], repo)
    assert "pensa.tracker" in modules
    assert "pensa.views" not in modules


@pytest.mark.parametrize(
    "command",
    [
        ["show", "{id}", "--json"],
        ["count", "--json"],
        ["ready"],
        ["close", "{id}"],
        ["create", "t", "--type", "bug", "--priority", "1", "--json"],
        ["list", "--limit", "2", "--status", "open"],
    ],
)
def test_a_command_loads_neither_locale_nor_difflib(repo: Path, pn: Pn, command: list[str]) -> None:
    """click's help and version options translate their text through gettext, whose first
    lookup imports `locale`; pn's own options say it in plain English. (A short option does
    load both: click's parser looks it up as a long one first, and builds the miss as an
    error with spelling suggestions and a translated message; bench/bench_pensa.py's `pn
    create` rows, given `-t`, measure what that costs.)"""
    made = pn("q", "an issue").out.strip()
    modules = loaded([a.format(id=made) for a in command], repo)
    assert not {"locale", "difflib"} & modules


def test_close_loads_neither_the_views_nor_json(repo: Path, pn: Pn) -> None:
    """A close asks the ready rule of the issues it may unblock (`pensa.ready`), not the
    views, and prints no JSON unless asked."""
    made = pn("q", "an issue").out.strip()
    modules = loaded(["close", made], repo)
    assert "pensa.closing" in modules
    assert not {"pensa.views", "json"} & modules


@pytest.mark.parametrize("command", [["show", "{id}", "--json"], ["count", "--json"]])
def test_the_o1_reads_load_no_assignees(repo: Path, pn: Pn, command: list[str]) -> None:
    """The O(1) reads load only what they use: no stuck tasks to count (`status` counts
    them; `count` does not)."""
    made = pn("q", "an issue").out.strip()
    modules = loaded([a.format(id=made) for a in command], repo)
    assert "pensa.shared.assignee" not in modules


COLLECTOR = (
    "import gc, os, sys\n"
    "end = os._exit\n"
    "def ending(code):\n"
    "    print('collector on' if gc.isenabled() else 'collector off', flush=True)\n"
    "    end(code)\n"
    "os._exit = ending\n"
    "sys.argv[1:] = ['count']\n"
    "from {module} import {function}\n"
    "{function}()\n"
)


def test_the_console_script_runs_pn_with_the_garbage_collector_off(repo: Path) -> None:
    """`pn` (the console script) turns the collector off before it imports anything of its
    own (`pensa.program`); `pensa.cli.main`, called as a library, leaves it as it was."""
    (script,) = entry_points(group="console_scripts", name="pn")
    for (module, function), state in (
        (script.value.split(":"), "collector off"),
        (("pensa.cli", "main"), "collector on"),
    ):
        probe = COLLECTOR.format(module=module, function=function)
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=True
        )
        assert done.stdout.splitlines()[-1] == state, done.stdout
