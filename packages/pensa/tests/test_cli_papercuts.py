"""Small things a person meets first: a description from a file or stdin, a delete
that asks on a terminal and names the whole id, dependency arrows that read like the graph."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import PN, Pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

J = Callable[..., Any]


def pn_input(repo: Path, data: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [PN, *args], cwd=repo, env={**os.environ, "PN_ACTOR": "agent-1"},
        input=data, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@pytest.mark.parametrize("command", ["create", "q"])
def test_a_description_comes_from_stdin(repo: Path, pnj: J, command: str) -> None:
    text = "line one\n\n  indented [not markup] \n"
    done = pn_input(repo, text.encode(), command, "from stdin", "--description-file", "-", "--json")
    assert done.returncode == 0, done.stderr
    issue_id = json.loads(done.stdout)["id"]
    assert pnj("show", issue_id)["description"] == text


def test_update_reads_the_description_from_a_file(repo: Path, pnj: J, tmp_path: Path) -> None:
    issue_id = pnj("create", "a task")["id"]
    body = tmp_path / "body.md"
    body.write_text("## Steps\n1. run it\n", encoding="utf-8")
    updated = pnj("update", issue_id, "--description-file", str(body))
    assert updated["description"] == "## Steps\n1. run it\n"


def test_description_and_its_file_together_are_one_usage_error(pn: Pn, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("x")
    done = pn("create", "t", "--description", "y", "--description-file", str(body), "--json")
    assert done.code == 1
    assert "not both" in done.error()["error"]


def test_a_description_file_that_is_not_utf8_is_one_line(repo: Path) -> None:
    done = pn_input(repo, b"\xff\xfe bad", "create", "t", "--description-file", "-")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "not UTF-8" in done.stderr


def on_terminal(repo: Path, answer: bytes, *args: str) -> tuple[int, str]:
    """Run pn with a pseudo-terminal as stdin, stdout and stderr; type `answer` once pn asks."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [PN, *args], cwd=repo, env={**os.environ, "PN_ACTOR": "agent-1", "NO_COLOR": "1"},
        stdin=child, stdout=child, stderr=child, close_fds=True,
    )  # fmt: skip
    os.close(child)
    seen = b""
    deadline = time.monotonic() + 30
    answered = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(main, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and b"[y/N]" in seen:
                os.write(main, answer)
                answered = True
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=30)
    finally:
        os.close(main)
    return code, seen.decode(errors="replace").replace("\r\n", "\n")


def test_delete_on_a_terminal_asks_first_and_no_keeps_it(repo: Path, pnj: J) -> None:
    issue_id = pnj("create", "keep me")["id"]
    code, shown = on_terminal(repo, b"n\n", "delete", issue_id[:7])
    assert code == 1
    assert f'delete {issue_id} "keep me"? [y/N]' in shown  # the whole id, not the prefix typed
    assert f"{issue_id} not deleted" in shown
    assert pnj("show", issue_id)["id"] == issue_id


def test_delete_on_a_terminal_deletes_on_yes_and_prints_the_whole_id(repo: Path, pnj: J) -> None:
    issue_id = pnj("create", "drop me")["id"]
    code, shown = on_terminal(repo, b"y\n", "delete", issue_id[:7])
    assert code == 0, shown
    assert f"deleted {issue_id}\n" in shown
    code, shown = on_terminal(repo, b"", "delete", pnj("create", "and me")["id"][:7], "--yes")
    assert code == 0
    assert "[y/N]" not in shown


def test_delete_piped_does_not_ask_and_prints_the_whole_id(pn: Pn, pnj: J) -> None:
    issue_id = pnj("create", "scripted")["id"]
    done = pn("delete", issue_id[:7])
    assert done.code == 0, done.err
    assert done.out == f"deleted {issue_id}\n"


def test_dep_add_reads_in_the_direction_graph_draws(pn: Pn, pnj: J) -> None:
    parent = pnj("create", "schema")["id"]
    child = pnj("create", "api")["id"]
    added = pn("dep", "add", child, parent)
    assert added.out == f"dep added: {parent} -> {child} ({child} waits for {parent})\n"
    graph = pn("graph", "--format", "dot").out
    assert f'"{parent}" -> "{child}";' in graph
    removed = pn("dep", "remove", child, parent)
    assert removed.out == f"dep removed: {parent} -> {child} ({child} waits for {parent})\n"
