"""The other agent CLIs in the sandbox image, and where each finds the scripted model.

Each image is the session's sandbox image plus one pinned CLI from the shared cache, labelled
with its version as `sgf sandbox build` labels claude's (gemini's is `sgf sandbox build`'s own,
for a project whose config names it: it needs a node of its own).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import FAKE_TOKEN

PINNED = {"codex": "0.169.0", "opencode": "1.18.33", "gemini": "0.61.0"}
# Where each CLI goes in an image built on the sandbox image (`build_image`).
COPIED = {"codex": "/usr/local/bin/codex", "opencode": "/usr/local/bin/opencode"}


def build_image(base: str, name: str, context: Path, binary: Path) -> str:
    """`base` plus agent `name`'s binary, labelled with its pinned version."""
    tag = f"{base}-with-{name}"
    (context / name).write_bytes(binary.read_bytes())
    (context / name).chmod(0o755)
    (context / "Dockerfile").write_text(
        f"FROM {base}\nCOPY {name} {COPIED[name]}\nLABEL springfield.agent.{name}={PINNED[name]}\n"
    )
    done = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return tag


def sgf_image(project: Project, image: str, agent: str, base: str, claude: Path) -> str:
    """`sgf sandbox build` of an image with `agent` in it, for a project that names it; the
    project's config is left as it was."""
    config = project.root / ".sgf" / "config.toml"
    committed = config.read_bytes()
    project.set_config(agent=agent)
    built = project.sgf(
        "sandbox", "build", "--image", image, "--base", base,
        "--claude-binary", str(claude), timeout=900,
    )  # fmt: skip
    config.write_bytes(committed)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return image


def assert_image_carries(project: Project, image: str, agent: str) -> None:
    """`image` has `agent` at its pinned version: in its label and on its PATH."""
    label = project.run(
        "docker", "image", "inspect", "--format",
        f'{{{{index .Config.Labels "springfield.agent.{agent}"}}}}', image,
    ).stdout.strip()  # fmt: skip
    assert label == PINNED[agent]
    version = project.run("docker", "run", "--rm", "--entrypoint", agent, image, "--version")
    assert PINNED[agent] in version.stdout


def endpoints(agent: str, url: str) -> dict[str, str]:
    """Where each backend's API is: the scripted server, in that backend's variables, with
    the one key it accepts (the claude token the model fixture sets)."""
    if agent == "gemini":
        return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": FAKE_TOKEN}
    if agent == "claude":
        return {}  # the model fixture set ANTHROPIC_BASE_URL and a token
    # codex's own default model sends no tools to a custom provider: name the served model
    return {
        "OPENAI_BASE_URL": f"{url}/v1",
        "OPENAI_API_KEY": FAKE_TOKEN,
        "OPENAI_MODEL": "scripted-1",
    }
