"""The architecture, enforced: imports between the tools run downward only (sgf above ralph
above pensa), and only into the lower tool's published contract modules (`pensa.shared`,
`ralph.shared`), which import nothing above themselves; everything else between the tools goes
through their command lines (sgf runs `ralph` and `pn`, ralph runs `pn`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("pensa", "ralph", "sgf")  # lowest first
# The published contract modules of a tool the ones above it may import, and what those
# modules themselves may import of the tools (their own package, and what is published below).
PUBLISHED = {"pensa": "pensa.shared", "ralph": "ralph.shared"}


def imported_top_levels(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(), filename=str(source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def imported_modules(source: Path, src: Path) -> set[str]:
    """Every module `source` (a file below the source root `src`) imports, under `if
    TYPE_CHECKING:` too, dotted in full: `from a import b` as `a.b`, a relative import
    resolved."""
    tree = ast.parse(source.read_text(), filename=str(source))
    parts = list(source.relative_to(src).with_suffix("").parts)
    here = parts[:-1]  # the package a module (or an `__init__`) sits in
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here[: len(here) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def within(name: str, package: str) -> bool:
    """Whether the dotted `name` is `package` or something in it."""
    return name == package or name.startswith(package + ".")


def crossings(package: str, src: Path) -> list[str]:
    """Each import of `src` (a tool's source) that leaves what the layering allows it."""
    below = TOOLS[: TOOLS.index(package)]
    found = []
    for path in sorted(src.rglob("*.py")):
        dotted = ".".join(path.relative_to(src).with_suffix("").parts)
        published = package in PUBLISHED and within(dotted, PUBLISHED[package])
        for name in sorted(imported_modules(path, src)):
            top = name.split(".")[0]
            if top not in TOOLS:
                continue
            where = f"{path.relative_to(src)} imports {name}"
            if top == package:
                if published and not within(name, PUBLISHED[package]):
                    found.append(f"{where}: a published module imports its tool's internals")
            elif top not in below:
                found.append(f"{where}: upward or sideways")
            elif not within(name, PUBLISHED[top]):
                found.append(f"{where}: not one of {top}'s published modules ({PUBLISHED[top]})")
    return found


@pytest.mark.parametrize("package", TOOLS)
def test_package_imports_run_downward_into_published_modules_only(package: str) -> None:
    assert crossings(package, ROOT / "packages" / package / "src") == []


def test_the_boundary_check_sees_each_kind_of_crossing(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = {
        "ralph/__init__.py": "",
        "ralph/ok.py": "from pensa import shared\nfrom pensa.shared import hardgit\n",
        "ralph/up.py": "import sgf.cli\n",
        "ralph/inner.py": "from pensa.store import Store\n",
        "ralph/shared/__init__.py": "",
        "ralph/shared/leak.py": "from .. import loop\nfrom . import pids\n",
    }
    for relative, text in files.items():
        (src / relative).parent.mkdir(parents=True, exist_ok=True)
        (src / relative).write_text(text)
    assert crossings("ralph", src) == [
        "ralph/inner.py imports pensa.store.Store: not one of pensa's published modules "
        "(pensa.shared)",
        "ralph/shared/leak.py imports ralph.loop: a published module imports its tool's internals",
        "ralph/up.py imports sgf.cli: upward or sideways",
    ]


def git_argv_literals(source: Path) -> list[int]:
    """Line numbers of list/tuple literals whose first element is the string "git"."""
    tree = ast.parse(source.read_text(), filename=str(source))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.List | ast.Tuple)
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "git"
    ]


@pytest.mark.parametrize("package", ["ralph", "sgf"])
def test_every_host_git_command_goes_through_the_hardened_helper(package: str) -> None:
    """Repository configuration is attacker input, so ralph and sgf never spell a git command
    of their own: each runs `HARDENED` (hooks, fsmonitor, pager and ext:: off), which
    pensa.shared.hardgit spells once for all three tools."""
    from pensa.shared import hardgit

    src = ROOT / "packages" / package / "src" / package
    spelled = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(src.rglob("*.py"))
        if "testing" not in path.parts and "inside" not in path.parts  # inside: in the sandbox
        for line in git_argv_literals(path)
    ]
    assert spelled == []
    git = __import__(f"{package}.git", fromlist=["HARDENED"])
    assert git.HARDENED is hardgit.HARDENED
    for flag in (
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "protocol.ext.allow=never",
        "diff.ignoreSubmodules=all",
    ):
        assert flag in hardgit.HARDENED


# Starting, signalling and waiting for processes: only proc.py does it.
PROCESS_MODULES = {"subprocess", "pty"}
PROCESS_CALLS = {
    "fork", "forkpty", "execv", "execve", "execvp", "execvpe", "kill", "killpg", "waitpid",
    "spawnv", "spawnve", "posix_spawn", "posix_spawnp", "system", "popen",
}  # fmt: skip


def process_handling(source: Path) -> list[str]:
    """Where a module imports a process module or calls an os process function."""
    tree = ast.parse(source.read_text(), filename=str(source))
    typing_only = {  # `if TYPE_CHECKING:` imports name types; they start nothing
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: import {a.name}" for a in node.names if a.name in PROCESS_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and node.module in PROCESS_MODULES:
            found.append(f"{node.lineno}: from {node.module} import")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in {"os", "pty"}
            and node.attr in PROCESS_CALLS | {"fork"}
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("package", ["ralph", "sgf"])
def test_only_proc_starts_signals_or_waits_for_processes(package: str) -> None:
    src = ROOT / "packages" / package / "src" / package
    doors = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in sorted(src.rglob("*.py"))
        # ralph/inside/ is the hook program run in the sandbox, as the agent: its own door
        if path.name != "proc.py" and "testing" not in path.parts and "inside" not in path.parts
        for where in process_handling(path)
    ]
    assert doors == []


def test_the_door_check_sees_a_bypass(tmp_path: Path) -> None:
    bypass = tmp_path / "bypass.py"
    bypass.write_text(
        "import os\nimport subprocess\nif TYPE_CHECKING:\n    import pty\n\nos.killpg(1, 15)\n"
    )
    assert process_handling(bypass) == ["2: import subprocess", "6: os.killpg"]


DOCKER_COMMANDS = {"build", "run", "ps", "image", "images", "rm", "rmi", "info", "pull", "import",
                   "inspect", "start", "exec", "create", "container", "version"}  # fmt: skip


def test_only_engine_talks_to_docker_in_sgf() -> None:
    """sgf reaches the Docker engine through the SDK in one module (image/engine.py), never by
    running the `docker` command: ralph needs that command to attach to its containers, sgf
    needs it for nothing."""
    src = ROOT / "packages" / "sgf" / "src" / "sgf"
    importers = sorted(
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if imported_top_levels(path) & {"docker", "requests"}
    )
    assert importers == ["image/engine.py"]
    runners = [
        f"{path.relative_to(src)}:{node.lineno}"
        for path in sorted(src.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.List | ast.Tuple)
        and len(node.elts) > 1
        and all(isinstance(e, ast.Constant) for e in node.elts[:2])
        and node.elts[0].value == "docker"  # type: ignore[attr-defined]
        and node.elts[1].value in DOCKER_COMMANDS  # type: ignore[attr-defined]
    ]
    assert runners == []
