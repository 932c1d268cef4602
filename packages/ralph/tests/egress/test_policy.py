"""`--allow` entries: names only, checked in one line each, and squid's config from them."""

from __future__ import annotations

import pytest

from ralph.egress import policy
from ralph.egress.policy import Allowed
from ralph.errors import UsageProblem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pypi.org", Allowed("pypi.org", (80, 443))),
        ("Docs.Python.Org.", Allowed("docs.python.org", (80, 443))),
        (".crates.io", Allowed(".crates.io", (80, 443))),
        ("registry.test:8123", Allowed("registry.test", (8123,))),
        ("localhost", Allowed("localhost", (80, 443))),
    ],
)
def test_a_name_a_domain_or_either_with_a_port_is_allowed(text: str, expected: Allowed) -> None:
    assert policy.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1.1.1.1", "not IP addresses"),
        ("172.17.0.1:80", "not IP addresses"),
        ("pypi.org:0", "port must be"),
        ("pypi.org:http", "port must be"),
        ("pypi.org:70000", "port must be"),
        ("https://pypi.org", "give a host name"),
        ("pypi.org/simple", "give a host name"),
        ("evil.com acl all", "give a host name"),
        ("*.crates.io", "give a host name"),
        ("", "give a host name"),
        ("::1", "give a host name"),
    ],
)
def test_anything_else_is_one_line_saying_what_to_give(text: str, why: str) -> None:
    with pytest.raises(UsageProblem, match=why) as caught:
        policy.parse(text)
    assert "\n" not in str(caught.value)


def test_repeats_and_names_a_domain_covers_are_dropped() -> None:
    entries = [policy.parse(t) for t in
               ["crates.io", ".crates.io", "static.crates.io", "pypi.org", "pypi.org",
                "static.crates.io:8080"]]  # fmt: skip
    assert [str(e) for e in policy.normalise(entries)] == [
        ".crates.io",
        "pypi.org",
        "static.crates.io:8080",  # another port: the domain's entry does not cover it
    ]


def test_squid_allows_each_entry_on_its_ports_and_denies_the_rest() -> None:
    conf = policy.squid_conf(
        [policy.parse("pypi.org"), policy.parse("registry.test:8123")], address="10.0.0.2"
    )
    lines = conf.splitlines()
    assert lines[0] == "http_port 10.0.0.2:3128"
    assert "acl ralph_ports_0 port 80 443" in lines
    assert "acl ralph_hosts_0 dstdomain -n pypi.org" in lines
    assert "acl ralph_ports_1 port 8123" in lines
    assert "acl ralph_hosts_1 dstdomain -n registry.test" in lines
    assert lines.index("http_access deny all") > lines.index(
        "http_access allow ralph_hosts_1 ralph_ports_1"
    )
    assert "access_log stdio:/tmp/access.log ralph" in lines


def test_nothing_allowed_denies_everything() -> None:
    conf = policy.squid_conf([])
    assert "http_access allow" not in conf
    assert "http_access deny all" in conf
