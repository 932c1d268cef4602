"""ralph.render.Output: plain and styled output, closed pipes, long lines."""

from __future__ import annotations

import io

from ralph.render import Output


def test_plain_output_has_no_escapes_and_styled_output_has_them() -> None:
    plain, styled, log = io.StringIO(), io.StringIO(), io.StringIO()
    Output(plain, io.StringIO(), styled=False).banner(1, 2, "L")
    Output(styled, io.StringIO(), styled=True, log=log).banner(1, 2, "L")
    assert "Iteration 1 of 2 [L]" in plain.getvalue()
    assert "\x1b[" not in plain.getvalue()
    assert "\x1b[" in styled.getvalue()
    assert log.getvalue() == plain.getvalue()


def test_output_survives_a_closed_stdout() -> None:
    stdout, log = io.StringIO(), io.StringIO()
    out = Output(stdout, io.StringIO(), styled=False, log=log)
    stdout.close()
    out.text("still logged")
    out.text("and again")
    assert log.getvalue() == "still logged\nand again\n"


def test_long_lines_are_not_wrapped_on_a_terminal() -> None:
    styled = io.StringIO()
    Output(styled, io.StringIO(), styled=True).text("w" * 500)
    assert "w" * 500 in styled.getvalue()
