"""The host claims each iteration's task before the agent starts (`--claim ARGS`).

sgf sets it for loops that publish claims through git (`claims = "git"`): ralph runs
`pn claim-next ARGS --json` in the project, on the host, as the loop's actor, with the
environment it was given (`PN_CLAIMS=git`), so pn publishes the claim on the remote's claims
ref from the host's own repository. The agent's pn gets `PN_CLAIMS=held` (Config.loop_env):
its `pn claim-next` answers with the task claimed here and claims nothing itself, so the
sandbox needs neither network access to the remote nor credentials for it. A task the agent
leaves unfinished is the one claimed again next time: one claim per agent. The closes and
releases reach the remote's claims ref with the next claim, or with `pn release` at the
loop's end (handback.py).

Through pn's command line (pncli.py): ralph never imports pensa's tracker.
"""

from __future__ import annotations

from collections.abc import Mapping

from ralph import pncli
from ralph.errors import RalphError
from ralph.models import Config

# pn retries a claim that lost a race (PN_CLAIM_TRIES, backoff up to a second each): minutes
# at most even on a busy remote.
TIMEOUT = 600.0


class ClaimFailed(RalphError):
    """The host could not claim the iteration's task: no agent may start on a guess."""

    code = "claim_failed"


def claim(config: Config, env: Mapping[str, str]) -> str | None:
    """Claim the next task for the loop's actor; its id, or None when nothing is ready.

    Raises ClaimFailed (pn's own line) when pn could not claim, e.g. the remote out of reach."""
    assert config.claim is not None
    mine = config.loop_env(env)
    pn_env = {k: v for k, v in env.items() if k != "PN_SHARED_DB"}
    pn_env.update(PN_ACTOR=mine["PN_ACTOR"], PN_STUCK_AFTER=mine["PN_STUCK_AFTER"])
    answer = pncli.ask(
        ["claim-next", *config.claim], cwd=config.project, env=pn_env, timeout=TIMEOUT
    )
    if not answer.ok:
        raise ClaimFailed(f"cannot claim the iteration's task: {answer.error}")
    if answer.value is None:
        return None
    task = answer.value.get("id") if isinstance(answer.value, dict) else None
    if not isinstance(task, str):
        raise ClaimFailed(f"pn claim-next answered {answer.value!r}, not an issue")
    return task
