"""Which projects `sgf top` shows: the current one; with --all, the index's and Docker's."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from sgf import containers, loopindex
from sgf.containers import LabelledLoop
from sgf.top import discovery


def make_project(path: Path) -> Path:
    (path / ".sgf").mkdir(parents=True)
    return path


def test_without_all_only_the_current_project(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    here = make_project(tmp_path / "here")
    other = make_project(tmp_path / "other")
    with loopindex.registered(other, "build-1", os.getpid(), started_at="t", env=env):
        assert discovery.projects(here, all_projects=False, env=env) == [here]


def test_all_adds_the_indexed_and_labelled_projects_once(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    here, a, b, c = (make_project(tmp_path / n) for n in ("here", "a", "b", "c"))
    gone = tmp_path / "deleted"  # an entry whose project was removed since
    containers = [LabelledLoop(str(c), "verify-1", None, None), LabelledLoop("rel", "x", 1, 1)]
    with (
        loopindex.registered(b, "build-1", os.getpid(), started_at="t1", env=env),
        loopindex.registered(a, "build-2", os.getpid(), started_at="t2", env=env),
        loopindex.registered(here, "build-3", os.getpid(), started_at="t3", env=env),
        loopindex.registered(gone, "build-4", os.getpid(), started_at="t4", env=env),
    ):
        found = discovery.projects(here, all_projects=True, env=env, containers=containers)
    assert found == [here, a, b, c]


def test_a_dead_loops_entry_still_finds_its_project_whose_files_tell_the_truth(
    tmp_path: Path, dead_pid: int
) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    a = make_project(tmp_path / "a")
    folder = loopindex.directory(env)
    folder.mkdir(parents=True, mode=0o700)
    folder.parent.chmod(0o700)
    entry = {"project": str(a), "loop_id": "b-1", "pid": dead_pid, "process_start": 1}
    (folder / "e.json").write_text(json.dumps({**entry, "started_at": "t"}))
    assert discovery.projects(None, all_projects=True, env=env) == [a]


def fake_docker(tmp_path: Path, output: str, code: int = 0) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({output!r})\n")
    script.write_text(script.read_text() + f"sys.exit({code})\n")
    script.chmod(0o755)
    return {"PATH": str(bin_dir)}


def test_labelled_loops_reads_the_containers_labels(tmp_path: Path) -> None:
    env = fake_docker(tmp_path, "/p\tbuild-1\t42\t99\n/q\tverify-2\t\t\n\tno-project\t1\t1\n")
    assert containers.labelled_loops(env) == [
        LabelledLoop("/p", "build-1", 42, 99),
        LabelledLoop("/q", "verify-2", None, None),
    ]


def test_labelled_loops_is_empty_without_an_engine(tmp_path: Path) -> None:
    assert containers.labelled_loops(fake_docker(tmp_path, "", code=1)) == []
    assert containers.labelled_loops({"PATH": str(tmp_path / "nothing")}) == []
