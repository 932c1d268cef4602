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
from ralph.models import Config, Prompt, SandboxKind, Timeouts
from ralph.sandbox.container import LABEL_LOOP, SANDBOX_UID
from ralph.sandbox.docker import DockerSandbox

from ..conftest import IMAGE_AGENT, Git, Script, loop_containers, run_ralph, stashed, workspace_of

pytestmark = pytest.mark.docker

WaitFor = Callable[..., None]
Spawn = Callable[..., "subprocess.Popen[str]"]
SECRET = "sk-ant-test-secret-value-123"


def test_the_agent_works_unprivileged_in_a_repository_of_its_own(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str, git: Git
) -> None:
    (project / ".sgf").mkdir()
    (project / ".sgf" / "config.toml").write_text("stack = 'python'\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "sgf")
    (project / ".git" / "the-humans-git").write_text("")
    steps = [
        ["whoami"],
        ["sh", "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr '\\t\\n' '  '"],
        ["try_write", ".sgf/config.toml"],  # its own copy: the human's never changes
        ["sh", "git checkout -- .sgf/config.toml"],
        ["touch", "made/by/agent.txt"],
        ["env", "ANTHROPIC_API_KEY"],
        ["env", "GIT_AUTHOR_EMAIL"],
        ["env", "RALPH_LOOP_ID"],
        ["env", "PN_ACTOR"],
        ["sh", f"test -e {project}/.git/the-humans-git && echo the-humans-git || echo own-git"],
        ["commit", "from-container.txt", "feat: made in the container"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    env = {**docker_env, "ANTHROPIC_API_KEY": SECRET}
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "3", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    uid, gid = (SANDBOX_UID, SANDBOX_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())
    home = f"home={tempfile.gettempdir()}/ralph-"
    assert f"uid={uid} gid={gid} {home}" in done.stdout  # never root in the container
    assert "sandbox=None" in done.stdout
    assert "CapEff: 0000000000000000 NoNewPrivs: 1" in done.stdout
    assert "autoupdater=1" in done.stdout
    assert "wrote .sgf/config.toml" in done.stdout
    assert (project / ".sgf" / "config.toml").read_text() == "stack = 'python'\n"
    assert "sh rc=0: own-git" in done.stdout
    assert "env GIT_AUTHOR_EMAIL=test@example.com" in done.stdout
    assert f"env RALPH_LOOP_ID={loop_id}" in done.stdout
    assert f"env PN_ACTOR={loop_id}" in done.stdout  # claims in the container name the loop
    assert "ralph complete after 1 iteration(s)" in done.stdout
    assert git(project, "log", "-1", "--format=%an <%ae> %s") == (
        "Test User <test@example.com> feat: made in the container"
    )
    assert (project / "from-container.txt").is_file()  # the checkout followed
    # what the agent left uncommitted came back as a stash; none of it in the human's tree
    assert not (project / "made").exists()
    assert "sgf-recovery " + loop_id in git(project, "stash", "list")
    assert stashed(project, "made/by/agent.txt") == ""
    assert not workspace_of(project, loop_id).exists()  # removed once everything crossed
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
    ready = workspace_of(project, loop_id) / "ready"
    token = "sk-ant-oat-test-oauth-token-456"
    env = {**docker_env, "ANTHROPIC_API_KEY": SECRET, "CLAUDE_CODE_OAUTH_TOKEN": token}
    env["ANTHROPIC_BASE_URL"] = "http://model.invalid:8080"
    steps = [
        ["write", "seen.txt", "$ANTHROPIC_API_KEY $CLAUDE_CODE_OAUTH_TOKEN $ANTHROPIC_BASE_URL"],
        ["ready", "ready"],
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
    key, oauth, url = stashed(project, "seen.txt").split()
    assert key.startswith("sk-ant-test-ralph-placeholder-")
    assert oauth.startswith("sk-ant-oat-ralph-placeholder-")  # its kind: up to 3 parts
    assert url == "http://ralph-egress:8081/anthropic"  # the real endpoint stays on the host
    for value in (SECRET, token, "model.invalid"):
        assert value not in raw  # env, cmd, labels, mounts: nowhere
        assert value not in out + err
    assert f"ANTHROPIC_BASE_URL={url}" in inspect["Config"]["Env"]
    assert inspect["HostConfig"]["NetworkMode"].startswith("ralph-egress-")
    assert inspect["HostConfig"]["DnsOptions"] == ["timeout:1", "attempts:1"]
    labels = inspect["Config"]["Labels"]
    assert labels[LABEL_LOOP] == loop_id
    assert labels["springfield.project"] == str(project)
    uid, gid = (SANDBOX_UID, SANDBOX_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())
    assert inspect["Config"]["User"] == f"{uid}:{gid}"
    assert inspect["HostConfig"]["CapDrop"] == ["ALL"]
    assert inspect["HostConfig"]["SecurityOpt"] == ["no-new-privileges"]
    assert inspect["HostConfig"]["PidsLimit"] == 4096
    assert inspect["HostConfig"]["Memory"] == 8 * 1024**3
    mounted = {m["Destination"]: m["Source"] for m in inspect["Mounts"]}
    assert mounted[str(project)] == str(workspace_of(project, loop_id))  # not the project
    assert not any(Path(m).is_relative_to(project / ".git") for m in mounted.values()
                   if m != str(project / ".git" / "objects"))  # fmt: skip
    assert inspect["Config"]["WorkingDir"] == str(project)


def test_agent_exit_status_and_argv_pass_through_the_workspace_steps(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    env = {**docker_env, "CLAUDE_CODE_OAUTH_TOKEN": SECRET}
    steps = script(_1=[["argv"], ["exit", 3]], _2=[["touch", ".ralph-complete"], ["result"]])
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "2", steps, "--", "--x", "a b")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: agent exited (status 3) without a result" in done.stdout
    flags = ["-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
    assert "argv: " + json.dumps([*flags, "--x", "a b"]) in done.stdout  # unchanged by the steps


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_and_removes_the_container(
    sig: signal.Signals,
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    wait_for: WaitFor,
    spawn_ralph: Spawn,
) -> None:
    ready = workspace_of(project, loop_id) / "ready"
    steps = [["say", "started"], ["ready", "ready"], ["hang"]]
    ralph_ = spawn_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, "3", script(default=steps)
    )
    wait_for(ready.exists, timeout=60, what="the agent in the container")
    assert len(loop_containers(loop_id)) == 1
    ralph_.send_signal(sig)
    out, err = ralph_.communicate(timeout=60)
    assert ralph_.returncode == 130, err
    assert "Interrupted." in out
    assert loop_containers(loop_id) == []


def test_kill_9_leaves_a_container_that_the_next_start_removes(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    wait_for: WaitFor,
    spawn_ralph: Spawn,
) -> None:
    ready = workspace_of(project, loop_id) / "ready"
    env = {**docker_env, "CLAUDE_CODE_OAUTH_TOKEN": SECRET}
    ralph_ = spawn_ralph(
        project,
        env,
        "-a",
        "--loop-id",
        loop_id,
        "1",
        script(_1=[["ready", "ready"], ["hang"]], default=[["result"]]),
    )
    wait_for(ready.exists, timeout=60, what="the agent in the container")
    ralph_.kill()
    ralph_.communicate(timeout=30)
    (orphan,) = loop_containers(loop_id)
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "1", "anything at all")
    assert done.returncode == 2, done.stderr
    assert f"removed leftover container {orphan[:12]}" in done.stdout
    assert loop_containers(loop_id) == []


def test_watchdog_kills_a_hung_container_and_the_loop_goes_on(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    steps = [["ignore", "SIGINT"], ["result"], ["hang"]]
    done = run_ralph(
        project,
        docker_env,
        "-a",
        "--loop-id",
        loop_id,
        "2",
        script(_1=steps, _2=[["touch", ".ralph-complete"], ["result"]]),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "after its result: stopped" in done.stdout


def test_missing_template_is_a_one_line_error(
    project: Path, docker_env: dict[str, str], loop_id: str
) -> None:
    env = {**docker_env, "RALPH_TEMPLATE": "springfield-no-such-image:latest"}
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "1", "hello there")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "sandbox image 'springfield-no-such-image:latest' not found: build it" in done.stderr


def test_unreachable_engine_is_a_one_line_error(
    project: Path, docker_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**docker_env, "DOCKER_HOST": f"unix://{tmp_path}/no.sock"}
    done = run_ralph(project, env, "-a", "1", "hello there")
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot reach the Docker engine")
    assert done.stderr.count("\n") == 1


def test_agent_missing_from_the_image_is_a_one_line_error(
    project: Path, docker_env: dict[str, str], loop_id: str
) -> None:
    env = {**docker_env, "RALPH_COMMAND": "claude-not-in-this-image"}
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "3", "hello there")
    assert done.returncode == 1, done.stdout
    assert "agent executable 'claude-not-in-this-image' not found in the docker sandbox" in (
        done.stderr
    )
    assert "Iteration 2" not in done.stdout


@pytest.mark.parametrize("named", ["absolute", "relative"])
def test_an_agent_left_untracked_in_the_project_is_said_to_stay_on_the_host(
    project: Path, docker_env: dict[str, str], loop_id: str, named: str
) -> None:
    """The container sees the agent's workspace at the project's path, which holds only the
    project's commits: a program the user keeps there uncommitted is not in it."""
    agent = project / "bin" / "agent"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    command = str(agent) if named == "absolute" else "bin/agent"
    env = {**docker_env, "RALPH_COMMAND": command}
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "3", "hello there")
    assert done.returncode == 1, done.stdout
    error = done.stderr.splitlines()[-1]  # after the shell's own "not found"
    assert error.startswith(
        f"error: agent executable {command!r} not found in the docker sandbox: it is a file of "
        "the project that is not committed"
    ), done.stderr
    assert "untracked and ignored files stay on the host" in error
    assert error.endswith("commit it, install it in the sandbox image or pass --command EXE")
    assert "Iteration 2" not in done.stdout


def test_unknown_network_is_a_one_line_error(
    project: Path, docker_env: dict[str, str], loop_id: str
) -> None:
    done = run_ralph(
        project,
        docker_env,
        "-a",
        "--loop-id",
        loop_id,
        "--network",
        "no-such-net",
        "1",
        "hello there",
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: docker network 'no-such-net' not found")
    assert done.stderr.count("\n") == 1


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
    project: Path, agent_image: str, tmp_path: Path, loop_id: str
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
        template=agent_image,
        sandbox=SandboxKind.DOCKER,
        timeouts=Timeouts(stop_grace=1),
    )
    box = DockerSandbox(config, dict(os.environ), state, uid=uid, gid=gid)
    steps = json.dumps({"default": [["whoami"], ["touch", "mine.txt"], ["result"]]})
    output = b""
    try:
        box.prepare()
        with proc.Interrupts() as interrupts:
            running = box.start([IMAGE_AGENT], stdin=steps.encode())
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
    """Hooks, fsmonitor, hooksPath, include.path and a filter planted by the agent in its
    repository never run on the host: ralph runs no git there, and the host's own
    repository is out of the container's reach."""
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
        f"printf '[core]\\n\\tfsmonitor = {pwd}/payload.sh\\n' > evil.cfg"
        " && git config include.path ../evil.cfg",
        f"git config filter.evil.clean {pwd}/payload.sh"
        " && echo '* filter=evil' > .git/info/attributes",
        "echo '[include]\n\tpath = ../evil.cfg' >> .git/config",
    ]
    steps: list[list[object]] = [["sh", attack] for attack in attacks]
    steps += [
        ["commit", "ordinary.txt", "feat: the agent's ordinary work"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = run_ralph(project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
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
    """A project that is a linked worktree (`git worktree add`): the agent's commits land
    on its branch, and nothing of the repository's git directories is in the container."""
    linked = tmp_path / "linked"
    git(project, "worktree", "add", "-q", "-b", "side", str(linked))
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
    env = {**docker_env, "RALPH_AUTO_PUSH": "false"}
    done = run_ralph(linked, env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
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
    from ralph.sandbox.container import remote_engine

    assert remote_engine(env) is remote


def test_an_engine_that_sees_the_project_passes_the_probe(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    env = {**docker_env, "RALPH_PROBE_MOUNTS": "1", "RALPH_AUTO_PUSH": "false"}
    steps = [["write", ".ralph-complete", "$RALPH_LOOP_ID"], ["result"]]
    done = run_ralph(project, env, "-a", "--loop-id", loop_id, "1", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(project.rglob(".ralph-probe-*")) == []


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
