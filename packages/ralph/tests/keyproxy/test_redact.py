"""Masking secrets in responses: in headers, and in bodies cut at any byte."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ralph.keyproxy.redact import Redactor

SECRET = "sk-ant-api03-CANARY-0123456789abcdef"
MASKED = "*" * len(SECRET)


def stream(redactor: Redactor, chunks: list[bytes]) -> tuple[bytes, list[bytes]]:
    sent = [redactor.feed(chunk) for chunk in chunks]
    return b"".join(sent) + redactor.flush(), sent


def test_a_secret_in_one_chunk_is_masked_to_its_own_length() -> None:
    body = f'{{"error": "invalid key {SECRET}"}}'.encode()
    out, _ = stream(Redactor([SECRET]), [body])
    assert out == f'{{"error": "invalid key {MASKED}"}}'.encode()
    assert len(out) == len(body)  # a Content-Length stays true


@given(st.lists(st.integers(min_value=0, max_value=120), max_size=8), st.sampled_from([0, 1, 3]))
def test_a_secret_cut_anywhere_never_passes_and_nothing_else_changes(
    cuts: list[int], copies: int
) -> None:
    body = ("data: " + f"x {SECRET} y " * copies + "end\n\n").encode()
    points = sorted({min(c, len(body)) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    out, _ = stream(Redactor([SECRET]), chunks)
    assert SECRET.encode() not in out
    assert out == body.replace(SECRET.encode(), MASKED.encode())


def test_a_whole_event_is_sent_at_once_and_only_a_possible_start_is_held() -> None:
    redactor = Redactor([SECRET])
    assert redactor.feed(b"event: ping\ndata: {}\n\n") == b"event: ping\ndata: {}\n\n"
    assert redactor.feed(b"data: sk-ant-") == b"data: "  # it could become the secret
    assert redactor.feed(b"other\n\n") == b"sk-ant-other\n\n"


def test_headers_are_masked_and_short_values_are_not_secrets() -> None:
    redactor = Redactor([SECRET, "abc", ""])
    assert redactor.text(f"Bearer {SECRET}") == f"Bearer {MASKED}"
    assert redactor.feed(b"abc abc") == b"abc abc"


def test_of_two_secrets_sharing_a_start_both_are_masked() -> None:
    other = SECRET + "-longer"
    out, _ = stream(Redactor([SECRET, other]), [other.encode()[:20], other.encode()[20:], b"!"])
    assert out == b"*" * len(other) + b"!"
