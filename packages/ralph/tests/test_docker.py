"""The loop in real Docker containers (base image springfield-base:bookworm, fake agent)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from ralph import proc
from ralph.dockerbox import LABEL_LOOP, DockerSandbox
from ralph.models import Config, Prompt, SandboxKind, Timeouts

from .conftest import Git, Script, agent_in, loop_containers, run_ralph

pytestmark = pytest.mark.docker

WaitFor = Callable[..., None]
Spawn = Callable[..., "subprocess.Popen[str]"]
SECRET = "sk-ant-test-secret-value-123"


def test_docker_loop_runs_agent_as_host_user_with_sgf_read_only(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str, git: Git
) -> None:
    (project / ".sgf").mkdir()
    (project / ".sgf" / "config.toml").write_text("stack = 'python'\n")
    steps = [
        ["whoami"],
        ["try_write", ".sgf/config.toml"],
        ["try_write", ".sgf/new.md"],
        ["touch", "made/by/agent.txt"],
        ["env", "ANTHROPIC_API_KEY"],
        ["env", "GIT_AUTHOR_EMAIL"],
        ["env", "RALPH_LOOP_ID"],
        ["env", "PN_ACTOR"],
        ["commit", "from-container.txt", "feat: made in the container"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    env = {**docker_env, "ANTHROPIC_API_KEY": SECRET}
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "3", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    home = f"home={tempfile.gettempdir()}/ralph-"
    assert f"uid={os.getuid()} gid={os.getgid()} {home}" in done.stdout
    assert ("sandbox=1" if os.getuid() == 0 else "sandbox=None") in done.stdout
    assert "autoupdater=1" in done.stdout
    assert "cannot write .sgf/config.toml: Read-only file system" in done.stdout
    assert "cannot write .sgf/new.md: Read-only file system" in done.stdout
    assert (project / ".sgf" / "config.toml").read_text() == "stack = 'python'\n"
    made = project / "made" / "by" / "agent.txt"
    assert (made.stat().st_uid, made.stat().st_gid) == (os.getuid(), os.getgid())
    assert "env GIT_AUTHOR_EMAIL=test@example.com" in done.stdout
    assert f"env RALPH_LOOP_ID={loop_id}" in done.stdout
    assert f"env PN_ACTOR={loop_id}" in done.stdout  # claims in the container name the loop
    assert "ralph complete after 1 iteration(s)" in done.stdout
    assert git(project, "log", "-1", "--format=%an <%ae> %s") == (
        "Test User <test@example.com> feat: made in the container"
    )
    # the agent holds a placeholder of the key's kind; the key itself stays on the host
    assert "env ANTHROPIC_API_KEY=sk-ant-test-ralph-placeholder-" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert done.stdout.startswith("network: allow-list"), done.stdout[:300]


@pytest.mark.parametrize("token", [None, "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"])
def test_the_host_login_is_never_mounted_and_stands_behind_a_placeholder(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    isolated_home: Path,
    token: str | None,
) -> None:
    creds = isolated_home / ".claude" / ".credentials.json"
    creds.parent.mkdir()
    login = '{"claudeAiOauth": {"accessToken": "sk-ant-oat01-host-login", "refreshToken": "r"}}'
    creds.write_text(login)
    env = {**docker_env, **({token: "sk-test-a-key-of-the-user"} if token else {})}
    steps = [["refresh_credentials"], ["env", token or "CLAUDE_CODE_OAUTH_TOKEN"], ["result"]]
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "1", script(default=steps))
    assert done.returncode == 2, done.stderr
    assert "credentials: none" in done.stdout  # nothing of ~/.claude/ is in the container
    assert creds.read_text() == login
    # the login when no key or token is set, else the key or token: a placeholder of its kind
    kind = "sk-test-" if token else "sk-ant-oat01-"
    assert f"={kind}ralph-placeholder-" in done.stdout, done.stdout
    assert "host-login" not in done.stdout
    assert "a-key-of-the-user" not in done.stdout


def test_a_prompt_of_several_hundred_kb_reaches_the_container_agent(
    project: Path, docker_env: dict[str, str], loop_id: str
) -> None:
    text = json.dumps({"default": [["prompt_size"], ["result"]], "pad": "é" * 300_000})
    (project / "big.md").write_text(text)
    done = run_ralph(project, docker_env, "-a", "--loop-id", loop_id, "1", "big.md")
    assert done.returncode == 2, done.stderr
    assert f"prompt bytes: {len(text.encode())} sha256:" in done.stdout


def inspect_container(cid: str) -> str:
    """The full `docker inspect` JSON of one container."""
    return subprocess.run(
        ["docker", "inspect", cid], capture_output=True, text=True, check=True
    ).stdout


def test_only_placeholders_reach_the_agent_and_the_endpoint_is_the_key_proxy(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    wait_for: WaitFor,
    spawn_ralph: Spawn,
) -> None:
    ready = project / "ready"
    token = "sk-ant-oat-test-oauth-token-456"
    env = {**docker_env, "ANTHROPIC_API_KEY": SECRET, "CLAUDE_CODE_OAUTH_TOKEN": token}
    env["ANTHROPIC_BASE_URL"] = "http://model.invalid:8080"
    steps = [
        ["write", "seen.txt", "$ANTHROPIC_API_KEY $CLAUDE_CODE_OAUTH_TOKEN $ANTHROPIC_BASE_URL"],
        ["ready", str(ready)],
        ["hang"],
    ]
    proc_ = spawn_ralph(project, env, "-a", "--loop-id", loop_id, "1", script(default=steps))
    try:
        wait_for(ready.exists, timeout=90, what="the agent in the container")
        (cid,) = loop_containers(loop_id)
        raw = inspect_container(cid)
        inspect = json.loads(raw)[0]
    finally:
        proc_.send_signal(signal.SIGINT)
        out, err = proc_.communicate(timeout=60)
    assert proc_.returncode == 130, err
    key, oauth, url = (project / "seen.txt").read_text().split()
    assert key.startswith("sk-ant-test-ralph-placeholder-")
    assert oauth.startswith("sk-ant-oat-ralph-placeholder-")  # its kind: up to 3 parts
    assert url == "http://ralph-egress:8081/anthropic"  # the real endpoint stays on the host
    for value in (SECRET, token, "model.invalid"):
        assert value not in raw  # env, cmd, labels, mounts: nowhere
        assert value not in out + err
    assert f"ANTHROPIC_BASE_URL={url}" in inspect["Config"]["Env"]
    assert inspect["HostConfig"]["NetworkMode"].startswith("ralph-egress-")
    assert inspect["HostConfig"]["CapDrop"] == ["NET_RAW"]
    assert inspect["HostConfig"]["DnsOptions"] == ["timeout:1", "attempts:1"]
    labels = inspect["Config"]["Labels"]
    assert labels[LABEL_LOOP] == loop_id
    assert labels["springfield.project"] == str(project)
    assert inspect["Config"]["User"] == f"{os.getuid()}:{os.getgid()}"
    assert inspect["Config"]["WorkingDir"] == str(project)


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_network_host_reaches_a_loopback_server(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        steps = [["fetch", url], ["result"]]
        isolated = run_ralph(
            project, docker_env, "-a", "--loop-id", loop_id, "1", script(default=steps)
        )
        joined = run_ralph(
            project,
            docker_env,
            "-a",
            "--loop-id",
            loop_id,
            "--network",
            "host",
            "1",
            script(default=steps),
        )
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    assert "cannot fetch" in isolated.stdout
    assert "fetched hello from the host" in joined.stdout


def test_sandbox_runs_a_non_root_uid_without_is_sandbox(
    project: Path, agent_in_project: Path, base_image: str, tmp_path: Path, loop_id: str
) -> None:
    """As a library: another uid (root can test what a normal user gets)."""
    if os.getuid() != 0:
        uid, gid = os.getuid(), os.getgid()
    else:
        uid = gid = 4242
        for path in (project, *project.rglob("*")):
            os.chown(path, uid, gid)
    state = tmp_path / "state"
    state.mkdir()
    os.chown(state, uid, gid)
    config = Config(
        project=project,
        prompt=Prompt(""),
        loop_id=loop_id,
        template=base_image,
        sandbox=SandboxKind.DOCKER,
        timeouts=Timeouts(stop_grace=1),
    )
    box = DockerSandbox(config, dict(os.environ), state, uid=uid, gid=gid)
    steps = json.dumps({"default": [["whoami"], ["touch", "mine.txt"], ["result"]]})
    output = b""
    try:
        box.prepare()
        with proc.Interrupts() as interrupts:
            running = box.start([str(agent_in_project)], stdin=steps.encode())
            try:
                for chunk in running.output(interrupts, lambda: 60.0, lambda data: None):
                    assert chunk is not None
                    output += chunk
            finally:
                assert running.close(grace=1) == 0
    finally:
        box.close()
    assert f"uid={uid} gid={gid}".encode() in output
    assert b"sandbox=None" in output
    mine = (project / "mine.txt").stat()
    assert (mine.st_uid, mine.st_gid) == (uid, gid)


def test_a_hostile_agent_cannot_make_the_host_run_its_code_through_git(
    project: Path,
    remote: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    git: Git,
    tmp_path: Path,
) -> None:
    """Issue 9: hooks, fsmonitor, hooksPath, include.path and a filter planted by the agent
    never run on the host: not by ralph's push, not by a host `git status` afterwards."""
    proof = tmp_path / "pwned"
    payload = f"#!/bin/sh\necho ran >> {proof}\n"
    (project / "payload.sh").write_text(payload)
    (project / "payload.sh").chmod(0o755)
    git(project, "add", "payload.sh")
    git(project, "commit", "-qm", "a script the agent will point git at")
    git(project, "push", "-q")
    config_before = (project / ".git" / "config").read_bytes()
    hooks_before = sorted(p.name for p in (project / ".git" / "hooks").iterdir())
    pwd = str(project)
    attacks = [
        "cp payload.sh .git/hooks/pre-push && chmod +x .git/hooks/pre-push",
        "cp payload.sh .git/hooks/post-checkout",
        f"git config core.fsmonitor {pwd}/payload.sh",
        f"git config core.hooksPath {pwd}",
        f"printf '[core]\\\\n\\\\tfsmonitor = {pwd}/payload.sh\\\\n' > evil.cfg"
        " && git config include.path ../evil.cfg",
        f"git config filter.evil.clean {pwd}/payload.sh"
        " && echo '* filter=evil' > .git/info/attributes",
        "echo '[include] path = ../evil.cfg' >> .git/config",
    ]
    steps: list[list[object]] = [["sh", attack] for attack in attacks]
    steps += [
        ["commit", "ordinary.txt", "feat: the agent's ordinary work"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = run_ralph(project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sh rc=0" not in done.stdout, done.stdout  # every attack was refused
    # The host runs git as a developer would, after the loop.
    subprocess.run(["git", "status"], cwd=project, capture_output=True, check=True)
    subprocess.run(["git", "fetch", "-q"], cwd=project, capture_output=True, check=True)
    assert not proof.exists(), proof.read_text()
    assert (project / ".git" / "config").read_bytes() == config_before
    assert sorted(p.name for p in (project / ".git" / "hooks").iterdir()) == hooks_before
    pushed = git(project, "--git-dir", str(remote), "log", "-1", "--format=%s", "main")
    assert pushed == "feat: the agent's ordinary work"


def test_an_agent_commits_in_a_linked_worktree_but_cannot_redirect_or_reconfigure_git(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    git: Git,
    tmp_path: Path,
) -> None:
    """Issue 14: a checkout made by `git worktree add` commits inside the container (its
    common git directory is mounted), while its pointers and the common config, hooks and
    info/ stay read-only."""
    linked = tmp_path / "linked"
    git(project, "worktree", "add", "-q", "-b", "side", str(linked))
    agent = agent_in(linked)
    common = project / ".git"
    admin = common / "worktrees" / "linked"
    before = {p: p.read_bytes() for p in (linked / ".git", admin / "commondir", common / "config")}
    attacks = [
        "echo 'gitdir: /tmp' > .git",
        f"echo /tmp > {admin}/commondir",
        f"echo '[core] fsmonitor = {linked}/payload.sh' > {admin}/config.worktree",
        f"git config core.fsmonitor {linked}/payload.sh",
        f"touch {common}/hooks/post-commit",
    ]
    steps: list[list[object]] = [["sh", attack] for attack in attacks]
    steps += [
        ["commit", "from-worktree.txt", "feat: made in a linked worktree"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    env = {**docker_env, "RALPH_COMMAND": str(agent), "RALPH_AUTO_PUSH": "false"}
    done = run_ralph(linked, env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sh rc=0" not in done.stdout, done.stdout  # every attack was refused
    assert git(linked, "log", "-1", "--format=%s", "side") == "feat: made in a linked worktree"
    assert {p: p.read_bytes() for p in before} == before
    assert not (common / "hooks" / "post-commit").exists()


@pytest.mark.parametrize(
    ("env", "remote"),
    [
        ({}, False),
        ({"DOCKER_HOST": "unix:///var/run/docker.sock"}, False),
        ({"DOCKER_HOST": "tcp://build-box:2376"}, True),
        ({"DOCKER_HOST": "ssh://me@build-box"}, True),
        ({"RALPH_PROBE_MOUNTS": "1"}, True),
    ],
)
def test_an_engine_on_another_machine_is_probed(env: dict[str, str], remote: bool) -> None:
    from ralph.dockerbox import remote_engine

    assert remote_engine(env) is remote


def test_an_engine_that_sees_the_project_passes_the_probe(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    env = {**docker_env, "RALPH_PROBE_MOUNTS": "1", "RALPH_AUTO_PUSH": "false"}
    steps = [["write", ".ralph-complete", "$RALPH_LOOP_ID"], ["result"]]
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "1", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(project.glob(".ralph-probe-*")) == []


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
)
def test_an_engine_that_cannot_see_the_project_is_refused_before_any_agent_runs(
    tmp_path: Path, docker_env: dict[str, str], loop_id: str
) -> None:
    """A project on a filesystem the engine does not see, as on a remote DOCKER_HOST without
    shared storage: here a tmpfs mounted in a private mount namespace, where dockerd, outside
    it, finds only the empty directory underneath."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    command = (
        f'mount -t tmpfs none "{hidden}" && mkdir "{hidden}/project" && cd "{hidden}/project"'
        f' && exec "{sys.executable}" -m ralph -a --loop-id {loop_id} 1 "do the work"'
    )
    env = {**docker_env, "RALPH_PROBE_MOUNTS": "1", "RALPH_COMMAND": "/bin/true"}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"does not see {hidden}/project" in done.stderr
    assert "at the same path" in done.stderr
    assert "Iteration 1" not in done.stdout
