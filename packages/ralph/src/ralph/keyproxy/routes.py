"""Which model endpoints the key proxy serves, with which credentials, and what the agent sees.

One route per API family, each a path prefix at the proxy: `anthropic` (claude), `openai`
(codex, opencode), `gemini` (gemini). Its upstream is the endpoint the user configured
(`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`: a gateway, a local model
server, one on the host's loopback) or the provider's own. Each credential set on the host
gets a placeholder: a random value per run, made to look like the real one's kind (Claude Code
tells an OAuth token from an API key by its `sk-ant-oat` prefix). The agent's environment holds
the placeholders and the proxy's URLs; only the proxy, on the host, holds the real values.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# (route, the variable naming its endpoint, the provider's own endpoint, its credentials)
FAMILIES = (
    (
        "anthropic",
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"),
    ),
    ("openai", "OPENAI_BASE_URL", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    (
        "gemini",
        "GOOGLE_GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com",
        ("GEMINI_API_KEY",),
    ),
)
# Every credential variable a backend reads: none of them reaches the container with its value.
SECRET_VARS = tuple(var for *_, variables in FAMILIES for var in variables)
# Where a credential may travel in a request: the only places a placeholder is replaced.
AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
AUTH_QUERY = "key"
_KIND = re.compile(r"[A-Za-z]{2,8}(?:-[A-Za-z0-9]{2,8}){0,2}-")


class Source(Protocol):
    """Where a credential's current value comes from."""

    def current(self) -> str:
        """The value to send upstream now (an OAuth login refreshes itself first)."""
        ...

    def known(self) -> tuple[str, ...]:
        """Every secret value it holds, to be masked in responses."""
        ...


@dataclass(frozen=True, slots=True)
class Static:
    """A key or token from the host's environment."""

    value: str

    def current(self) -> str:
        return self.value

    def known(self) -> tuple[str, ...]:
        return (self.value,)


@dataclass(frozen=True, slots=True)
class Credential:
    """One credential: the container's variable, its placeholder there, its real source."""

    variable: str
    placeholder: str
    source: Source


@dataclass(frozen=True, slots=True)
class Route:
    """One API family: `/<name>/...` at the proxy is `<upstream>/...`."""

    name: str
    variable: str
    upstream: str
    credentials: tuple[Credential, ...] = ()

    def real(self, value: str) -> str:
        """`value` (a header or query value) with each of this route's placeholders replaced."""
        for credential in self.credentials:
            if credential.placeholder in value:
                value = value.replace(credential.placeholder, credential.source.current())
        return value

    def secrets(self) -> list[str]:
        return [s for c in self.credentials for s in c.source.known()]


class Login(Source, Protocol):
    """The host's Claude Code login (keyproxy.login.ClaudeLogin), as a route uses it."""

    def present(self) -> bool:
        """Whether the host has a login to use."""
        ...

    def placeholder(self) -> str:
        """The stand-in the agent sees for the login's token."""
        ...


def placeholder(real: str) -> str:
    """A fresh random stand-in for `real`, with its kind's prefix (`sk-ant-oat01-`...)."""
    kind = _KIND.match(real)
    return f"{kind.group(0) if kind else ''}ralph-placeholder-{secrets.token_urlsafe(24)}"


def plan(host: Mapping[str, str], *, login: Login | None = None) -> tuple[Route, ...]:
    """The routes for the credentials and endpoints set in `host`.

    `login` is the host's Claude Code login (`~/.claude/.credentials.json`): used, as an
    OAuth token, only when no Anthropic key or token is set.
    """
    routes = []
    for name, variable, default, names in FAMILIES:
        found = [
            Credential(var, placeholder(host[var]), Static(host[var]))
            for var in names
            if host.get(var)
        ]
        if name == "anthropic" and not found and login is not None and login.present():
            found.append(Credential("CLAUDE_CODE_OAUTH_TOKEN", login.placeholder(), login))
        upstream = (host.get(variable) or default).rstrip("/")
        routes.append(Route(name, variable, upstream, tuple(found)))
    return tuple(routes)


def agent_env(routes: tuple[Route, ...], proxy_url: str) -> dict[str, str]:
    """The agent's view: each endpoint variable names the proxy, each credential its placeholder."""
    env = {}
    for route in routes:
        env[route.variable] = f"{proxy_url.rstrip('/')}/{route.name}"
        env.update({c.variable: c.placeholder for c in route.credentials})
    return env


def host_login(host: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its login on this machine (Linux: a file in `~/.claude/`)."""
    config = host.get("CLAUDE_CONFIG_DIR")
    root = Path(config) if config else Path(host.get("HOME", "~")).expanduser() / ".claude"
    return root / ".credentials.json"
