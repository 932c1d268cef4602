"""ralph's check step and pensa agree on the assignee that takes a task out of the loops'
queue: the packages share no code, so each names it and this test holds them together."""

from __future__ import annotations

from pensa.ready import HUMAN
from ralph.check import act


def test_the_check_hands_tasks_to_pensas_human() -> None:
    assert act.HUMAN == HUMAN
