"""The credential injector: keys and tokens stay on the host, the agent holds placeholders.

`routes.py` decides what the agent sees (each endpoint variable pointing at the proxy, each
credential a per-run placeholder) and where each API family really goes; `server.py` is the
HTTP proxy that swaps the placeholders for the real values and streams the answers back;
`redact.py` masks the real values in everything sent back; `login.py` keeps a logged-in
Claude Code's OAuth token fresh on the host. docs/security.md says what this
protects; the egress sidecar (ralph/egress/) is how a container on its own network reaches it.
"""

from __future__ import annotations
