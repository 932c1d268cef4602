"""The three packages' modules stay small and plain: none over 400 lines unless a comment in it
says why it must stay whole (a line starting `# Stays whole:`), no issue numbers and no timing
figures in the source (the git log and `make bench` keep those), no patching of click's private
parser tables."""

from __future__ import annotations

from pathlib import Path

import pensa
import pytest
import ralph
import sgf

LIMIT = 400
SOURCES = [Path(str(package.__file__)).parent for package in (pensa, ralph, sgf)]
ROOT = Path(__file__).parent.parent
# The tests and benchmarks, which cite facts too, never tickets.
TESTS = [
    ROOT / "tests",
    ROOT / "bench",
    *(ROOT / "packages" / p / "tests" for p in ("pensa", "ralph", "sgf")),
]


def oversized(source: Path) -> list[str]:
    return [
        f"{path.relative_to(source)}: {len(lines)} lines"
        for path in sorted(source.rglob("*.py"))
        if len(lines := path.read_text().splitlines()) > LIMIT
        and not any(line.strip().startswith("# Stays whole:") for line in lines)
    ]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_no_module_is_over_the_limit_without_its_reason(source: Path) -> None:
    assert oversized(source) == []


def test_the_check_sees_a_long_module_and_accepts_its_reason(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "whole.py").write_text("# Stays whole: one state machine.\n" + "x = 1\n" * LIMIT)
    assert oversized(tmp_path) == [f"long.py: {LIMIT + 1} lines"]


def lines_matching(pattern: str, sources: list[Path] = SOURCES) -> list[str]:
    import re

    found = re.compile(pattern)
    return [
        f"{path.relative_to(source.parent)}:{number}"
        for source in sources
        for path in sorted(source.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if found.search(line)
    ]


def test_no_issue_numbers_in_the_source() -> None:
    """The git log keeps the history; the source says why, not which ticket."""
    assert lines_matching(r"\b[Ii]ssues? #?\d+\b") == []


def test_no_issue_numbers_in_the_tests() -> None:
    assert lines_matching(r"\b[Ii]ssues? #?\d+\b", TESTS) == []


def test_no_timing_figures_in_comments() -> None:
    """Figures go stale; `make bench` prints them."""
    assert lines_matching(r"#.*\b\d+(\.\d+)? ?(ms|µs|us)\b") == []


def test_no_patching_of_clicks_private_parser() -> None:
    assert lines_matching(r"_long_opt|_short_opt") == []
