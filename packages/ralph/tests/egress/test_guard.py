"""The guard's plan, before any Docker: what the agent sees in each mode, and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.egress import policy
from ralph.egress.guard import OPEN, Guard, extra_hosts
from ralph.errors import SandboxFailed

KEY = "sk-ant-api03-a-key-of-the-user"


def test_the_allow_list_sends_the_model_to_the_sidecar_and_the_rest_to_squid() -> None:
    guard = Guard.plan(network=None, env={"ANTHROPIC_API_KEY": KEY, "HOME": "/nowhere"},
                       allow=[policy.parse("pypi.org"), policy.parse(".crates.io")])  # fmt: skip
    try:
        env = guard.agent_env
        assert env["ANTHROPIC_BASE_URL"] == "http://ralph-egress:8081/anthropic"
        assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://ralph-egress:3128"
        assert "ralph-egress" in env["NO_PROXY"].split(",")
        assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert KEY not in str(env)
        assert guard.network is not None
        assert guard.network.startswith("ralph-egress-")
        assert guard.cap_drop == ["NET_RAW"]
        assert guard.dns_options == ["timeout:1", "attempts:1"]
        assert guard.describe() == (
            "network: allow-list (the model through ralph's key proxy; .crates.io, pypi.org); "
            "keys stay on the host"
        )
        assert (guard.folder / "socket" / "keyproxy.sock").exists()
    finally:
        guard.close()
    assert not guard.folder.exists()
    guard.close()  # idempotent


def test_an_open_network_keeps_the_key_proxy_on_the_hosts_side() -> None:
    asked: list[str] = []

    def gateway(name: str) -> str:
        asked.append(name)
        return "127.0.0.1"  # stands in for the network's gateway address

    for network in (OPEN, "mynet", "host"):
        guard = Guard.plan(network=network, env={"OPENAI_API_KEY": KEY}, gateway=gateway)
        try:
            assert guard.network == (None if network == OPEN else network)
            assert guard.agent_env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
            assert "HTTPS_PROXY" not in guard.agent_env
            assert guard.cap_drop == []
            assert guard.dns_options == []
            assert guard.describe().startswith("network: open (")
            assert guard.refusals() == []
        finally:
            guard.close()
    assert asked == ["bridge", "mynet"]  # host networking shares the host's loopback


def test_extra_hosts_are_name_address_pairs() -> None:
    assert extra_hosts("registry.test:host-gateway, other:10.0.0.2,") == {
        "registry.test": "host-gateway",
        "other": "10.0.0.2",
    }
    assert extra_hosts("") == {}


def test_the_allow_list_needs_an_engine_on_this_machine() -> None:
    with pytest.raises(SandboxFailed, match="run with --network open"):
        Guard.plan(network=None, env={"DOCKER_HOST": "tcp://build-box:2376"})
    local = Guard.plan(network=None, env={"DOCKER_HOST": "unix:///run/docker.sock"})
    local.close()


def test_a_temporary_folder_too_deep_for_a_socket_puts_the_key_proxy_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    guard = Guard.plan(network=None, env={"ANTHROPIC_API_KEY": KEY, "HOME": "/nowhere"})
    try:
        assert guard.folder.parent == Path("/tmp")
        assert (guard.folder / "socket" / "keyproxy.sock").is_socket()
    finally:
        guard.close()
