"""Reading squid's refusals out of a log the agent's requests wrote: grouped, counted, and
never trusted further than its shape."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ralph.egress.refusals import MAX_LINE, UNREADABLE, Refusal, lines, refused

LOG = (
    b"ralph-egress TCP_TUNNEL/200 CONNECT 443 pypi.org\n"
    b"ralph-egress TCP_DENIED/403 CONNECT 443 example.com\n"
    b"ralph-egress TCP_DENIED/403 GET 80 1.1.1.1\n"
    b"ralph-egress TCP_MISS/403 GET 443 files.pythonhosted.org\n"
    b"2026/11/29 01:00:24| a note of squid's own\n"
    b"ralph-egress TCP_DENIED/403 CONNECT 443 EXAMPLE.com\n"
    b"ralph-egress TCP_DENIED/403 CONNECT 22 registry.test\n"
)


def test_refusals_are_grouped_by_destination_in_first_seen_order() -> None:
    assert refused(lines([LOG])) == [
        Refusal("example.com", 443, "CONNECT", 2),
        Refusal("1.1.1.1", 80, "GET", 1),
        Refusal("registry.test", 22, "CONNECT", 1),
    ]
    assert str(Refusal("example.com", 443, "CONNECT", 2)) == "example.com:443 (CONNECT, 2x)"
    assert Refusal("a", None, "-", 1).as_json() == {
        "host": "a",
        "port": None,
        "method": "-",
        "times": 1,
    }


@given(st.lists(st.integers(min_value=0, max_value=len(LOG)), max_size=10))
def test_a_log_read_in_pieces_cut_anywhere_reads_the_same(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [LOG[a:b] for a, b in zip([0, *points], [*points, len(LOG)], strict=True)]
    assert refused(lines(chunks)) == refused(lines([LOG]))


def test_a_line_of_another_shape_counts_as_unreadable_and_hosts_stay_hosts() -> None:
    log = (
        b"ralph-egress TCP_DENIED/403 GET 80 \x1b[31mred\x1b[0m\n"
        b"ralph-egress TCP_DENIED/403 GET 80 a b c\n"
        b"ralph-egress TCP_DENIED/403 GET - -\n"
        b"\xff\xfe not text\n"
    )
    assert refused(lines([log])) == [
        Refusal(UNREADABLE, 80, "GET", 1),
        Refusal(UNREADABLE, None, "-", 1),
        Refusal("-", None, "GET", 1),
    ]


def test_an_endless_line_is_cut() -> None:
    read = list(lines([b"ralph-egress " + b"x" * (MAX_LINE * 10), b"y" * MAX_LINE * 10]))
    assert [len(line) for line in read] == [MAX_LINE]
