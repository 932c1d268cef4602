"""Recognise usage limits in an iteration's events and work out when they reset.

Detection order (claude-code-notes §7.4): a `rate_limit_event` with status `rejected` (its
`resetsAt`), else a `result` with `is_error` and HTTP 429 or the limit wording. `allowed` and
`allowed_warning` events are normal traffic and never pause anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ralph.stream import RateLimit, Result

_LIMIT_TEXT = re.compile(r"you've hit your|usage limit|out of extra usage|limit reached", re.I)
_FATAL_TEXT = re.compile(r"disabled by your admin|spend limit|org's monthly|credit balance", re.I)
_LEGACY = re.compile(r"\|(\d{9,11})\s*$")  # `Claude AI usage limit reached|1753441200`
_RESETS = re.compile(
    r"(?:resets|try again at)\s+(?:(?P<day>Mon|Tue|Wed|Thu|Fri|Sat|Sun)\w*\s+)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>am|pm)"
    r"(?:\s*\((?P<tz>[A-Za-z_/+-]+)\))?",
    re.I,
)
# codex: "try again in 3 days 6 hours 57 minutes", "try again at Aug 8th, 2026 12:30 PM"
_AGAIN_IN = re.compile(
    r"try again in\s+(?:(?P<days>\d+) days?\s*)?(?:(?P<hours>\d+) hours?\s*)?"
    r"(?:(?P<minutes>\d+) minutes?)?",
    re.I,
)
_AGAIN_AT_DATE = re.compile(
    r"try again at (?P<month>[A-Z][a-z]{2})[a-z]* (?P<day>\d{1,2})(?:st|nd|rd|th)?,? "
    r"(?P<year>\d{4}),? (?P<hour>\d{1,2}):(?P<minute>\d{2}) ?(?P<ampm>[AP]M)",
    re.I,
)
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True, slots=True)
class Limit:
    """A usage limit hit by the agent: when it lifts (epoch seconds), if known."""

    resets_at: float | None
    fatal: bool = False  # waiting will not help (no credits, spend or admin limit)
    reason: str = ""


def parse_reset(text: str, *, now: datetime) -> float | None:
    """The reset time in a limit message (`resets 3:45pm (Europe/Berlin)`), as epoch seconds."""
    if legacy := _LEGACY.search(text):
        return float(legacy.group(1))
    if (again := _AGAIN_IN.search(text)) and any(again.groupdict().values()):
        days, hours, minutes = (int(again.group(k) or 0) for k in ("days", "hours", "minutes"))
        return (now + timedelta(days=days, hours=hours, minutes=minutes)).timestamp()
    if dated := _AGAIN_AT_DATE.search(text):
        stamp = " ".join(dated.group(k) for k in ("month", "day", "year", "hour", "minute"))
        try:
            when = datetime.strptime(f"{stamp} {dated.group('ampm').upper()}", "%b %d %Y %I %M %p")
        except ValueError:
            return None
        return when.replace(tzinfo=now.tzinfo).timestamp()  # codex prints the local time
    found = _RESETS.search(text)
    if found is None:
        return None
    zone = now.tzinfo
    if found.group("tz"):
        try:
            zone = ZoneInfo(found.group("tz"))
        except (ZoneInfoNotFoundError, ValueError):
            zone = now.tzinfo
    local = now.astimezone(zone)
    hour = int(found.group("hour")) % 12 + (12 if found.group("ampm").lower() == "pm" else 0)
    target = local.replace(hour=hour, minute=int(found.group("minute") or 0), second=0)
    target = target.replace(microsecond=0)
    if day := found.group("day"):
        target += timedelta(days=(_DAYS.index(day.lower()[:3]) - local.weekday()) % 7)
    while target <= local:
        target += timedelta(days=7 if day else 1)
    return target.timestamp()


def detect(rate_limit: RateLimit | None, result: Result | None, *, now: datetime) -> Limit | None:
    """The usage limit this iteration ran into, or None."""
    if rate_limit is not None and rate_limit.rejected:
        fatal = rate_limit.error_code == "credits_required"
        return Limit(rate_limit.resets_at, fatal=fatal, reason=rate_limit.limit_type or "")
    if result is None or not result.is_error:
        return None
    text = result.text or " ".join(result.errors)
    if result.api_error_status != 429 and not _LIMIT_TEXT.search(text):
        return None
    if _FATAL_TEXT.search(text):
        return Limit(None, fatal=True, reason=text)
    return Limit(parse_reset(text, now=now), reason=text)
