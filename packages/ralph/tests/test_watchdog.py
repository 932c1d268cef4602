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
