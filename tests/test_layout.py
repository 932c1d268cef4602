"""The three packages' modules stay small and plain: none over 400 lines unless a comment in it
says why it must stay whole (a line starting `# Stays whole:`), no issue numbers and no timing
figures in the source (the git log and `make bench` keep those), no patching of click's private
parser tables."""

from __future__ import annotations

import ast
from collections.abc import Mapping
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


# The tests mirror the source: `packages/P/tests/[SUB/]test_NAME.py` (or `test_NAME_WHAT.py`)
# tests the module or sub-package NAME of P's source [in its sub-package SUB], so a reader finds
# a module's tests by its name. These test files test no one module; each says what instead.
CROSS_CUTTING = {
    "pensa": {
        "test_bad_input.py": "every bad byte, file or disk, through every command",
        "test_docs.py": "docs/pensa.md and `pn prime` against the whole CLI",
        "test_properties.py": "invariants of the tracker, graph, views and files together",
        "test_startup.py": "what each hot command imports, across the package",
    },
    "ralph": {
        "test_docs.py": "docs/ralph.md against the whole CLI",
        "test_startup.py": "what ralph imports to start, across the package",
    },
    "sgf": {
        "test_views_agree.py": "every view of one loop (status, watch, top, the log) agrees",
    },
}


def is_module(folder: Path, name: str) -> bool:
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def unmirrored(tests: Path, source: Path, cross_cutting: Mapping[str, str]) -> list[str]:
    """Test files under `tests` that name no module or sub-package where they sit in `source`
    (a sub-folder of `tests` stands for the sub-package of that name), and tests of a
    sub-package that has a test folder of its own but sit outside it."""
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests)
        if relative.as_posix() in cross_cutting:
            continue
        folder = source.joinpath(*relative.parent.parts)
        words = path.stem.removeprefix("test_").split("_")
        names = ["_".join(words[:count]) for count in range(1, len(words) + 1)]
        found = [name for name in names if is_module(folder, name)]
        where = f"{source.name}/{relative.parent.as_posix()}/".replace("/./", "/")
        if not (folder / "__init__.py").is_file():
            wrong.append(f"{relative}: {where} is no sub-package of the source")
        elif not found:
            wrong.append(f"{relative}: no module {' or '.join(names)} in {where}")
        elif path.stem != f"test_{found[-1]}" and any(
            (tests / relative.parent / found[-1]).glob("test_*.py")
        ):
            wrong.append(f"{relative}: belongs in {relative.parent / found[-1]}/ with its fellows")
    return wrong


@pytest.mark.parametrize("package", ["pensa", "ralph", "sgf"])
def test_each_test_file_is_named_after_the_module_it_tests(package: str) -> None:
    tests = ROOT / "packages" / package / "tests"
    source = ROOT / "packages" / package / "src" / package
    wrong = unmirrored(tests, source, CROSS_CUTTING[package])
    assert not wrong, (
        "rename (git mv) each test file after the module it tests, in the test folder of its "
        "sub-package, or add it to CROSS_CUTTING with why:\n" + "\n".join(wrong)
    )


def test_the_mirror_check_sees_a_stale_name_a_stray_and_a_wrong_folder(tmp_path: Path) -> None:
    source, tests = tmp_path / "src" / "pkg", tmp_path / "tests"
    for module in ("__init__", "store", "claude_home", "inner/__init__", "inner/merge"):
        (source / f"{module}.py").parent.mkdir(parents=True, exist_ok=True)
        (source / f"{module}.py").touch()
    for test in (
        "test_store.py",  # a module
        "test_store_locks.py",  # a module, one aspect of it
        "test_claude_home.py",  # a module whose name has an underscore
        "test_inner.py",  # the sub-package as a whole
        "test_docs.py",  # cross-cutting, allowed
        "test_opening.py",  # stale: no module `opening`
        "test_inner_merge.py",  # a sub-package's test outside its folder
        "inner/test_merge.py",  # in its sub-package's folder
        "inner/test_store.py",  # `store` is not in `inner`
        "other/test_store.py",  # no sub-package `other`
        "helpers/fake.py",  # not a test module
    ):
        (tests / test).parent.mkdir(parents=True, exist_ok=True)
        (tests / test).touch()
    assert unmirrored(tests, source, {"test_docs.py": "why"}) == [
        "inner/test_store.py: no module store in pkg/inner/",
        "other/test_store.py: pkg/other/ is no sub-package of the source",
        "test_inner_merge.py: belongs in inner/ with its fellows",
        "test_opening.py: no module opening in pkg/",
    ]


def imports_of_test_modules(trees: list[Path], root: Path = ROOT) -> list[str]:
    """Every import, in any file of the test trees, of a module named `test_*`: a test module
    shares nothing with another; helpers live in conftest.py or a helper module."""
    found = []
    for tree in trees:
        for path in sorted(tree.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    module = "." * node.level + (node.module or "")
                    names = [module] + [f"{module}.{alias.name}" for alias in node.names]
                else:
                    continue
                if any(part.startswith("test_") for name in names for part in name.split(".")):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


TEST_TREES = [ROOT / "tests", *(ROOT / "packages" / p / "tests" for p in ("pensa", "ralph", "sgf"))]


def test_no_test_module_imports_another() -> None:
    found = imports_of_test_modules(TEST_TREES)
    assert not found, (
        "a test module imports another: move what they share into the tree's conftest.py (a "
        "fixture or a plain helper) or a helper module not named test_*:\n" + "\n".join(found)
    )


def test_the_import_check_sees_every_form_of_importing_a_test_module(tmp_path: Path) -> None:
    tree = tmp_path / "tests"
    (tree / "sub").mkdir(parents=True)
    (tree / "test_a.py").write_text(
        "from .conftest import Pn\n"
        "from .fixtures.helpers import make\n"
        "from .test_b import helper\n"
        "from . import test_b\n"
        "import tests.test_b\n"
        "def late():\n"
        "    from tests.test_b import helper\n"
    )
    (tree / "sub" / "test_c.py").write_text("from ..conftest import Pn\nfrom ..test_a import x\n")
    assert imports_of_test_modules([tree], tmp_path) == [
        "tests/sub/test_c.py:2",
        "tests/test_a.py:3",
        "tests/test_a.py:4",
        "tests/test_a.py:5",
        "tests/test_a.py:7",
    ]
