"""A hostile agent in real Docker plants links and FIFOs where ralph reads or writes on the
host (its workspace's sentinels, the outbox its commits cross through): nothing is read or
written through them, nothing hangs.

Each test puts a victim outside the project, lets the fake agent point a link at it from
inside the container (a link's target need not exist where it is made), and proves the
victim is untouched after ralph's host-side reads and writes (docs/security.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Script, run_ralph

pytestmark = pytest.mark.docker

PRECIOUS = "precious, outside the project\n"


def test_the_run_record_is_out_of_the_agents_reach(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str, victim: Path
) -> None:
    """The project is not in the container: a link "at" the record lands in the agent's own
    repository, and ralph keeps appending to the real record."""
    record = project / "records" / "run.jsonl"
    steps = [["sh", f"mkdir -p {record.parent} && ln -sf {victim} {record}"], ["result"]]
    done = run_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, "--record", str(record), "2",
        script(default=steps),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sh rc=0" in done.stdout  # the agent did plant its link, in its own repository
    assert victim.read_text() == PRECIOUS
    assert not record.is_symlink()
    assert record.read_text().count('"event": "iteration"') == 2


def test_a_sentinel_behind_a_linked_folder_is_not_deleted(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str, victim: Path
) -> None:
    """The sentinel glob goes two folders deep and follows links: `escape/.ralph-complete`
    would delete the `.ralph-complete` in whatever folder the agent's link names."""
    theirs = victim.parent / ".ralph-complete"
    theirs.write_text("")  # empty: a sentinel any loop would take as its own
    steps = [
        ["sh", f"mkdir sub && ln -s {victim.parent} escape && ln -s {victim.parent} sub/deeper"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = run_ralph(project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sh rc=0" in done.stdout
    assert "ralph complete after 1 iteration(s)" in done.stdout
    assert theirs.exists()
    assert victim.read_text() == PRECIOUS


def test_a_fifo_planted_as_a_sentinel_does_not_hang_the_loop(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    steps = [
        ["sh", "mkdir -p sub && mkfifo sub/.ralph-complete"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = run_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps), timeout=90
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph complete after 1 iteration(s)" in done.stdout


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_a_bundle_planted_in_the_outbox_is_refused_without_reading_through_it(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    victim: Path,
    plant: str,
) -> None:
    """The agent plants the outbox's bundle (a FIFO nobody writes, or a link to a file of
    the user's), claims the export ran, and keeps ralph's own export from replacing them."""
    made = {
        "fifo": "mkfifo /ralph/out/workspace.bundle",
        "link": f"ln -s {victim} /ralph/out/workspace.bundle",
    }
    steps = [
        ["commit", "work.txt", "feat: the agent's work"],
        ["sh", f"{made[plant]} && touch /ralph/out/exported && chmod 555 /ralph/out"],
        ["result"],
    ]
    done = run_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps), timeout=90
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "workspace.bundle is not a plain file" in done.stderr or (
        "workspace.bundle cannot be opened as a plain file" in done.stderr
    )
    assert "Iteration 2" not in done.stdout
    assert victim.read_text() == PRECIOUS
