"""What the egress proxy lets through: hosts by name, written as the sidecar's squid config.

An entry is a host name (`pypi.org`), a domain and everything under it (`.crates.io`), or
either with one port (`registry.local:8123`); without a port, 80 and 443. Names only: an IP
address is refused, so "allowed" never means "whatever that address serves today", and squid
matches names without looking them up (`dstdomain -n`), so a refused name is never resolved.
Everything not allowed is answered 403 and logged; the log line is what refusals.py counts.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import NamedTuple

from ralph.errors import UsageProblem

PROXY_PORT = 3128  # squid, for the agent's HTTP(S)_PROXY
KEYPROXY_PORT = 8081  # socat, forwarding to the key proxy's socket on the host
WEB_PORTS = (80, 443)
# The access log's one line per request: a marker, then fields no request can split (squid
# writes a dash for an empty field and escapes the URL's host), the host last but one.
LOG_MARKER = "ralph-egress"
ACCESS_LOG = "/tmp/access.log"  # noqa: S108  # in the sidecar, which nothing else shares
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ENTRY = re.compile(rf"^(?P<host>\.?{_LABEL}(?:\.{_LABEL})*)(?::(?P<port>[0-9a-z]*))?$")


class Allowed(NamedTuple):
    """One allowed destination: `host` (a leading dot: and every name below it), its ports."""

    host: str
    ports: tuple[int, ...] = WEB_PORTS

    def __str__(self) -> str:
        return self.host if self.ports == WEB_PORTS else f"{self.host}:{self.ports[0]}"


def parse(text: str) -> Allowed:
    """`host`, `.domain` or either with `:port`; UsageProblem, in one line, otherwise."""
    found = _ENTRY.match(text.strip().lower().rstrip("."))
    if found is None or len(found["host"]) > 253:
        raise UsageProblem(
            f"--allow {text!r}: give a host name (pypi.org), a domain with its subdomains "
            "(.crates.io) or either with a port (host:8080)"
        )
    host, port = found["host"], found["port"]
    ports: tuple[int, ...] = WEB_PORTS
    if port is not None:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageProblem(f"--allow {text!r}: the port must be a number from 1 to 65535")
        ports = (int(port),)
    try:
        ipaddress.ip_address(host.lstrip("."))
    except ValueError:
        return Allowed(host, ports)
    raise UsageProblem(f"--allow {text!r}: allow host names, not IP addresses")


def normalise(entries: Iterable[Allowed]) -> tuple[Allowed, ...]:
    """Sorted, without repeats or a name a domain entry with the same ports covers."""
    unique = sorted(set(entries))
    domains = {(e.host, e.ports) for e in unique if e.host.startswith(".")}
    return tuple(
        e
        for e in unique
        if not any(
            (d, e.ports) in domains and e.host != d and ("." + e.host).endswith(d)
            for d, _ in domains
        )
    )


def squid_conf(entries: Iterable[Allowed], *, address: str = "@ADDRESS@") -> str:
    """squid's configuration: allow `entries`, deny and log everything else.

    `address` is where it listens: the sidecar's address on the run's network, filled in by
    its entrypoint (squid must not answer the other containers on the outside network).
    """
    groups: dict[tuple[int, ...], list[str]] = {}
    for entry in normalise(entries):
        groups.setdefault(entry.ports, []).append(entry.host)
    lines = [
        f"http_port {address}:{PROXY_PORT}",
        "acl CONNECT method CONNECT",
    ]
    for n, (ports, hosts) in enumerate(sorted(groups.items())):
        lines += [
            f"acl ralph_ports_{n} port {' '.join(map(str, ports))}",
            f"acl ralph_hosts_{n} dstdomain -n {' '.join(hosts)}",
            f"http_access allow ralph_hosts_{n} ralph_ports_{n}",
        ]
    lines += [
        "http_access deny all",
        # a proxy, not a cache: nothing is kept, nothing identifies the agent upstream
        "cache deny all",
        "cache_mem 0 MB",
        "via off",
        "forwarded_for delete",
        "pinger_enable off",
        "pid_filename none",
        "logfile_rotate 0",
        "coredump_dir /tmp",
        "shutdown_lifetime 0 seconds",
        f"logformat ralph {LOG_MARKER} %Ss/%>Hs %rm %>rP %>rd",
        f"access_log stdio:{ACCESS_LOG} ralph",
        "cache_log /dev/stderr",
    ]
    return "\n".join(lines) + "\n"
