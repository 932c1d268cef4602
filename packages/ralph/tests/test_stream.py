"""stream.py: real recordings from claude 2.1.330 and hand-made edge cases parse leniently."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ralph.stream import ApiRetry, Parser, RateLimit, Result, Text, ToolError, ToolUse, parse_line

STREAMS = Path(__file__).parent / "fixtures" / "stream"
TOOLS = (STREAMS / "tools.jsonl").read_bytes()


def parse(data: bytes) -> list[object]:
    return list(Parser().events([data]))


def test_recorded_tool_session_yields_text_tools_errors_and_result() -> None:
    events = parse(TOOLS)
    names = [e.name for e in events if isinstance(e, ToolUse)]
    assert names == [
        "Bash",
        "Write",
        "Read",
        "Read",
        "Edit",
        "Glob",
        "Grep",
        "TodoWrite",
        "Read",
        "Bash",
    ]
    assert isinstance(events[0], Text)
    assert events[0].text == "I'll look around first."
    errors = [e for e in events if isinstance(e, ToolError)]
    assert len(errors) == 5
    assert errors[-1].text == "Exit code 3\n3"
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.num_turns, result.is_error, result.output_tokens) == (11, False, 447)
    assert result.cost_usd is not None
    assert 0.004 < result.cost_usd < 0.005


def test_allowed_rate_limit_event_is_parsed_but_not_rejected() -> None:
    limits = [e for e in parse(TOOLS) if isinstance(e, RateLimit)]
    assert [(e.status, e.rejected) for e in limits] == [("allowed", False)]


def test_recorded_rejection_carries_reset_time_and_429_result() -> None:
    events = parse((STREAMS / "rate-limit-rejected.jsonl").read_bytes())
    limit = next(e for e in events if isinstance(e, RateLimit))
    assert limit.rejected
    assert limit.resets_at == 1795359060
    assert limit.limit_type == "five_hour"
    result = events[-1]
    assert isinstance(result, Result)
    assert result.is_error
    assert result.api_error_status == 429


def test_garbage_and_unknown_events_are_skipped_and_counted() -> None:
    data = b"\n".join(
        [
            b"npm WARN something",
            b'{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}',
            b"{not json",
            b'{"type":"brand_new_event","x":1}',
            b'{"type":"system","subtype":"api_retry","attempt":1}',
            b"[1, 2]",
            b"\xff\xfe\x00 binary",
            b'{"type":"assistant","message":{"content":[{"type":"mystery"},"str",'
            b'{"type":"thinking","thinking":""}]}}',
            b'{"type":"result","subtype":"error_max_turns","errors":["too many"]}',
        ]
    )
    parser = Parser()
    events = list(parser.events([data]))
    assert events == [
        Text("hi"),
        ApiRetry(attempt=1, error="no answer from the API", offline=True),  # no error_status
        Result(subtype="error_max_turns", errors=("too many",)),
    ]
    assert parser.skipped == 4  # warning line, bad JSON, a JSON array, binary junk
    assert parser.lines == 9


def test_result_fields_are_optional_and_wrong_types_ignored() -> None:
    events = parse_line(b'{"type":"result","num_turns":"3","total_cost":0.5,"usage":[]}')
    assert events == [Result(cost_usd=0.5)]


def test_tool_result_content_as_text_blocks() -> None:
    line = json.dumps(
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "is_error": True,
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                    },
                    {"type": "tool_result", "is_error": False, "content": "fine"},
                ]
            },
        }
    ).encode()
    assert parse_line(line) == [ToolError("a\nb")]


def test_last_line_without_newline_is_parsed() -> None:
    assert parse(b'{"type":"result","result":"x"}') == [Result(text="x")]


@settings(deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(TOOLS) - 1), max_size=40))
def test_chunk_boundaries_never_change_the_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [TOOLS[a:b] for a, b in zip([0, *points], [*points, len(TOOLS)], strict=True)]
    assert list(Parser().events(chunks)) == parse(TOOLS)


def test_stderr_is_passed_through_line_by_line_whatever_the_chunks() -> None:
    """claude's reader shows every stderr line as it is; a line cut anywhere waits for its end,
    and a last line without a newline comes out when the agent ends."""
    data = b"npm WARN one\nsecond line\n\xff half-a-\xc3\xa9 line"
    for cut in range(1, len(data)):
        parser = Parser()
        shown = parser.stderr(data[:cut]) + parser.stderr(data[cut:]) + parser.stderr_end()
        assert shown == [b"npm WARN one\n", b"second line\n", b"\xff half-a-\xc3\xa9 line"]
    assert Parser().stderr_end() == []


def test_a_retry_is_futile_without_an_answer_or_with_a_refusal_not_with_a_limit() -> None:
    assert ApiRetry(1, None, "no answer", offline=True).futile
    assert all(ApiRetry(1, status).futile for status in (400, 401, 403, 404))
    assert not any(ApiRetry(1, status).futile for status in (408, 409, 429, 500, 503, 529))
    assert not ApiRetry(1).futile  # a retry that says nothing of why is waited for
