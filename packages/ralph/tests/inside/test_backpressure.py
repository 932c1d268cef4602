"""Which commands run the stack's checks, and whether they passed (inside/backpressure.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.inside import backpressure


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (".venv/bin/pytest -q -x", ("pytest",)),
        ("python3 -m pytest tests", ("pytest",)),
        ("python3.11 -m unittest -v", ("unittest",)),
        ("python3 -m ruff check .", ("ruff", "check")),
        ("cargo +nightly test -p core", ("cargo", "test")),
        ("npm run build -- --watch", ("npm", "run", "build")),
        ("npx vitest run", ("npx", "vitest")),
        ("python3 greet.py", None),
        ("test -z x", None),
    ],
)
def test_a_signature_is_what_a_command_does(words: str, expected: tuple[str, ...] | None) -> None:
    assert backpressure.signature(words.split()) == expected


def test_checks_are_found_inside_a_command_line(tmp_path: Path) -> None:
    line = "cd src && python3 -m py_compile *.py && python3 -m unittest -v 2>&1 | tail -4"
    assert backpressure.checks_in(line, tmp_path) == [
        "python3 -m py_compile *.py",
        "python3 -m unittest -v",
    ]
    assert backpressure.checks_in("echo 'pytest", tmp_path) == []  # unreadable: no check
    assert backpressure.checks_in("git commit -m 'run pytest'", tmp_path) == []


def test_the_projects_own_list_adds_its_commands(tmp_path: Path) -> None:
    listing = tmp_path / backpressure.LISTED
    listing.parent.mkdir()
    listing.write_text(
        "| Lint | `run-silent lint -- ./lint.sh --strict` |\n"
        '| Format | `run-silent format -- gofmt -w .` (then `test -z "$(gofmt -l .)"`) |\n'
    )
    assert backpressure.listed_checks(listing) == {("lint.sh",), ("gofmt",)}
    assert backpressure.checks_in("./lint.sh", tmp_path) == ["./lint.sh"]
    assert backpressure.checks_in("test -z x", tmp_path) == []


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ("Ran 2 tests in 0.001s\n\nOK", True),
        ("12 passed in 0.3s", True),
        ("\u2713 test", True),
        ("Ran 2 tests\n\nFAILED (failures=1)", False),
        ("===== 1 failed, 3 passed in 0.2s =====", False),
        ("test result: FAILED. 1 passed; 1 failed", False),
        ("--- FAIL: TestX (0.00s)\nFAIL\tpkg\t0.01s", False),
        ("\u2717 test (exit 1)", False),
        ("src/a.ts(3,1): error TS2304: Cannot find name 'x'.", False),
    ],
)
def test_a_failure_summary_in_the_output_is_no_pass(output: str, passed: bool) -> None:
    assert backpressure.passed(output) is passed
