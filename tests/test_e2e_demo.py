"""`make demo` (scripts/demo.sh) runs a real build loop to completion and cleans up after itself."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(400)]

ROOT = Path(__file__).resolve().parents[1]


def processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if entry.isdigit() and text.encode() in cmdline:
            found.append(int(entry))
    return found


def test_demo_builds_the_greeter_in_the_sandbox(
    e2e_env: dict[str, str], claude_bin: Path, sandbox_image: str, tmp_path: Path
) -> None:
    env = {**e2e_env, "TMPDIR": str(tmp_path), "SPRINGFIELD_CLAUDE": str(claude_bin)}
    cache = claude_bin.parents[3]
    if cache.name.startswith("claude-code-"):  # reuse the machine's cache, not the test HOME's
        env["SPRINGFIELD_CACHE"] = str(cache.parent)

    done = subprocess.run(
        [str(ROOT / "scripts" / "demo.sh")],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=380,
        check=False,
    )

    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "sgf build exited with 0" in out
    assert "--sandbox none" not in out  # Docker answers here, so the sandbox was used
    assert len(re.findall(r"closed\s+task", out)) == 3
    assert "sent back" not in out  # its own checks (python3 -m unittest) count
    # the closing `sgf status` is piped here: plain rows, whole ids, no box drawing
    after = done.stdout[done.stdout.rindex("Afterwards") :]
    closing = after[: after.index("pn list")]
    assert not set("│─┃━┏┡") & set(closing), closing
    assert re.search(
        r"^build-\d{8}T\d{6}\s.*\scomplete\s+0\s+\d+/6\s+\$\d+\.\d{4}\s", closing, re.M
    ), closing
    project = Path(re.findall(r"project:\s+(\S+)", out)[-1])
    assert (project / "greet.py").is_file()
    assert list((project / ".sgf" / "logs").glob("build-*.log"))
    leftovers = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=springfield.project={project}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert leftovers == []
    image = tomllib.loads((project / ".sgf" / "config.toml").read_text())["docker_template"]
    assert image != sandbox_image  # the demo project built its own image
    subprocess.run(["docker", "image", "rm", image], capture_output=True, check=False)
    assert processes_mentioning(str(project.parent)) == []  # the scripted model was stopped
