"""Reading JSONL: the short paths (a whole file at once, checks row by row) accept exactly
what the line-by-line checks accept, with the same records and the same first error."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pensa.committed.records import (
    CONFLICT_MARKERS,
    FIELDS,
    MAX_DEPTH,
    MAX_LINE_BYTES,
    REQUIRED,
    TIME_FIELDS,
    Record,
    _depth_ok,
    _no_surrogates,
    parse_file,
    read_table,
)
from pensa.errors import InvalidArgument, InvalidData
from pensa.models import LIST_FIELDS, IssueType, Priority, Status, parse_timestamp

# --- the oracle: the line-by-line reading as it was before any short path -----------------


def oracle_line(raw: bytes, where: str) -> Record | None:
    if len(raw) > MAX_LINE_BYTES:
        raise InvalidData(f"{where}: line longer than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidData(f"{where}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    if not text.strip():
        return None
    if text.startswith(CONFLICT_MARKERS):
        raise InvalidData(f"{where}: git merge conflict marker; resolve the conflict first")
    if not _depth_ok(text):
        raise InvalidData(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidData(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from e
    except ValueError as e:
        raise InvalidData(f"{where}: not valid JSON ({e})") from e
    if not isinstance(record, dict):
        raise InvalidData(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "\\u" in text and not _no_surrogates(record):
        raise InvalidData(f"{where}: a string holds a lone surrogate (not valid Unicode)")
    return record


def oracle_check(record: Record, name: str, where: str) -> None:
    fields, required = FIELDS[name], REQUIRED[name]
    missing = [k for k in required if k not in record]
    if missing:
        raise InvalidData(f"{where}: missing field(s) {', '.join(missing)}")
    for key in fields:
        value = record.get(key)
        if value is None:
            if key in required:
                raise InvalidData(f"{where}: field {key} must be a non-empty string")
            continue
        if key in LIST_FIELDS:
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise InvalidData(f"{where}: field {key} must be an array of non-empty strings")
            continue
        if not isinstance(value, str) or (key in required and not value):
            raise InvalidData(f"{where}: field {key} must be a non-empty string")
        if key in TIME_FIELDS:
            try:
                parse_timestamp(value)
            except ValueError as e:
                raise InvalidData(f"{where}: {key} is not an RFC 3339 time: {value!r}") from e
    if name == "issues.jsonl":
        for key, vocab in (("issue_type", IssueType), ("status", Status), ("priority", Priority)):
            try:
                vocab.parse(record[key], exact=True)
            except InvalidArgument as e:
                raise InvalidData(f"{where}: {e}") from e


def oracle_file(data: bytes, name: str) -> list[tuple[int, Record]]:
    out = []
    for number, raw in enumerate(data.splitlines(), start=1):
        where = f"{name}:{number}"
        record = oracle_line(raw, where)
        if record is not None:
            oracle_check(record, name, where)
            out.append((number, record))
    return out


def outcome(read: Callable[[bytes, str], Any], data: bytes, name: str) -> tuple[str, Any]:
    """What reading gave: the records, or the error (its message when it is ours)."""
    try:
        return "records", read(data, name)
    except InvalidData as e:
        return "error", str(e)
    except Exception as e:  # the oracle's own crashes (a null vocabulary word) must match too
        return "crash", type(e).__name__


def assert_reads_like_the_oracle(data: bytes, name: str) -> None:
    expected = outcome(oracle_file, data, name)
    assert outcome(parse_file, data, name) == expected
    table = outcome(read_table, data, name)
    if expected[0] != "records":
        assert table == expected
        return
    numbers, records, rows = table[1]
    assert list(zip(numbers, records, strict=True)) == expected[1]
    assert rows == [tuple(r.get(k) for k in FIELDS[name]) for r in records]


# --- lines, good and bad ---------------------------------------------------------------

STAMP = "2026-01-02T03:04:05.000006Z"
WORDS = st.sampled_from(["a", "b c", "ü ✓", 'q"uote', "back\\slash", "tab\there", "\x7f", ""])
TIMES = st.sampled_from([STAMP, "2026-01-02T03:04:05Z", "2026-13-02T03:04:05Z", "yesterday", ""])
ODD = st.sampled_from([None, 1, 1.5, True, [], ["x"], [""], [1], {}, {"k": "v"}, "", "x"])


def issue(draw: st.DrawFn) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": draw(st.sampled_from(["pn-1", "pn-2", "pn-3"])),
        "title": draw(WORDS),
        "issue_type": draw(st.sampled_from(["bug", "task", "test", "chore", "Bug", "feature"])),
        "status": draw(st.sampled_from(["open", "in_progress", "closed", "done"])),
        "priority": draw(st.sampled_from(["p0", "p1", "p2", "p3", "P1", "1"])),
        "created_at": draw(TIMES),
        "updated_at": STAMP,
    }
    for key in ("description", "spec", "fixes", "assignee", "closed_at", "close_reason"):
        if draw(st.booleans()):
            record[key] = draw(TIMES if key == "closed_at" else WORDS)
    if draw(st.booleans()):
        record["labels"] = draw(st.lists(WORDS, max_size=3))
    return record


@st.composite
def records(draw: st.DrawFn, name: str) -> dict[str, Any]:
    if name == "issues.jsonl":
        record = issue(draw)
    else:
        record = {key: draw(TIMES if key in TIME_FIELDS else WORDS) for key in FIELDS[name]}
    for _ in range(draw(st.integers(0, 2))):  # a field set to something odd, or dropped
        key = draw(st.sampled_from(FIELDS[name]))
        if draw(st.booleans()):
            record.pop(key, None)
        else:
            record[key] = draw(ODD)
    if draw(st.booleans()):  # an unknown field rides along, whatever it holds
        record[draw(st.sampled_from(["zz", "extra", "a"]))] = draw(ODD)
    return record


@st.composite
def lines(draw: st.DrawFn, name: str) -> bytes:
    record = draw(records(name))
    how = draw(st.sampled_from(["plain", "plain", "plain", "ascii", "spaced", "odd"]))
    if how == "ascii":  # \u escapes
        return json.dumps(record).encode()
    if how == "spaced":
        return (" " + json.dumps(record, ensure_ascii=False) + " ").encode()
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    if how == "plain":
        return text.encode()
    return draw(
        st.sampled_from(
            [
                b"",
                b"   ",
                b"<<<<<<< HEAD",
                b"[1, 2]",
                b'"text"',
                b"{not json",
                b"\xef\xbb\xbf" + text.encode(),  # a byte order mark
                text.encode() + b" x",
                text.encode() + text.encode(),  # two objects on one line
                text.encode()[:-1],  # cut short
                b"\xff" + text.encode(),
                text.encode().replace(b'":"', b'": "', 1),
                text.encode().replace(b"{", b'{"title":"first","title":"second",', 1),
                text.encode().replace(b"}", b',"deep":' + b"[" * 70 + b"]" * 70 + b"}"),
                text.encode().replace(b"}", b',"n":' + b"9" * 5000 + b"}"),
                text.encode().replace(b"}", b',"s":"\\ud800"}'),
                text.encode().replace(b"}", b',"v":NaN}'),
                b'{"a":\n1}',
            ]
        )
    )


@st.composite
def files(draw: st.DrawFn, name: str) -> bytes:
    body = draw(st.lists(lines(name), max_size=6))
    newline = draw(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]))
    return newline.join(body) + (newline if draw(st.booleans()) else b"")


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_every_file_reads_as_line_by_line_checks_read_it(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(FIELDS)))
    assert_reads_like_the_oracle(data.draw(files(name)), name)


# --- the cases, one by one ----------------------------------------------------------------

GOOD = (
    '{"id":"pn-1","title":"t","issue_type":"task","status":"open","priority":"p2",'
    f'"created_at":"{STAMP}","updated_at":"{STAMP}"'
)


def good(**more: Any) -> str:
    extra = "".join(
        f",{json.dumps(k)}:{json.dumps(v, ensure_ascii=False)}" for k, v in more.items()
    )
    return GOOD + extra + "}"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param((good() + "\n").encode(), id="plain"),
        pytest.param((good() + "\r\n" + good(id="pn-2") + "\r\n").encode(), id="crlf"),
        pytest.param((good(title="tab\t") + "\n\n").encode(), id="blank line"),
        pytest.param(json.dumps(json.loads(good(title="ü"))).encode(), id="u escapes"),
        pytest.param((good(labels=["b", "a"]) + "\n").encode(), id="labels"),
        pytest.param((good(labels="a") + "\n").encode(), id="labels as a string"),
        pytest.param((good(labels=["a", ""]) + "\n").encode(), id="an empty label"),
        pytest.param((good(labels=["a", 1]) + "\n").encode(), id="a number as a label"),
        pytest.param((good(title=1, labels=["a"]) + "\n").encode(), id="a number and labels"),
        pytest.param((good(spec=["a"]) + "\n").encode(), id="a list where a string goes"),
        pytest.param((good(title="") + "\n").encode(), id="an empty required field"),
        pytest.param((good(description="") + "\n").encode(), id="an empty optional field"),
        pytest.param((good(closed_at="") + "\n").encode(), id="an empty time"),
        pytest.param((good(closed_at="soon") + "\n").encode(), id="a bad time"),
        pytest.param((good(status="done") + "\n").encode(), id="a bad word"),
        pytest.param((good(title=None) + "\n").encode(), id="a null required field"),
        pytest.param((good(zz={"deep": [1, {"x": None}]}) + "\n").encode(), id="unknown fields"),
        pytest.param((good() + good(id="pn-2") + "\n").encode(), id="two objects on a line"),
        pytest.param(
            good().replace(',"title"', ',\n"title"').encode(), id="an object on two lines"
        ),
        pytest.param((good(title="x") + "\n{oops\n").encode(), id="a later bad line"),
        pytest.param((good(status="done") + "\n{oops\n").encode(), id="an earlier bad record"),
        pytest.param((good() + "\n" + "{" * 65 + "}" * 65 + "\n").encode(), id="too deep"),
        pytest.param((good() + "\n").encode() + b"{\xff}\n", id="not UTF-8"),
        pytest.param((good(title='\\u00fc "{[') + "\n").encode(), id="brackets in a string"),
        pytest.param(b"", id="empty"),
    ],
)
def test_each_kind_of_line_reads_as_line_by_line_checks_read_it(data: bytes) -> None:
    assert_reads_like_the_oracle(data, "issues.jsonl")


def test_a_long_line_is_refused_with_its_number() -> None:
    long = good(description="x" * (MAX_LINE_BYTES // 4 + 1)).encode()
    assert_reads_like_the_oracle(long + b"\n", "issues.jsonl")  # read line by line: fine
    assert_reads_like_the_oracle(
        good(description="ü" * (MAX_LINE_BYTES // 2)).encode(), "issues.jsonl"
    )  # too long in bytes, not in characters


def test_an_earlier_records_error_comes_before_a_later_lines() -> None:
    data = (good(status="done") + "\n" + good() + "\n{oops\n").encode()
    with pytest.raises(InvalidData, match=r"^issues\.jsonl:1: invalid status 'done'"):
        read_table(data, "issues.jsonl")


def test_rows_hold_the_known_fields_in_order_and_none_where_unset() -> None:
    table = read_table((good(labels=["a"], zz=1) + "\n").encode(), "issues.jsonl")
    assert table.numbers == range(1, 2)
    (row,) = table.rows
    assert row[FIELDS["issues.jsonl"].index("labels")] == ["a"]
    assert row[FIELDS["issues.jsonl"].index("description")] is None
    assert len(row) == len(FIELDS["issues.jsonl"])
