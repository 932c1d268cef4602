"""Which projects `sgf top` shows: the current one; with --all, the index's and Docker's."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgf.image import containers
from sgf.image.containers import LabelledLoop
from sgf.loop import loopindex
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


@pytest.mark.process
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


@pytest.fixture
def labelled_containers(base_image: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two running containers of the base image labelled as loops of projects under tmp_path,
    and one without a loop id; all removed afterwards."""
    made: list[str] = []
    rows = [
        {"springfield.project": f"{tmp_path}/p", "springfield.loop-id": "build-1",
         "springfield.ralph-pid": "42", "springfield.ralph-start": "99"},
        {"springfield.project": f"{tmp_path}/q", "springfield.loop-id": "verify-2"},
        {"springfield.project": f"{tmp_path}/r"},
    ]  # fmt: skip
    for labels in rows:
        flags = [x for k, v in labels.items() for x in ("--label", f"{k}={v}")]
        done = subprocess.run(
            ["docker", "run", "-d", "--rm", *flags, base_image, "sleep", "300"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        made.append(done.stdout.strip())
    yield made
    subprocess.run(["docker", "rm", "-f", *made], capture_output=True, check=False)


@pytest.mark.docker
def test_labelled_loops_reads_the_containers_labels(
    tmp_path: Path, labelled_containers: list[str]
) -> None:
    found = [c for c in containers.labelled_loops(dict(os.environ)) if str(tmp_path) in c.project]
    assert sorted(found, key=lambda c: c.loop_id) == [
        LabelledLoop(f"{tmp_path}/p", "build-1", 42, 99),
        LabelledLoop(f"{tmp_path}/q", "verify-2", None, None),
    ]


def test_labelled_loops_is_empty_without_an_engine(tmp_path: Path) -> None:
    assert containers.labelled_loops({"DOCKER_HOST": f"unix://{tmp_path}/no.sock"}) == []
    assert containers.labelled_loops({"DOCKER_HOST": "tcp://127.0.0.1:1"}) == []
