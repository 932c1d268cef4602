"""The idle and post-result deadlines of ralph.watchdog."""

from __future__ import annotations

from ralph.watchdog import Expiry, Watchdog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_watchdog_idle_deadline_moves_with_activity() -> None:
    clock = Clock()
    watch = Watchdog(idle=10, post_result=3, clock=clock)
    clock.now += 8
    assert watch.remaining() == 2
    watch.activity()
    assert watch.remaining() == 10
    clock.now += 10
    assert watch.expired() is Expiry.IDLE
    assert watch.fired is Expiry.IDLE


def test_watchdog_post_result_deadline_is_fixed_from_the_result() -> None:
    clock = Clock()
    watch = Watchdog(idle=10, post_result=3, clock=clock)
    watch.result_seen()
    clock.now += 2
    watch.activity()  # output after the result does not extend the grace
    watch.result_seen()
    assert watch.remaining() == 1
    assert watch.expired() is None
    clock.now += 1
    assert watch.expired() is Expiry.POST_RESULT


def test_failing_api_deadline_runs_from_the_first_futile_retry_until_an_answer() -> None:
    clock = Clock()
    watch = Watchdog(idle=100, post_result=3, clock=clock, api_wait=20)
    assert watch.remaining() == 100
    clock.now += 50
    watch.failing()
    clock.now += 15
    watch.activity()  # a retry line is output: it keeps the idle deadline away, not this one
    watch.failing()  # the next retry leaves the run of them where it began
    assert watch.remaining() == 5
    watch.answered()  # the API answered after all
    assert watch.remaining() == 100
    watch.failing()
    clock.now += 19
    assert watch.expired() is None
    clock.now += 1
    assert watch.expired() is Expiry.API_FAILING


def test_without_an_api_wait_retries_never_stop_the_agent() -> None:
    clock = Clock()
    watch = Watchdog(idle=10, post_result=3, clock=clock)
    watch.failing()
    clock.now += 10
    assert watch.expired() is Expiry.IDLE
