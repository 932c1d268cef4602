"""ralph.render.Output: plain and styled output, closed pipes, long lines."""

from __future__ import annotations

import io

from ralph.render import Output
from ralph.stream import NOTHING_DONE, ApiRetry, Result


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


def test_styled_output_prints_markup_in_agent_text_as_is() -> None:
    """Agent text with `[/x]` (a closing tag with no opening one) or `[bold]` is
    printed literally on a terminal; rich would raise MarkupError or restyle it."""
    out = io.StringIO()
    render = Output(out, io.StringIO(), styled=True)
    render.text("done [/x] and [bold]not bold[/bold] [link=http://evil]click[/link]")
    render.warning("could not release [/anything]")
    shown = out.getvalue()
    assert "done [/x] and [bold]not bold[/bold] [link=http://evil]click[/link]" in shown
    assert "could not release [/anything]" in shown
    assert "\x1b]8;" not in shown  # no hyperlink escape made from the agent's text


def test_retries_are_one_cut_line_and_ralph_s_own_verdict_is_no_agent_s_error() -> None:
    out = io.StringIO()
    render = Output(out, io.StringIO(), styled=False)
    render.event(ApiRetry(3, None, "waiting for network " + "x" * 300, offline=True))
    render.event(Result(subtype=NOTHING_DONE, is_error=True, text="the model made no tool call"))
    render.event(Result(subtype="error", is_error=True, text="boom"))
    retry, verdict, error = out.getvalue().splitlines()
    assert retry.startswith("   ~ API retry 3 (waiting for network xxx")
    assert retry.endswith("...)")
    assert len(retry) < 130
    assert verdict == "warning: the model made no tool call"
    assert error == "warning: agent reported an error: boom"
