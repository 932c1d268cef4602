"""limits.py: which events mean a usage limit, and when it resets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ralph.limits import detect, parse_reset
from ralph.stream import Parser, RateLimit, Result

STREAMS = Path(__file__).parent / "fixtures" / "stream"
NOW = datetime(2026, 2, 26, 14, 30, tzinfo=UTC)  # a Thursday


def recorded(name: str) -> tuple[RateLimit | None, Result | None]:
    events = list(Parser().events([(STREAMS / name).read_bytes()]))
    limits = [e for e in events if isinstance(e, RateLimit)]
    results = [e for e in events if isinstance(e, Result)]
    return (limits[-1] if limits else None), (results[-1] if results else None)


def test_recorded_rejection_resets_at_its_resets_at() -> None:
    limit = detect(*recorded("rate-limit-rejected.jsonl"), now=NOW)
    assert limit is not None
    assert limit.resets_at == 1795359060
    assert not limit.fatal


def test_recorded_api_key_429_has_no_reset_time() -> None:
    limit = detect(*recorded("api-key-429.jsonl"), now=NOW)
    assert limit is not None
    assert limit.resets_at is None


@pytest.mark.parametrize("name", ["tools.jsonl", "overloaded-retry.jsonl"])
def test_allowed_events_and_retries_are_not_limits(name: str) -> None:
    assert detect(*recorded(name), now=NOW) is None


@pytest.mark.parametrize("status", ["allowed", "allowed_warning"])
def test_allowed_statuses_never_pause(status: str) -> None:
    assert detect(RateLimit(status, resets_at=1.0), Result(), now=NOW) is None


def test_credits_required_cannot_be_waited_out() -> None:
    limit = detect(RateLimit("rejected", error_code="credits_required"), None, now=NOW)
    assert limit is not None
    assert limit.fatal


def test_spend_limit_text_is_fatal() -> None:
    result = Result(is_error=True, api_error_status=429, text="You've hit your spend limit")
    limit = detect(None, result, now=NOW)
    assert limit is not None
    assert limit.fatal


def test_error_result_without_limit_wording_is_not_a_limit() -> None:
    assert detect(None, Result(is_error=True, text="Prompt is too long"), now=NOW) is None


def test_limit_text_in_a_successful_result_is_not_a_limit() -> None:
    assert detect(None, Result(text="I read 'usage limit reached' in the docs"), now=NOW) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Claude AI usage limit reached|1753441200", datetime(2025, 7, 25, 11, 0, tzinfo=UTC)),
        (
            "You've hit your session limit · resets 3:45pm",
            datetime(2026, 2, 26, 15, 45, tzinfo=UTC),
        ),
        ("You've hit your limit · resets 2pm (UTC)", datetime(2026, 2, 27, 14, 0, tzinfo=UTC)),
        # 23:30 in Seoul already: the next 11pm there is tomorrow
        (
            "You've hit your limit · resets 11pm (Asia/Seoul)",
            datetime(2026, 2, 27, 14, 0, tzinfo=UTC),
        ),
        (
            "You've hit your weekly limit · resets Mon 12:00am",
            datetime(2026, 3, 2, 0, 0, tzinfo=UTC),
        ),
        (
            "You've hit your limit · resets 9pm (Not/AZone)",
            datetime(2026, 2, 26, 21, 0, tzinfo=UTC),
        ),
        # codex's wordings
        (
            "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage "
            "to purchase more credits or try again at 3:28 PM.",
            datetime(2026, 2, 26, 15, 28, tzinfo=UTC),
        ),
        (
            "You've hit your usage limit. To get more access now, send a request to your admin "
            "or try again in 3 days 6 hours 57 minutes.",
            NOW + timedelta(days=3, hours=6, minutes=57),
        ),
        (
            "You've hit your usage limit ... try again at Aug 8th, 2026 12:30 PM",
            datetime(2026, 8, 8, 12, 30, tzinfo=UTC),
        ),
    ],
)
def test_parse_reset(text: str, expected: datetime) -> None:
    assert parse_reset(text, now=NOW) == expected.timestamp()


def test_parse_reset_without_a_time_is_none() -> None:
    assert parse_reset("API Error: Request rejected (429)", now=NOW) is None
