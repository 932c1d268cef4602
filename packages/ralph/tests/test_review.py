"""Reviews without processes: focuses from their file, verdicts into fix tasks and counts."""

from __future__ import annotations

from ralph.check.verdict import Fix, Judgement, Verdict
from ralph.review import act
from ralph.review.focus import WHOLE, Focus, assign, parse
from ralph.review.panel import Review
from ralph.review.subject import Subject

TEXT = """# The reviewers' focuses

Said before the first section: left out.

## correctness

Does it do what the tasks ask?

## tests

Is it proven?
##
## design
Patterns.
"""


def review(number: int, verdict: Verdict | None, *fixes: Fix, summary: str = "") -> Review:
    judged = None if verdict is None else Judgement(verdict, summary, ("saw it",), fixes)
    refused = "the check agent wrote no verdict file" if verdict is None else None
    focus = Focus(f"f{number}", "look")
    return Review(
        number, focus, judged, refused, "2026-01-01T00:00:00.0Z", "2026-01-01T00:00:01.0Z"
    )


def test_focuses_are_the_sections_in_order_and_text_before_them_is_left_out() -> None:
    assert parse(TEXT) == (
        Focus("correctness", "Does it do what the tasks ask?"),
        Focus("tests", "Is it proven?"),
        Focus("design", "Patterns."),
    )


def test_reviewers_take_the_focuses_in_turn_and_without_any_look_at_everything() -> None:
    focuses = parse(TEXT)
    assert [f.name for f in assign(focuses, 4)] == ["correctness", "tests", "design", "correctness"]
    assert assign((), 2) == [WHOLE, WHOLE]


def test_a_reviewer_with_no_verdict_fails() -> None:
    assert review(1, None).verdict is Verdict.FAIL
    assert not review(1, Verdict.PARTIAL).passed
    assert review(1, Verdict.PASS).passed


def test_fixes_come_from_failing_reviewers_once_each_and_name_findings_when_none_asked() -> None:
    same = Fix("test the files", "a test")
    found = act.fixes(
        [
            review(1, Verdict.PASS, Fix("ignored")),
            review(2, Verdict.FAIL, same),
            review(3, Verdict.FAIL, same, summary="dup"),
            review(4, Verdict.FAIL, summary="too clever"),
            review(5, None),
        ]
    )
    assert found == [
        same,
        Fix("Address the f4 review", "too clever"),
        Fix("Address the f5 review", "the check agent wrote no verdict file"),
    ]


def test_failed_reviews_are_counted_since_the_last_pass_or_handing_over() -> None:
    texts = ["review FAIL on a", "review PASS on b", "review FAIL on c", "other", "review FAIL d"]
    assert act.failures([{"text": t} for t in texts]) == 2
    assert act.failures([{"text": "review FAIL x"}, {"text": act.HANDED + " after 1"}]) == 0


def test_the_comment_says_each_reviewer_s_focus_verdict_and_fixes() -> None:
    subject = Subject("pn-1", "greetings", "a" * 40, "b" * 40)
    text = act.comment(subject, [review(1, Verdict.PASS), review(2, Verdict.FAIL, Fix("t", "d"))])
    assert text.splitlines()[0] == f"review FAIL on {'b' * 12} (2 reviewers, from {'a' * 12})"
    assert "Reviewer 2 (f2): FAIL\n- saw it\n- to fix: t: d" in text
