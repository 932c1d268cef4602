"""The agent's way out: an allow-list by host name, through a squid sidecar
(docs/security.md).

`guard.py` is the front door a sandbox uses for one run (the key proxy, the network, the
sidecar, the refusals); `policy.py` turns `--allow` entries into squid's configuration;
`sidecar.py` is the Docker side (the run's internal network, the sidecar's image and
container); `refusals.py` reads what squid refused out of its log.
"""

from __future__ import annotations
