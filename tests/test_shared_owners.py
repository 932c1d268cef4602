"""Each rule the tools share has exactly one owner: a published contract module of the lowest
tool that needs it (`pensa.shared` for all three, `ralph.shared` for ralph and sgf), which the
tools above import. Two copies of a security rule are two rules; a copy that reappears in any
module, or a tool that stops going through the owner, fails here."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import pytest
from pensa import errors as pensa_errors
from pensa import safefile as pensa_safefile
from pensa.shared.safefile import SafeFiles
from ralph import errors as ralph_errors
from ralph import safefile as ralph_safefile
from ralph.shared.failure import ProgramFailed
from sgf import errors as sgf_errors
from sgf import safefile as sgf_safefile

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "packages" / tool / "src" for tool in ("pensa", "ralph", "sgf")]
# The names a shared rule is made of, each with the one module (below packages/) that may
# define it: a function, a class or a constant. Importing one is using it, not defining it.
OWNERS = {
    "SafeFiles": "pensa/src/pensa/shared/safefile.py",  # the link-refusing writer
    "report": "pensa/src/pensa/shared/crash.py",  # the crash report
    "crash_dir": "pensa/src/pensa/shared/crash.py",
    "undecodable": "pensa/src/pensa/shared/console.py",  # argv that is not UTF-8
    "inert": "pensa/src/pensa/shared/inert.py",  # hostile text made harmless for a terminal
    "_BIDI": "pensa/src/pensa/shared/inert.py",
    "HARDENED": "pensa/src/pensa/shared/hardgit.py",  # the hardened git argv
    "SUBMODULE_SAFETY": "pensa/src/pensa/shared/hardgit.py",
    "start_time": "ralph/src/ralph/shared/pids.py",  # a process named for good
    "ProgramFailed": "ralph/src/ralph/shared/failure.py",  # a failed command, reported
}
# The open flags that create or write a file: only the one writer may pass them to os.open.
WRITING_FLAGS = {"O_CREAT", "O_EXCL", "O_APPEND", "O_TRUNC"}
WRITER = "pensa/src/pensa/shared/safefile.py"


def definitions(path: Path) -> set[str]:
    """The names `path` defines: functions and classes anywhere, and constants assigned at
    module level (an alias of another name, `x = y.z`, defines nothing)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and not isinstance(
            node.value, ast.Name | ast.Attribute
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def writing_flags(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in WRITING_FLAGS
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    }


def sources(roots: list[Path]) -> list[tuple[str, Path]]:
    return [(str(p.relative_to(r.parents[1])), p) for r in roots for p in sorted(r.rglob("*.py"))]


def copies(roots: list[Path]) -> list[str]:
    """Every definition of an owned name outside its owner, and every writing flag outside
    the one writer."""
    found = []
    for shown, path in sources(roots):
        found += [
            f"{shown} defines {name} (owned by {OWNERS[name]})"
            for name in sorted(definitions(path) & OWNERS.keys())
            if shown != OWNERS[name]
        ]
        if shown != WRITER:
            found += [f"{shown} opens with os.{flag}" for flag in sorted(writing_flags(path))]
    return found


def test_every_shared_rule_is_defined_once_by_its_owner() -> None:
    assert copies(SOURCES) == []
    owners = {path for _shown, path in sources(SOURCES)}
    assert {ROOT / "packages" / p for p in OWNERS.values()} <= owners


def test_the_copy_check_sees_a_copy_and_a_second_writer(tmp_path: Path) -> None:
    src = tmp_path / "packages" / "sgf" / "src"
    (src / "sgf").mkdir(parents=True)
    (src / "sgf" / "text.py").write_text(
        "import os\n_BIDI = (0x202A,)\ninert = os.path\n\ndef inert(text):\n    return text\n"
    )
    (src / "sgf" / "log.py").write_text("import os\nFLAGS = os.O_WRONLY | os.O_APPEND\n")
    assert copies([src]) == [
        "sgf/src/sgf/log.py opens with os.O_APPEND",
        "sgf/src/sgf/text.py defines _BIDI (owned by pensa/src/pensa/shared/inert.py)",
        "sgf/src/sgf/text.py defines inert (owned by pensa/src/pensa/shared/inert.py)",
    ]


@pytest.mark.parametrize(
    ("files", "refusal"),
    [
        (pensa_safefile.FILES, pensa_errors.UnsafePath),
        (ralph_safefile.FILES, ralph_errors.LinkRefused),
        (sgf_safefile.FILES, sgf_errors.PathRefused),
    ],
    ids=["pensa", "ralph", "sgf"],
)
def test_each_tool_writes_through_the_one_writer_in_its_own_words(
    files: SafeFiles, refusal: type[Exception], tmp_path: Path
) -> None:
    assert type(files) is SafeFiles
    refuse: object = files.refuse
    assert refuse is refusal
    (tmp_path / "target").symlink_to(tmp_path / "victim")
    with pytest.raises(refusal, match="is a symbolic link"):
        files.replace(tmp_path / "target", b"x")
    assert not (tmp_path / "victim").exists()


@pytest.mark.parametrize(
    ("errors", "family"), [(ralph_errors, "RalphError"), (sgf_errors, "SgfError")]
)
def test_a_failed_command_is_reported_alike_as_each_tools_own_error(
    errors: ModuleType, family: str
) -> None:
    failed = errors.CommandFailed
    assert issubclass(failed, ProgramFailed)
    assert issubclass(failed, getattr(errors, family))
    assert failed.code == "command_failed"
