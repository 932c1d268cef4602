"""JSONL lines into checked records: the committed layer's edge to untrusted text.

Each line must be one JSON object; each record must carry its file's required fields, known
fields as strings (labels as an array of them), times in RFC 3339 and the canonical words
of the vocabularies. A bad one fails with its file, line and field (`parse_line`,
`check_record`). Unknown fields are not looked at: they ride along.

`read_table` reads a whole file (`pn import` reads 100k issues): lines as pensa writes them
take a short path, and each record's known values are checked in one quick pass. The
line-by-line checks still decide, and word the error, whenever a short path is not sure.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.errors import InvalidArgument, InvalidData
from pensa.models import (
    ISSUE_FIELDS,
    LIST_FIELDS,
    IssueType,
    Priority,
    Size,
    Status,
    Vocabulary,
    parse_timestamp,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

Record = dict[str, Any]

COMMENT_FIELDS = ("id", "issue_id", "actor", "text", "created_at")
DEP_FIELDS = ("issue_id", "depends_on_id")
TOMBSTONE_FIELDS = ("id", "deleted_at")
ISSUE_REQUIRED = ("id", "title", "issue_type", "status", "priority", "created_at", "updated_at")
TIME_FIELDS = ("created_at", "updated_at", "closed_at", "deleted_at")

FIELDS = {
    "issues.jsonl": ISSUE_FIELDS,
    "deps.jsonl": DEP_FIELDS,
    "comments.jsonl": COMMENT_FIELDS,
    "deleted.jsonl": TOMBSTONE_FIELDS,
}
REQUIRED = {
    "issues.jsonl": ISSUE_REQUIRED,
    "deps.jsonl": DEP_FIELDS,
    "comments.jsonl": COMMENT_FIELDS,
    "deleted.jsonl": TOMBSTONE_FIELDS,
}
# Untrusted JSONL may nest without end (a RecursionError deep in json) or carry numbers of
# millions of digits; both are refused before parsing.
MAX_DEPTH = 64
MAX_LINE_BYTES = 4 * 1024 * 1024
CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>", "|||||||")


# --- one line -----------------------------------------------------------------------------


def _depth_ok(text: str) -> bool:
    """Whether brackets nest at most MAX_DEPTH deep (strings skipped; cheap, no recursion)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return True
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _no_surrogates(value: Any) -> bool:
    """Whether no string in `value` holds a lone surrogate (not encodable as UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_no_surrogates(k) and _no_surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_no_surrogates(v) for v in value)
    return True


def parse_line(raw: bytes, where: str) -> Record | None:
    """Decode and shape-check one JSONL line; None for a blank line."""
    record = _plain_object(raw)
    if record is not None:
        return record
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
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise InvalidData(f"{where}: not valid JSON ({e})") from e
    if not isinstance(record, dict):
        raise InvalidData(f"{where}: expected a JSON object, got {type(record).__name__}")
    # Only a \\u escape can make a lone surrogate (raw UTF-8 cannot encode one).
    if "\\u" in text and not _no_surrogates(record):
        raise InvalidData(f"{where}: a string holds a lone surrogate (not valid Unicode)")
    return record


_DECODER = json.JSONDecoder()


def _plain_object(raw: bytes) -> Record | None:
    """The object on a line as pensa writes it; None for any other line, which `parse_line`
    then checks step by step (and says what is wrong with it).

    Such a line passes every check of `parse_line` by construction: it is short, starts
    with `{` (not blank, no conflict marker), has at most MAX_DEPTH brackets, holds no
    escape that could make a surrogate, is UTF-8, and its object ends at its last character.
    `raw_decode` from index 0 is `json.loads` less skipping white space (there is none) and
    less the check for text after the object (the `end` test here).
    """
    if (
        len(raw) > MAX_LINE_BYTES
        or not raw.startswith(b"{")
        or b"\\u" in raw
        or raw.count(b"{") + raw.count(b"[") > MAX_DEPTH
    ):
        return None
    record: Record  # it starts with "{"
    try:
        text = raw.decode("utf-8")
        record, end = _DECODER.raw_decode(text)
    except ValueError:  # not UTF-8, not JSON
        return None
    return record if end == len(text) else None


# Each file's fields that hold a vocabulary's word, with the values allowed: a field that
# may be unset (`size`) allows None too.
_VOCABULARIES: dict[str, tuple[tuple[str, type[Vocabulary], frozenset[str | None]], ...]] = {
    name: () for name in FIELDS
}
_VOCABULARIES["issues.jsonl"] = tuple(
    (key, vocab, frozenset(m.value for m in vocab) | ({None} if key == "size" else set()))
    for key, vocab in (
        ("issue_type", IssueType),
        ("status", Status),
        ("priority", Priority),
        ("size", Size),
    )
)


def check_record(record: Record, name: str, where: str) -> None:
    """Required fields present, known fields strings, times RFC 3339, vocabularies valid."""
    fields, required = FIELDS[name], REQUIRED[name]
    missing = [k for k in required if k not in record]
    if missing:
        raise InvalidData(f"{where}: missing field(s) {', '.join(missing)}")
    for key in fields:
        value = record.get(key)
        if value is None:
            if key in required:  # `"status": null` is no status at all
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
    for key, vocab, allowed in _VOCABULARIES[name]:
        if record.get(key) is None and None in allowed:
            continue
        try:
            vocab.parse(record[key], exact=True)  # files hold the canonical words
        except InvalidArgument as e:
            raise InvalidData(f"{where}: {e}") from e


# --- a whole file -------------------------------------------------------------------------


class Table(NamedTuple):
    """A JSONL file's checked records, each with its line number and its known fields'
    values (`FIELDS[name]` order, None where unset): the rows `pn import` inserts."""

    numbers: Sequence[int]
    records: list[Record]
    rows: list[tuple[Any, ...]]


def read_table(data: bytes, name: str, *, label: str | None = None) -> Table:
    """Every record of one JSONL file's bytes, checked; errors name `label` (or `name`)."""
    label = label or name
    numbers: Sequence[int]
    plain = _plain_objects(data)
    if plain is not None:
        numbers, records = range(1, len(plain) + 1), plain
    else:
        numbers, records = _objects_by_line(data, name, label)
    fields = FIELDS[name]
    rows = [tuple(map(record.get, fields)) for record in records]
    if not _surely_valid(rows, _SHAPES[name]):
        _check_each(numbers, records, name, label)
    return Table(numbers, records, rows)


def _plain_objects(data: bytes) -> list[Record] | None:
    """Each line's object when every line is one as pensa writes it (`_plain_object`); None
    when any is not, or the file holds a \\r, a \\u escape or bytes that are not UTF-8:
    then each line is read on its own, and the first bad one named.

    The tests that can look at the whole file at once do (one decode; no line holds a \\u
    if the file does not), and each object is parsed where it stands in the file's text,
    not from a copy of its line."""
    if b"\r" in data or (b"\\" in data and b"\\u" in data):  # (a byte is found faster)
        return None  # (without \r, lines end at \n alone)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    records: list[Record] = []
    start, size = 0, len(text)
    while start < size:
        stop = text.find("\n", start)
        if stop < 0:
            stop = size
        if (
            not text.startswith("{", start)
            or stop - start > MAX_LINE_BYTES // 4  # (UTF-8: at most four bytes a character)
            or text.count("{", start, stop) + text.count("[", start, stop) > MAX_DEPTH
        ):
            return None
        try:
            record, end = _DECODER.raw_decode(text, start)
        except ValueError:
            return None
        if end != stop:  # text after the object, or an object running on to the next line
            return None
        records.append(record)
        start = stop + 1
    return records


def _objects_by_line(data: bytes, name: str, label: str) -> tuple[list[int], list[Record]]:
    numbers: list[int] = []
    records: list[Record] = []
    try:
        for number, raw in enumerate(data.splitlines(), start=1):
            record = parse_line(raw, f"{label}:{number}")
            if record is not None:
                numbers.append(number)
                records.append(record)
    except InvalidData:
        _check_each(numbers, records, name, label)  # an earlier line's own error comes first
        raise
    return numbers, records


def _check_each(numbers: Sequence[int], records: list[Record], name: str, label: str) -> None:
    for number, record in zip(numbers, records, strict=True):
        check_record(record, name, f"{label}:{number}")


class _Shape(NamedTuple):
    """A file kind's known fields by position in a row, for `_surely_valid`."""

    required: tuple[int, ...]
    lists: tuple[int, ...]
    scalars: Callable[[tuple[Any, ...]], tuple[Any, ...]]  # the values of the others
    times: tuple[int, ...]
    words: tuple[tuple[int, frozenset[str | None]], ...]


def _shape(name: str) -> _Shape:
    fields = FIELDS[name]
    at = {key: n for n, key in enumerate(fields)}
    scalars = [n for n, key in enumerate(fields) if key not in LIST_FIELDS]
    assert len(scalars) > 1  # so that itemgetter returns a tuple
    return _Shape(
        tuple(at[key] for key in REQUIRED[name]),
        tuple(at[key] for key in fields if key in LIST_FIELDS),
        itemgetter(*scalars),
        tuple(at[key] for key in fields if key in TIME_FIELDS),
        tuple((at[key], words) for key, _, words in _VOCABULARIES[name]),
    )


_SHAPES = {name: _shape(name) for name in FIELDS}
_STRINGS = frozenset({str})
_STRING_OR_UNSET = frozenset({str, type(None)})


def _surely_valid(rows: list[tuple[Any, ...]], shape: _Shape) -> bool:
    """Whether `check_record` accepts every row's record, decided quickly; False:
    `check_record` decides, record by record, and says why.

    The same rules: required fields non-empty strings (a missing one reads as None), the
    others strings or unset, lists (labels) of non-empty strings, words canonical, and
    every distinct time readable (each parsed once: an issue's times are often one moment).
    One pass that looks at each row once, types in C: several times faster than
    `check_record` per row, and than checking column by column (cache misses)."""
    required, lists, scalars, time_fields, words = shape
    times: set[Any] = set()
    for row in rows:
        if _STRING_OR_UNSET.issuperset(map(type, row)):
            for at in lists:
                if row[at] is not None:  # a string where a list belongs
                    return False
        else:  # only a list field may hold anything else: a list of non-empty strings
            if not _STRING_OR_UNSET.issuperset(map(type, scalars(row))):
                return False
            for at in lists:
                items = row[at]
                if items is not None and not (
                    type(items) is list and _STRINGS.issuperset(map(type, items)) and all(items)
                ):
                    return False
        for at in required:
            if not row[at]:
                return False
        for at, allowed in words:
            if row[at] not in allowed:
                return False
        for at in time_fields:
            times.add(row[at])
    times.discard(None)
    try:
        for value in times:
            parse_timestamp(value)
    except ValueError:
        return False
    return True


def parse_file(data: bytes, name: str, *, label: str | None = None) -> list[tuple[int, Record]]:
    """Every record of one JSONL file's bytes, with its line number."""
    table = read_table(data, name, label=label)
    return list(zip(table.numbers, table.records, strict=True))
