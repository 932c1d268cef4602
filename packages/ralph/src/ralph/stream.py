"""Parse Claude Code's stream-json (NDJSON) into typed events: pure generators, no I/O.

Unknown event types, unknown content blocks and non-JSON lines are skipped and counted, never
fatal: new event types appear often (claude-code-notes §2, `rate_limit_event` broke the SDK).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias


@dataclass(frozen=True, slots=True)
class Text:
    """Assistant text, printed as is."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call; `input` is the tool's JSON arguments."""

    name: str
    input: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolError:
    """A tool result flagged `is_error`, reduced to its text."""

    text: str


@dataclass(frozen=True, slots=True)
class RateLimit:
    """A `rate_limit_event`; only status `rejected` means the limit was hit."""

    status: str
    resets_at: float | None = None
    limit_type: str | None = None
    error_code: str | None = None

    @property
    def rejected(self) -> bool:
        return self.status == "rejected"


@dataclass(frozen=True, slots=True)
class ApiRetry:
    """The CLI retries a failed API call by itself (claude's `system/api_retry`, codex's
    "Reconnecting...", gemini's and opencode's retry lines on stderr).

    `offline`: the call got no HTTP answer at all (connection refused, no route, a timeout), so
    the endpoint may be unreachable; a retry with a status (429, 529, 5xx) was answered."""

    attempt: int | None = None
    status: int | None = None
    error: str = ""
    offline: bool = False

    @property
    def futile(self) -> bool:
        """Retrying will not soon mend it: no answer at all, or a refusal (a key, a model, a
        request: 4xx) rather than a rate limit (429), a timeout (408) or a conflict (409)."""
        refused = self.status is not None and 400 <= self.status < 500
        return self.offline or (refused and self.status not in (408, 409, 429))


@dataclass(frozen=True, slots=True)
class Result:
    """The final `result` event of a run (parsed leniently: most fields are optional)."""

    subtype: str = "success"
    is_error: bool = False
    text: str = ""
    num_turns: int | None = None
    duration_ms: int | None = None
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_tokens: int | None = None  # cache creation + cache reads
    api_error_status: int | None = None
    errors: tuple[str, ...] = ()
    # The agent reported tokens but no cost: ralph priced them (agents/prices.py).
    cost_computed: bool = False

    @property
    def nothing_done(self) -> bool:
        """ralph's verdict on a run the agent called a success: not one tool call (agents/)."""
        return self.subtype == NOTHING_DONE


# The subtype of a result whose run ended without a single tool call: a model that is not
# given the agent's tools (or ignores them) "succeeds" at once every iteration, having done
# nothing, and the breaker should count that.
NOTHING_DONE = "error_nothing_done"


Event: TypeAlias = Text | ToolUse | ToolError | RateLimit | ApiRetry | Result


def _cache(usage: Mapping[str, object]) -> int | None:
    parts = [_int(usage.get(k)) for k in ("cache_creation_input_tokens", "cache_read_input_tokens")]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _content_text(content: object) -> str:
    """A tool_result's content: a string, or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _str(block.get("text")) for block in content if isinstance(block, dict)
        ).strip()
    return ""


def _assistant(message: Mapping[str, object]) -> Iterator[Event]:
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and (text := _str(block.get("text"))):
            yield Text(text)
        elif kind in ("tool_use", "server_tool_use"):
            args = block.get("input")
            yield ToolUse(_str(block.get("name")) or "?", args if isinstance(args, dict) else {})


def _user(message: Mapping[str, object]) -> Iterator[Event]:
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if (
            isinstance(block, dict)
            and block.get("type") == "tool_result"
            and block.get("is_error") is True
        ):
            yield ToolError(_content_text(block.get("content")))


def _result(raw: Mapping[str, object]) -> Result:
    usage = raw.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    errors = raw.get("errors")
    cost = raw.get("total_cost_usd", raw.get("total_cost", raw.get("cost_usd")))
    return Result(
        subtype=_str(raw.get("subtype")) or "success",
        is_error=raw.get("is_error") is True,
        text=_str(raw.get("result")),
        num_turns=_int(raw.get("num_turns")),
        duration_ms=_int(raw.get("duration_ms")),
        cost_usd=_num(cost),
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_tokens=_cache(usage),
        api_error_status=_int(raw.get("api_error_status")),
        errors=tuple(str(e) for e in errors) if isinstance(errors, list) else (),
    )


def _rate_limit(raw: Mapping[str, object]) -> RateLimit:
    info = raw.get("rate_limit_info")
    info = info if isinstance(info, dict) else {}
    resets = _num(info.get("resetsAt"))
    if resets is None:
        resets = _num(info.get("overageResetsAt"))
    code = info.get("errorCode")
    kind = info.get("rateLimitType")
    return RateLimit(
        status=_str(info.get("status")) or "unknown",
        resets_at=resets,
        limit_type=kind if isinstance(kind, str) else None,
        error_code=code if isinstance(code, str) else None,
    )


def parse_line(line: bytes) -> list[Event] | None:
    """Turn one NDJSON line into its events; None when the line is not a JSON object."""
    line = line.strip()
    if not line.startswith(b"{"):
        return None
    try:
        raw = json.loads(line)
    except ValueError:  # malformed JSON, or bytes that are not UTF-8
        return None
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    message = raw.get("message")
    message = message if isinstance(message, dict) else {}
    if kind == "assistant":
        return list(_assistant(message))
    if kind == "user":
        return list(_user(message))
    if kind == "result":
        return [_result(raw)]
    if kind == "rate_limit_event":
        return [_rate_limit(raw)]
    if kind == "system" and raw.get("subtype") == "api_retry":
        status = _int(raw.get("error_status"))
        error = _str(raw.get("error"))
        if status is None and error in ("", "unknown"):  # what claude says of a failed connection
            error = "no answer from the API"
        return [ApiRetry(_int(raw.get("attempt")), status, error, offline=status is None)]
    return []  # system/init, stream_event, and types newer than us


class Reader(Protocol):
    """One agent's event stream, line by line (agents/): claude's is stateless, others sum
    usage over the run and only know their result at the end."""

    def line(self, line: bytes) -> list[Event] | None:
        """The events of one line; None when the line is not one of the agent's events."""
        ...

    def end(self) -> list[Event]:
        """What the stream's end implies (a result built from what was summed)."""
        ...

    def stderr(self, line: bytes) -> list[Event] | None:
        """The events one line of the agent's stderr (without its newline) means, [] for a line
        not worth showing (a stack frame, a banner printed every run); None: show it as is."""
        ...


class ClaudeReader:
    """Claude Code's stream-json: every line stands alone; the `result` event ends it."""

    def line(self, line: bytes) -> list[Event] | None:
        return parse_line(line)

    def end(self) -> list[Event]:
        return []

    def stderr(self, line: bytes) -> list[Event] | None:
        return None  # claude's own retries are events on stdout


@dataclass(slots=True)
class Parser:
    """Splits byte chunks into lines and lines into events; counts what it skipped."""

    reader: Reader = field(default_factory=ClaudeReader)
    skipped: int = 0
    lines: int = 0
    _stderr: bytes = b""  # the agent's last stderr line, until its newline comes

    def events(self, chunks: Iterable[bytes]) -> Iterator[Event]:
        """Yield the events in `chunks`, which may cut lines (even characters) anywhere."""
        pending = b""
        for chunk in chunks:
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                yield from self._line(line)
        if pending.strip():
            yield from self._line(pending)
        yield from self.reader.end()

    def _line(self, line: bytes) -> list[Event]:
        if not line.strip():
            return []
        self.lines += 1
        parsed = self.reader.line(line)
        if parsed is None:
            self.skipped += 1
            return []
        return parsed

    def stderr(self, chunk: bytes) -> list[Event | bytes]:
        """What a chunk of the agent's stderr shows, line by line: the events the reader makes
        of a line, or the line itself (with its newline) to pass through."""
        *complete, self._stderr = (self._stderr + chunk).split(b"\n")
        return [item for line in complete for item in self._stderr_line(line, b"\n")]

    def stderr_end(self) -> list[Event | bytes]:
        """The agent's last stderr line when it ended without a newline."""
        pending, self._stderr = self._stderr, b""
        return self._stderr_line(pending, b"") if pending else []

    def _stderr_line(self, line: bytes, end: bytes) -> list[Event | bytes]:
        events = self.reader.stderr(line)
        return [line + end] if events is None else list(events)
