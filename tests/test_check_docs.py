"""scripts/check_docs.py, the checker `make lint` runs over README.md and docs/*.md: it passes
the repository's own manual, and fails, naming the file and line, on a broken link or anchor
and on an example that no longer parses or compiles. Each case is a small manual of its own,
checked by the script as `make lint` runs it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / "scripts" / "check_docs.py"

README = """\
# Demo

```sh
make demo
```

Read [the guide](docs/guide.md), its [beads
part](docs/guide.md#coming-from-beads-pn-import---from-beads-path),
the [second Same](docs/guide.md#same-1), [this
page's start](#demo), [the guide's notify](docs/guide.md#being-told-notify) and
[a site](https://example.com/#anything). `[not a link](nowhere.md)` is code.
"""

GUIDE = """\
# Guide

## Coming from beads: `pn import --from-beads PATH`

## Same

## Same

## Being told: `notify`

```sh
git init my-project && cd my-project   # any other program is not checked
pn create "a task" -t task -p p1 --label x
sgf build -a 20 --max-cost 5 --parallel 2
ralph --sandbox none 1 "Fix the failing test" -- --model sonnet
SPRINGFIELD_DEMO_MODEL=real make demo
sgf --version && pn --version
```

```console
$ sgf status --json
anything printed [in brackets] or --not-an-option
$ pn list \\
    --status open
```

```python
from pathlib import Path

print(Path(".").resolve())
```

```toml
# one way
notify = "a"
# the other
notify = "b"
```
"""


def manual(tmp_path: Path, readme: str = README, guide: str = GUIDE) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "docs" / "guide.md").write_text(guide)
    (tmp_path / "Makefile").write_text("demo:\n\techo demo\n")
    return tmp_path


def check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECKER), str(root)], capture_output=True, text=True, check=False
    )


def test_the_repository_manual_passes() -> None:
    done = check(ROOT)
    assert done.returncode == 0, done.stderr
    found = re.findall(r"(\d+) ([a-z ]+?)(?=,|:)", done.stdout)
    counts = {what: int(n) for n, what in found}
    assert counts["pages"] >= 10
    assert counts["links"] >= 40
    assert counts["commands"] >= 20  # the walk found the manual's commands, not an empty list


def test_a_manual_whose_links_and_examples_are_right_passes(tmp_path: Path) -> None:
    done = check(manual(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "2 pages, 6 links, 9 commands, 1 python blocks, 1 toml blocks: ok" in done.stdout


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "(docs/guide.md)",
            "(docs/gide.md)",
            "README.md:7: link to docs/gide.md: docs/gide.md does not exist",
        ),
        (
            "#same-1)",
            "#same-2)",
            "README.md:9: link to docs/guide.md#same-2: guide.md has no heading #same-2",
        ),
        ("(#demo)", "(#intro)", "README.md:10: link to #intro: README.md has no heading #intro"),
    ],
)
def test_a_broken_link_fails_naming_file_and_line(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    done = check(manual(tmp_path, readme=README.replace(old, new, 1)))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [problem]


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "pn create",
            "pn craete",
            "docs/guide.md:13: `pn craete 'a task' -t task -p p1 --label x` does not parse: "
            "unknown command `pn craete`",
        ),
        (
            "--max-cost 5",
            "--max-costs 5",
            "docs/guide.md:14: `sgf build -a 20 --max-costs 5 --parallel 2` does not parse: "
            "No such option '--max-costs'",
        ),
        (
            "ralph --sandbox none",
            "ralph --sandbox nowhere",
            "docs/guide.md:15: `ralph --sandbox nowhere 1 'Fix the failing test' -- --model "
            "sonnet` does not parse: Invalid value for '--sandbox'",
        ),
        (
            "real make demo",
            "real make dmeo",
            "docs/guide.md:16: `make dmeo`: the Makefile has no target dmeo",
        ),
        (
            "    --status open",
            "    --state open",
            "docs/guide.md:23: `pn list --state open` does not parse: No such option '--state'",
        ),
        (
            'print(Path(".").resolve())',
            'print(Path(".").resolve()',
            "docs/guide.md:30: python does not compile: '(' was never closed",
        ),
        (
            'notify = "b"',
            "notify = b",
            "docs/guide.md:36: toml does not parse: Invalid value (at line 2, column 10)",
        ),
    ],
)
def test_an_example_that_no_longer_parses_fails_naming_file_and_line(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    assert old in GUIDE
    done = check(manual(tmp_path, guide=GUIDE.replace(old, new, 1)))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(problem), line
