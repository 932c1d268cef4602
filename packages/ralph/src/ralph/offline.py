"""A run without a model account: `--scenario FILE` plays FILE on the scripted model server.

ralph starts the server (ralph.testing) for the run, on 127.0.0.1, and gives the agent an
environment that points every API family at it with a credential ralph makes up itself: a
random token the server alone accepts. From there on the run is an ordinary one: in Docker the
key proxy holds that token and the container holds a placeholder, as it would for a real key,
so the offline run goes through the same doors as a real one. The user's own keys, endpoints
and models are left out, so an offline run can never reach, or bill, a real model.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path

from ralph.errors import UsageProblem
from ralph.keyproxy.routes import FAMILIES, SECRET_VARS

# Claude Code tells an OAuth token from an API key by this prefix; with a token it reports the
# scripted usage-limit headers as `rate_limit_event`s, as it does for a subscription login.
TOKEN_PREFIX = "sk-ant-oat01-"  # noqa: S105  # a kind, not a secret
# What codex and opencode ask a custom endpoint for: without a model they ask for their own
# default, whose newer tool protocol the server does not speak (docs/ralph.md, "Agent backends").
OPENAI_MODEL = "scripted-1"
ENDPOINT_VARS = tuple(variable for _, variable, _, _ in FAMILIES)
MODEL_VARS = ("ANTHROPIC_MODEL", "OPENAI_MODEL", "GEMINI_MODEL")


def environment(host: Mapping[str, str], url: str, token: str) -> dict[str, str]:
    """`host` with every model credential, endpoint and model replaced by the server's."""
    dropped = {*SECRET_VARS, *ENDPOINT_VARS, *MODEL_VARS}
    env = {name: value for name, value in host.items() if name not in dropped}
    env.update(
        {
            "ANTHROPIC_BASE_URL": url,
            "CLAUDE_CODE_OAUTH_TOKEN": token,
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": token,
            "OPENAI_MODEL": OPENAI_MODEL,
            "GOOGLE_GEMINI_BASE_URL": url,
            "GEMINI_API_KEY": token,
        }
    )
    # A host login (`~/.claude/.credentials.json`) is used only when no token is set (the key
    # proxy's routes.plan); the token above is set, so the login never leaves the host either.
    return env


@contextlib.contextmanager
def serve(scenario: Path, host: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """Serve `scenario` for the length of the block; yield the run's environment."""
    from ralph.testing.model_server import ModelServer
    from ralph.testing.scenario import ScenarioError, load_scenario

    try:
        played = load_scenario(scenario)
    except (OSError, UnicodeDecodeError) as e:
        raise UsageProblem(f"--scenario {scenario}: cannot read it: {e}") from e
    except ScenarioError as e:
        raise UsageProblem(f"--scenario: {e}") from e
    token = TOKEN_PREFIX + "ralph-offline-" + secrets.token_urlsafe(24)
    with ModelServer(played, key=token) as server:
        yield environment(host, server.url, token)
