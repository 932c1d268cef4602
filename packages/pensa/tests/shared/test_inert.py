"""Hostile text is inert on the terminal; JSON stays exact."""

from __future__ import annotations

import pytest

from pensa.shared.inert import inert

from ..conftest import Pn

HOSTILE = "x\x1b]0;pwned\x07\x1b[2J\nsecond line\x9b31m\u202eevil"


def test_inert_escapes_c0_c1_esc_del_and_bidi_but_keeps_tab() -> None:
    assert inert("a\tb\x1b[2J\x7f\x9b\u202e") == "a\tb\\x1b[2J\\x7f\\x9b\\u202e"
    assert inert("one\ntwo") == "one\\ntwo"
    assert inert("one\ntwo", multiline=True) == "one\ntwo"


@pytest.mark.process
@pytest.mark.parametrize(
    "command",
    [
        ("list",),
        ("list", "--all"),
        ("ready",),
        ("search", "x"),
        ("show", "{id}"),
        ("history", "{id}"),
    ],
)
def test_human_output_never_carries_a_control_character(pn: Pn, command: tuple[str, ...]) -> None:
    created = pn("create", HOSTILE, "-t", "task", "--description", HOSTILE, "--json")
    assert created.code == 0, created.err
    issue = created.json()["id"]
    assert pn("comment", "add", issue, HOSTILE, "--actor", "ev\x1bil").code == 0
    done = pn(*(part.format(id=issue) for part in command), env={"PN_ACTOR": "a\x1b[31m"})
    assert done.code == 0, done.err
    assert not any(ch in done.out for ch in "\x1b\x07\x9b\u202e"), repr(done.out)
    assert "\\x1b]0;pwned" in done.out or command[0] == "history"


@pytest.mark.process
def test_json_output_keeps_the_exact_text(pn: Pn) -> None:
    created = pn("create", HOSTILE, "-t", "task", "--json").json()
    assert created["title"] == HOSTILE
    assert pn("show", created["id"], "--json").json()["title"] == HOSTILE


@pytest.mark.process
def test_an_error_echoing_input_is_inert(pn: Pn) -> None:
    done = pn("show", "pn-\x1b[2Jnope")
    assert done.code == 1
    assert "\x1b" not in done.err
    assert done.err.count("\n") == 1
