"""The check agent's verdict file is agent-written data: taken as data or not at all
(check/verdict.py)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from ralph.check import verdict
from ralph.check.verdict import Evidence, Fix, Judgement, Verdict, VerdictRefused


def test_a_full_verdict_is_read_as_written() -> None:
    data = {
        "verdict": "PARTIAL",
        "summary": " half of it ",
        "findings": ["the login works", "no test for the empty password"],
        "fixes": [{"title": "test the empty password", "description": "tests/test_login.py"}],
    }
    judged = verdict.parse(json.dumps(data).encode())
    assert judged == Judgement(
        Verdict.PARTIAL,
        "half of it",
        ("the login works", "no test for the empty password"),
        (Fix("test the empty password", "tests/test_login.py"),),
    )
    assert judged.as_json()["verdict"] == "PARTIAL"


def test_the_verdict_alone_is_enough() -> None:
    assert verdict.parse(b'{"verdict": "PASS"}') == Judgement(Verdict.PASS)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "not a JSON object"),
        (b'{"verdict": "PASS", ', "not a JSON object"),
        (b'["PASS"]', "not a JSON object"),
        (b'"PASS"', "not a JSON object"),
        (b"\xff\xfe{}", "not a JSON object"),
        (b'{"verdict": "PASS", "verdict": "FAIL"}', "a key appears twice"),
        (b'{"verdict": "PASS", "score": NaN}', "NaN is not JSON"),
        (b'{"verdict": "PASS", "approved": true}', "unknown keys: approved"),
        (b'{"verdict": "pass"}', "not PASS, PARTIAL or FAIL"),
        (b'{"verdict": "OK"}', "not PASS, PARTIAL or FAIL"),
        (b'{"verdict": ["PASS"]}', "not PASS, PARTIAL or FAIL"),
        (b'{"summary": "fine"}', "not PASS, PARTIAL or FAIL"),
        (b'{"verdict": "PASS", "summary": 3}', "summary is not a string"),
        (b'{"verdict": "PASS", "summary": "a\\u001b[2Jb"}', "control characters"),
        (b'{"verdict": "PASS", "findings": "all good"}', "findings is not a list"),
        (b'{"verdict": "PASS", "findings": [1]}', "finding is not a string"),
        (b'{"verdict": "FAIL", "fixes": [{"title": ""}]}', "has no title"),
        (b'{"verdict": "FAIL", "fixes": [{"title": "a\\nb"}]}', "control characters"),
        (b'{"verdict": "FAIL", "fixes": [{"title": "t", "owner": "me"}]}', "not {title"),
        (b'{"verdict": "FAIL", "fixes": ["t"]}', "not {title"),
        (b"[" * 100_000 + b"]" * 100_000, "not a JSON object"),
    ],
)
def test_anything_but_the_exact_schema_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(VerdictRefused, match=why):
        verdict.parse(data)


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("summary", "x" * (verdict.MAX_SUMMARY + 1), "summary is over"),
        ("findings", ["f"] * (verdict.MAX_FINDINGS + 1), "over 30 findings"),
        ("findings", ["x" * (verdict.MAX_FINDING + 1)], "finding is over"),
        ("fixes", [{"title": "t"}] * (verdict.MAX_FIXES + 1), "over 5 fixes"),
    ],
)
def test_sizes_are_bounded(field: str, value: object, why: str) -> None:
    with pytest.raises(VerdictRefused, match=why):
        verdict.parse(json.dumps({"verdict": "PASS", field: value}).encode())


def test_a_plain_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    path.write_text('{"verdict": "FAIL", "summary": "no"}')
    assert verdict.read(path) == Judgement(Verdict.FAIL, "no")


def test_no_file_is_no_verdict(tmp_path: Path) -> None:
    with pytest.raises(VerdictRefused, match="wrote no verdict file"):
        verdict.read(tmp_path / "verdict.json")


def test_a_link_is_never_followed(tmp_path: Path) -> None:
    """A link to a file of the host's that holds a PASS is no PASS: the host never reads
    through a link the agent planted."""
    elsewhere = tmp_path / "host-file.json"
    elsewhere.write_text('{"verdict": "PASS"}')
    path = tmp_path / "verdict.json"
    path.symlink_to(elsewhere)
    with pytest.raises(VerdictRefused, match="symbolic link"):
        verdict.read(path)


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """A named pipe with no writer would block a plain open for ever."""
    path = tmp_path / "verdict.json"
    os.mkfifo(path)
    refused: list[str] = []
    reader = threading.Thread(target=lambda: refused.append(_refusal(path)), daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert refused == ["the verdict file is not a plain file: not read"]


def _refusal(path: Path) -> str:
    try:
        verdict.read(path)
    except VerdictRefused as e:
        return str(e)
    return "read"


def test_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "verdict.json").mkdir()
    with pytest.raises(VerdictRefused, match="not a plain file"):
        verdict.read(tmp_path / "verdict.json")


def test_a_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    with path.open("wb") as f:  # a sparse file of a terabyte: its size alone refuses it
        f.truncate(2**40)
    with pytest.raises(VerdictRefused, match="over 65536"):
        verdict.read(path)


def test_a_file_at_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    body = b'{"verdict": "PASS"}'
    path.write_bytes(body + b" " * (verdict.MAX_BYTES - len(body)))
    assert verdict.read(path).verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], None),
        ([0], Verdict.PASS),
        ([0, 0], Verdict.PASS),
        ([0, 1], Verdict.PARTIAL),
        ([1, None], Verdict.FAIL),
        ([None], Verdict.FAIL),
    ],
)
def test_the_commands_verdict(statuses: list[int | None], expected: Verdict | None) -> None:
    evidence = [Evidence(f"cmd {i}", s, "") for i, s in enumerate(statuses)]
    assert verdict.of_commands(evidence) is expected


def test_the_strictest_verdict_wins() -> None:
    assert verdict.worst([]) is None
    assert verdict.worst([None, Verdict.PASS]) is Verdict.PASS
    assert verdict.worst([Verdict.PASS, Verdict.PARTIAL]) is Verdict.PARTIAL
    assert verdict.worst([Verdict.FAIL, Verdict.PARTIAL, Verdict.PASS]) is Verdict.FAIL
