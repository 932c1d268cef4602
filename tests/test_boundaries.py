"""The architecture, enforced: no package imports another; sgf calls pn and ralph as programs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "pensa": {"ralph", "sgf"},
    "ralph": {"pensa", "sgf"},
    "sgf": {"pensa", "ralph"},
}


def imported_top_levels(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(), filename=str(source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_stay_inside_their_boundary(package: str) -> None:
    crossings = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "packages" / package / "src").rglob("*.py"))
        for name in imported_top_levels(path) & FORBIDDEN[package]
    ]
    assert crossings == []


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
    """Repository configuration is attacker input, so ralph and sgf spell the git
    command once, as git.HARDENED (hooks, fsmonitor, pager and ext:: off), and nowhere else."""
    src = ROOT / "packages" / package / "src" / package
    spelled = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(src.rglob("*.py"))
        if "testing" not in path.parts and "inside" not in path.parts  # inside: in the sandbox
        for line in git_argv_literals(path)
    }
    tree = ast.parse((src / "git.py").read_text())
    [hardened] = [
        node.value.lineno
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "HARDENED" for t in node.targets)
    ]
    assert spelled == {f"packages/{package}/src/{package}/git.py:{hardened}"}
    text = (src / "git.py").read_text()
    for flag in (
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "protocol.ext.allow=never",
        "diff.ignoreSubmodules=all",
    ):
        assert flag in text


def test_ralph_and_sgf_harden_git_alike() -> None:
    """The hardened git is one security rule with two spellings (ralph never imports sgf, sgf
    talks to ralph through its command line): they must never drift apart."""
    from ralph import git as ralph_git
    from sgf import git as sgf_git

    assert ralph_git.HARDENED == sgf_git.HARDENED


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
