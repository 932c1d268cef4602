"""The requests the egress proxy refused, read from its log: agent-influenced text, so read
defensively.

The agent chooses what it asks for, so every field of a log line is the agent's text: lines
are cut at a length, only lines of the exact shape squid writes for our format count, a host
must look like a host name or an IP address, and the rest is counted as `(unreadable)`.
Refusals are grouped by host, port and method, with a count, in first-seen order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ralph.egress.policy import LOG_MARKER

MAX_LINE = 1024
UNREADABLE = "(unreadable)"
_LINE = re.compile(
    rf"^{LOG_MARKER} (?P<status>[A-Z_]+)/(?P<code>\d{{3}}) (?P<method>[A-Z]{{1,16}}|-) "
    r"(?P<port>\d{1,5}|-) (?P<host>\S{1,255})$"
)
_HOST = re.compile(r"^[A-Za-z0-9.:\[\]-]{1,255}$")


class Refusal(NamedTuple):
    """Requests refused for one destination: how many, to which host and port, how."""

    host: str
    port: int | None
    method: str
    times: int

    def as_json(self) -> dict[str, object]:
        return {"host": self.host, "port": self.port, "method": self.method, "times": self.times}

    def __str__(self) -> str:
        where = self.host if self.port is None else f"{self.host}:{self.port}"
        return f"{where} ({self.method}, {self.times}x)"


def lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Text lines from a byte stream cut anywhere, each at most MAX_LINE characters."""
    pending = b""
    for chunk in chunks:
        *complete, pending = (pending + chunk).split(b"\n")
        for line in complete:
            yield line[:MAX_LINE].decode("utf-8", "replace").rstrip("\r")
        pending = pending[: MAX_LINE * 4]  # a line that never ends is not read whole
    if pending:
        yield pending[:MAX_LINE].decode("utf-8", "replace")


def refused(log: Iterable[str]) -> list[Refusal]:
    """Every refused request in the access log's lines, grouped, in first-seen order."""
    counts: dict[tuple[str, int | None, str], int] = {}
    for line in log:
        if not line.startswith(LOG_MARKER + " "):
            continue  # squid's own notes, or a line that is not ours
        found = _LINE.match(line)
        if found is None:
            key: tuple[str, int | None, str] = (UNREADABLE, None, "-")
        elif not found["status"].startswith("TCP_DENIED"):
            continue  # let through (whatever the upstream then answered)
        else:
            host = found["host"] if _HOST.match(found["host"]) else UNREADABLE
            port = int(found["port"]) if found["port"].isdigit() else None
            key = (host.lower(), port, found["method"])
        counts[key] = counts.get(key, 0) + 1
    return [Refusal(host, port, method, n) for (host, port, method), n in counts.items()]
