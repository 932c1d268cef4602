"""Credential settings for the container: which pass through as they are, and which never do.

Keys and tokens never enter the container: the key proxy (keyproxy/) holds them on the host
and the agent gets per-run placeholders and the proxy's URLs instead (egress/guard.py). The
model names are no secrets and pass through; so do the endpoints, which the guard then points
at the proxy.
"""

from __future__ import annotations

from collections.abc import Mapping

PLAIN_VARS = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_MODEL",
)


def plain(host: Mapping[str, str]) -> dict[str, str]:
    """The non-secret credential settings set in `host`: fine as container env."""
    return {name: host[name] for name in PLAIN_VARS if host.get(name)}
