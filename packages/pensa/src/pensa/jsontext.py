"""Compact JSON for what pensa prints, without importing `json`.

`pn claim-next --json`, `show --json` and `count --json` print one small object, and
importing the `json` module is a large part of what such a command may spend beyond the
start-up floor (bench/bench_pensa.py prints the figure). The values pensa prints (dicts
with string keys, lists, tuples, strings, ints, booleans, None) are written here exactly as
`json.dumps(data, ensure_ascii=False, separators=(",", ":"))` writes them (a test holds the
two equal on random data); anything else is left to `json` itself.
"""

from __future__ import annotations

# What json escapes in a string when ensure_ascii is off: the quote, the backslash and the
# control characters, five of them by their short names, the others as \u00xx.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)} | {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\b"): "\\b",
    ord("\f"): "\\f",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def dumps(data: object) -> str:
    """`data` as compact JSON, UTF-8 characters as they are."""
    parts: list[str] = []
    if _write(data, parts):
        return "".join(parts)
    import json  # a value of another type (a float, a subclass): json decides

    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _write(value: object, out: list[str]) -> bool:
    """Append `value`'s JSON to `out`; False if it holds a type left to `json`."""
    if type(value) is str:
        out.append('"' + value.translate(_ESCAPES) + '"')
    elif value is None:
        out.append("null")
    elif type(value) is bool:
        out.append("true" if value else "false")
    elif type(value) is int:
        out.append(int.__repr__(value))
    elif type(value) is dict:
        out.append("{")
        for n, (key, item) in enumerate(value.items()):
            if type(key) is not str:
                return False
            out.append((',"' if n else '"') + key.translate(_ESCAPES) + '":')
            if not _write(item, out):
                return False
        out.append("}")
    elif type(value) is list or type(value) is tuple:
        out.append("[")
        for n, item in enumerate(value):
            if n:
                out.append(",")
            if not _write(item, out):
                return False
        out.append("]")
    else:
        return False
    return True
