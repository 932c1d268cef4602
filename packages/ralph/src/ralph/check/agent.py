"""The check agent: a second agent, in the sandbox, that holds the work to its task's contract.

It runs in a container of its own (sandbox.start_check) on a fresh checkout of the commit
about to land, made from the project's objects (read-only), so nothing the doer left
uncommitted takes part. It sees three folders of this check's own, at their host paths: `in`
(read-only: the contracts, the Verify commands' evidence), `out` (its verdict file) and its
HOME (its backend's configuration, written here as for the doer). No workspace, no tracker:
it cannot claim, close or commit. The backend (and model) may differ from the doer's.

What it writes is agent-written data: verdict.read takes the file as data or not at all, and
no verdict is a FAIL.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ralph import proc, safefile
from ralph import sandbox as sandboxes
from ralph.afk import Afk
from ralph.check.contract import Contract
from ralph.check.verdict import Evidence, Judgement, VerdictRefused, read
from ralph.governor import Governor
from ralph.models import CheckAgent, Config, Prompt
from ralph.render import Output

VERDICT = "verdict.json"
# "$1" the commit; the rest the agent's argv. The checkout lives and dies with the container.
SCRIPT = """set -e
dir=$(mktemp -d)/checkout
git init -q "$dir"
cd "$dir"
echo "$RALPH_OBJECTS" > .git/objects/info/alternates
git -c core.hooksPath=/dev/null -c advice.detachedHead=false checkout -q --detach "$1"
shift
exec "$@"
"""


@dataclass(frozen=True, slots=True)
class Folders:
    """One check's folders on the host, under the run's own state folder."""

    top: Path

    @property
    def inputs(self) -> Path:
        return self.top / "in"

    @property
    def out(self) -> Path:
        return self.top / "out"

    @property
    def home(self) -> Path:
        return self.top / "home"

    def make(self) -> None:
        for folder in (self.inputs, self.out, self.home):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o755)  # the sandbox's own user reads `in`; `out` and HOME it is given


def prompt_text(*, folders: Folders, commit: str, base: str | None) -> str:
    """The check agent's prompt (check/prompt.md) with this check's paths filled in."""
    text = resources.files("ralph.check").joinpath("prompt.md").read_text(encoding="utf-8")
    values = {
        "in": str(folders.inputs),
        "verdict": str(folders.out / VERDICT),
        "commit": commit,
        "base": base or "(none: the branch had no commit)",
        "diff": f"git diff {base} {commit}" if base else f"git show {commit}",
    }
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def evidence_markdown(evidence: Sequence[Evidence]) -> str:
    """The Verify commands' results as the check agent reads them (in/evidence.md)."""
    if not evidence:
        return "No Verify command was run: judge the work by reading it.\n"
    parts = []
    for e in evidence:
        whose = f"{e.task}'s Verify" if e.task else "the project's check_command"
        parts.append(f"## `{e.command}` ({whose}): exit {e.status}\n\n```\n{e.output}\n```\n")
    return "\n".join(parts)


def write_inputs(
    folders: Folders, contracts: Sequence[Contract], evidence: Sequence[Evidence]
) -> None:
    tasks = "\n".join(c.as_markdown() for c in contracts) or "(no task named this work)\n"
    safefile.replace(folders.inputs / "task.md", tasks.encode())
    safefile.replace(folders.inputs / "evidence.md", evidence_markdown(evidence).encode())
    for name in ("task.md", "evidence.md"):
        (folders.inputs / name).chmod(0o644)


def checker_config(config: Config, checker: CheckAgent, prompt: str) -> Config:
    """The doer's configuration with the check agent's backend, command, model and prompt,
    and none of the doer's hooks or extra flags."""
    args = ("--model", checker.model) if checker.model and checker.agent == "claude" else ()
    return dataclasses.replace(
        config,
        agent=checker.agent,
        command=checker.command or checker.agent,
        prompt=Prompt(prompt),
        agent_args=args,
        settings=None,
        afk=True,
    )


def model_env(checker: CheckAgent) -> dict[str, str]:
    """The variable that names the model for backends that take it from the environment."""
    if not checker.model or checker.agent == "claude":
        return {}
    return {"GEMINI_MODEL" if checker.agent == "gemini" else "OPENAI_MODEL": checker.model}


@dataclass
class Starter:
    """Afk's way into the sandbox for the check agent: a check container, not the loop's."""

    sandbox: sandboxes.Sandbox
    folders: Folders
    commit: str
    env: Mapping[str, str]

    def start(self, argv: Sequence[str], *, stdin: bytes) -> sandboxes.Running:
        f = self.folders
        shares = [
            sandboxes.Share(f.inputs),
            sandboxes.Share(f.out, writable=True),
            sandboxes.Share(f.home, writable=True),
        ]
        return self.sandbox.start_check(
            ["/bin/sh", "-c", SCRIPT, "ralph-check-agent", self.commit, *argv],
            stdin=stdin,
            env=self.env,
            shares=shares,
            home=f.home,
        )


@dataclass
class Judge:
    """Runs the check agent on one commit and reads its verdict."""

    config: Config
    checker: CheckAgent
    sandbox: sandboxes.Sandbox
    out: Output
    interrupts: proc.Interrupts
    governor: Governor
    env: Mapping[str, str]
    state: Path  # the run's own folder: each check's folders go under it, and with it

    def judge(
        self,
        commit: str,
        *,
        base: str | None,
        contracts: Sequence[Contract],
        evidence: Sequence[Evidence],
        number: int,
    ) -> Judgement:
        """The agent's verdict on `commit`; VerdictRefused when it gave none ralph takes."""
        folders = Folders(self.state / "checks" / str(number))
        shutil.rmtree(folders.top, ignore_errors=True)
        folders.make()
        try:
            write_inputs(folders, contracts, evidence)
            text = prompt_text(folders=folders, commit=commit, base=base)
            config = checker_config(self.config, self.checker, text)
            env = {**self.env, **model_env(self.checker)}
            backend = config.backend(env)
            agent_vars = backend.setup(folders.home, self.sandbox.agent_setup_env())
            starter = Starter(self.sandbox, folders, commit, agent_vars)
            afk = Afk(config, starter, self.out, self.interrupts, self.governor, env)
            attempt = afk.run()
            if attempt.result is not None:
                self.governor.spend(attempt.result)
            if attempt.interrupted:
                raise VerdictRefused("the check agent was interrupted")
            return read(folders.out / VERDICT)
        finally:
            # the agent's files go with the check: rmtree never follows a link it planted
            shutil.rmtree(folders.top, ignore_errors=True)
