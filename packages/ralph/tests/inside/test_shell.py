"""The command-line reader the guard and the checklist share (inside/shell.py, words.py)."""

from __future__ import annotations

import re

import pytest

from ralph.inside.shell import Unreadable, parse
from ralph.inside.words import Command, Kind


def words(command: Command) -> list[str]:
    return [w.text for w in command.words]


def test_a_comment_ends_the_command_and_its_apostrophe_is_no_quote() -> None:
    [reset] = parse("git reset --hard # don't keep this")
    assert words(reset) == ["git", "reset", "--hard"]
    [log] = parse("git log --format=%h#x")  # a # inside a word is no comment
    assert words(log) == ["git", "log", "--format=%h#x"]


def test_a_heredoc_body_is_data_for_the_command_that_reads_it() -> None:
    cat, status = parse("cat > a.py <<'EOF'\nit's data; rm -rf /\nEOF\ngit status")
    assert words(cat) == ["cat"]
    assert [w.text for w in cat.writes] == ["a.py"]
    assert cat.stdin is not None
    assert cat.stdin.plain
    assert cat.stdin.text == "it's data; rm -rf /"
    assert words(status) == ["git", "status"]


def test_an_unquoted_heredoc_runs_its_substitutions() -> None:
    cat, push = parse("cat <<EOF\nsee $(git push -f) don't\nEOF")
    assert words(push) == ["git", "push", "-f"]
    assert cat.stdin is not None
    assert not cat.stdin.plain  # it expands before the command reads it


def test_nested_commands_come_before_the_one_holding_them() -> None:
    found = parse('echo "$(git rev-parse HEAD)" `date` <(ls x)')
    assert [words(c) for c in found] == [
        ["git", "rev-parse", "HEAD"],
        ["date"],
        ["ls", "x"],
        ["echo", "$(git rev-parse HEAD)", "`date`", "<(ls x)"],
    ]
    echo = found[-1]
    assert [p.kind for w in echo.words[1:] for p in w.parts] == [Kind.VAR] * 3
    assert echo.words[1].parts[0].quoted
    assert not echo.words[1].splits
    assert echo.words[2].splits


def test_a_subshell_has_its_own_scope_and_pipes_are_marked() -> None:
    cd, make, rm, tail = parse("(cd src && make) ; rm -rf x | tail")
    assert cd.scope == make.scope != rm.scope == ()
    assert rm.fed_by is None
    assert tail.fed_by == rm.words


def test_words_keep_their_expansions_apart_from_literal_text() -> None:
    [rm] = parse("rm -rf ~/x {a,b} *.pyc \"$HOME\"/y '$lit' $'it\\'s' a\\ b")
    kinds = [[p.kind for p in w.parts] for w in rm.words[2:]]
    assert kinds == [
        [Kind.TILDE, Kind.LIT],
        [Kind.BRACE],
        [Kind.GLOB, Kind.LIT],
        [Kind.VAR, Kind.LIT],
        [Kind.LIT],
        [Kind.LIT],
        [Kind.LIT],
    ]
    assert [w.text for w in rm.words[6:]] == ["$lit", "it's", "a b"]


def test_redirects_name_the_files_they_write_and_not_descriptors() -> None:
    [cmd] = parse("make 2>&1 >out.log 2>>err.log &>both <in.txt >&also")
    assert [w.text for w in cmd.writes] == ["out.log", "err.log", "both", "also"]
    assert words(cmd) == ["make"]


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("echo 'x", "' quote is never closed; close it"),
        ('echo "x', '" quote is never closed; close it'),
        ("echo $(ls", "never closed; close it"),
        ("echo `ls", "never closed; close it"),
        ("echo ${x", "never closed; close it"),
        ("ls )", "closes nothing"),
        ("case $x in a) ls;; esac", "use `if ... elif ... fi`"),
        ("cat >", "name the file"),
    ],
)
def test_what_the_reader_cannot_follow_says_how_to_write_it(command: str, says: str) -> None:
    with pytest.raises(Unreadable, match=re.escape(says)):
        parse(command)
