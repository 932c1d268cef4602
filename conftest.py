"""Suite-wide isolation and prerequisites, shared by every package's tests.

Every test runs with HOME, XDG dirs and the git identity pointed into its own tmp_path, so
nothing touches the developer's real state. Docker and the claude binary are prerequisites
that skip locally but fail under CI=true.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Helpers every test tree shares (one wait helper, one git-repository maker). They
# are fixtures, so the packages' tests need no import path to the workspace root.
WaitFor = Callable[..., None]
MakeRepo = Callable[..., Path]


def run_git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` (the test's isolated identity) and return its stdout."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def wait_for() -> WaitFor:
    """`wait_for(condition, timeout=20, what=...)`: poll until `condition()` is true, failing
    after `timeout` seconds with `what` in the message. Never a fixed sleep."""

    def wait(condition: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g}s waiting for {what or condition}")
            time.sleep(0.01)

    return wait


@pytest.fixture
def victim(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A file of the user's outside the project (`outside/victim.txt`) holding the test
    module's `PRECIOUS` text, which an attack under test must leave as it is."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(request.module.PRECIOUS)
    return path


@pytest.fixture
def background() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """`background(argv, cwd=..., env=...)` starts a program with its output piped; whatever
    a failing test left running is killed after it, and every one is reaped."""
    started: list[subprocess.Popen[str]] = []

    def start(argv: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """`make_repo(name, commit=True, bare=False)`: a git repository under tmp_path (branch main),
    with one commit of README.md when `commit`."""

    def make(name: str = "project", *, commit: bool = True, bare: bool = False) -> Path:
        path = tmp_path / name
        path.mkdir(parents=True)
        run_git(path, "init", "-q", "-b", "main", *(["--bare"] if bare else []))
        if commit and not bare:
            (path / "README.md").write_text(f"# {name}\n")
            run_git(path, "add", "README.md")
            run_git(path, "commit", "-q", "-m", "initial")
        return path

    return make


# Every variable of ours is cleared by prefix, so a new one (PN_SHARED_DB, PN_CLAIMS, ...)
# can never point a test at a real tracker; the rest are the ones outside our prefixes that
# change what the tools do.
CLEARED_PREFIXES = ("PN_", "RALPH_", "SGF_")
_CLEARED = (
    "NO_COLOR",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)

# The one cache tests share on purpose: images and the pinned claude binary
# (scripts/ensure-claude.sh). Resolved once, from the real environment, before any test moves
# HOME; every other cache (crash logs, XDG_CACHE_HOME) is the test's own.
SHARED_CACHE = os.environ.get("SPRINGFIELD_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
    "springfield",
)


def ours(name: str) -> bool:
    """Whether `name` is an environment variable the isolation clears."""
    return name.startswith(CLEARED_PREFIXES) or name in _CLEARED


def pytest_configure(config: pytest.Config) -> None:
    """Clear our variables from the whole test process before anything runs, so session
    fixtures (built before any test's own isolation) cannot see them either."""
    for name in [name for name in os.environ if ours(name)]:
        del os.environ[name]
    # A suite started in the background by a script (`make test &`, `nohup .ci/run &`) arrives
    # with SIGINT ignored, and every console script a test starts would inherit it: the tests
    # that stop one with SIGINT, as Ctrl+C does, would wait on a process that cannot hear it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG_* (caches included) and git's global config at a fresh directory for
    every test, and clear every PN_*, RALPH_* and SGF_* variable."""
    home = tmp_path / "home"
    home.mkdir()
    for name in [name for name in os.environ if ours(name)]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    for xdg in (
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR",
        "XDG_CACHE_HOME",
    ):
        monkeypatch.setenv(xdg, str(home / f".{xdg.lower()}"))
    monkeypatch.setenv("SPRINGFIELD_CACHE", SHARED_CACHE)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
        "[safe]\n\tdirectory = *\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("USER", os.environ.get("USER", "tester"))
    return home


def require(what: str, available: bool, why: str) -> None:
    """Skip when a prerequisite is missing locally; fail when it is missing under CI=true."""
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI=true: {why}", pytrace=False)
    pytest.skip(f"{what} unavailable: {why}")


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "info"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture(scope="session")
def docker_engine() -> bool:
    """A reachable Docker engine (started by `make test` via scripts/ensure-docker.sh)."""
    require("Docker engine", _docker_answers(), "run scripts/ensure-docker.sh as root")
    return True


BASE_IMAGE = os.environ.get("SPRINGFIELD_BASE_IMAGE", "springfield-base:bookworm")


@pytest.fixture(scope="session")
def base_image(docker_engine: bool) -> str:
    """The locally imported Debian base image (scripts/ensure-base-image.sh)."""
    found = subprocess.run(
        ["docker", "image", "inspect", BASE_IMAGE], capture_output=True, check=False
    )
    require(f"base image {BASE_IMAGE}", found.returncode == 0, "run scripts/ensure-base-image.sh")
    return BASE_IMAGE


FAKE_AGENTS = Path(__file__).parent / "packages" / "ralph" / "tests" / "agents"
# Where the test image keeps the fake agents: the agent works in a workspace of its own,
# which holds only what the project committed, so the agents travel in the image.
AGENT_DIR = "/opt/springfield-test"


@pytest.fixture(scope="session")
def agent_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The base image with the fake agents in AGENT_DIR; tagged by their content, so every
    checkout and every change gets its own image and none overwrites another's."""
    import hashlib

    sources = sorted(FAKE_AGENTS.glob("*.py"))
    digest = hashlib.sha256(base_image.encode())
    for source in sources:
        digest.update(source.name.encode() + source.read_bytes())
    tag = f"springfield-test-agents:{digest.hexdigest()[:16]}"
    found = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    if found.returncode == 0:
        return tag
    context = tmp_path_factory.mktemp("agent-image")
    for source in sources:
        shutil.copy(source, context / source.name)
    (context / "Dockerfile").write_text(
        f"FROM {base_image}\nCOPY *.py {AGENT_DIR}/\nRUN chmod 0755 {AGENT_DIR}/*.py\n"
    )
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    return tag


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned claude binary (scripts/ensure-claude.sh prints its path)."""
    named = os.environ.get("SPRINGFIELD_CLAUDE") or shutil.which("claude") or ""
    path = Path(named) if named else None
    require(
        "claude binary",
        path is not None and path.is_file() and os.access(path, os.X_OK),
        "set SPRINGFIELD_CLAUDE or run scripts/ensure-claude.sh",
    )
    assert path is not None
    return path


def _pinned_agents() -> dict[str, Path]:
    """The pinned codex, opencode and gemini CLIs, installed (once) by
    scripts/ensure-agents.sh, which prints "name path" for each it has."""
    script = Path(__file__).parent / "scripts" / "ensure-agents.sh"
    done = subprocess.run(
        ["bash", str(script)],
        env={**os.environ, "SPRINGFIELD_CACHE": SHARED_CACHE},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    require("the pinned agent CLIs", done.returncode == 0, done.stderr.strip())
    found = (line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return {name: Path(path) for name, path in found}


@pytest.fixture(scope="session")
def agent_bins() -> dict[str, Path]:
    return _pinned_agents()


def _agent(bins: dict[str, Path], name: str) -> Path:
    path = bins.get(name)
    require(f"{name} binary", path is not None, "run scripts/ensure-agents.sh (needs npm)")
    assert path is not None
    return path


@pytest.fixture
def codex_bin(agent_bins: dict[str, Path]) -> Path:
    """The pinned codex binary (a native binary from @openai/codex's linux-x64 package)."""
    return _agent(agent_bins, "codex")


@pytest.fixture
def opencode_bin(agent_bins: dict[str, Path]) -> Path:
    """The pinned opencode binary (opencode-linux-x64)."""
    return _agent(agent_bins, "opencode")


@pytest.fixture
def gemini_bin(agent_bins: dict[str, Path]) -> Path:
    """The pinned gemini CLI (a JS bundle run by node)."""
    return _agent(agent_bins, "gemini")


# Skips CI accepts, each with its reason, in this one place: under CI=true any
# other skip is turned into a failure, so a green run cannot hide a test that never ran.
ALLOWED_SKIPS: dict[str, str] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """Under CI=true, fail a skipped test unless ALLOWED_SKIPS lists it."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]  # pluggy's Result
    if (
        os.environ.get("CI") == "true"
        and report.skipped
        and not hasattr(report, "wasxfail")
        and item.nodeid not in ALLOWED_SKIPS
    ):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, and not listed in ALLOWED_SKIPS: {reason}"
    return None


# How a test starts another program: Python raises one of these audit events first.
SPAWNS = frozenset(
    {"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork", "os.forkpty"}
)
# Markers `make test-fast` leaves out: each says the test runs more than Python in-process.
SLOW = frozenset({"process", "docker", "claude", "codex", "opencode", "gemini", "e2e"})


class SpawnWatch:
    """Notes the first program a test's own thread starts, from its fixtures' setup to its
    end (another thread's programs are not the test's to answer for)."""

    def __init__(self) -> None:
        self.watching = False
        self.started: str | None = None

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if (
            self.watching
            and self.started is None
            and event in SPAWNS
            and threading.current_thread() is threading.main_thread()
        ):
            self.started = f"{event} {args[0]!r}"[:200]

    def begin(self) -> None:
        self.watching, self.started = True, None

    def end(self) -> str | None:
        self.watching = False
        return self.started


SPAWN_WATCH = SpawnWatch()
sys.addaudithook(SPAWN_WATCH)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> object:
    SPAWN_WATCH.begin()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object]) -> object:
    """A fixture shared beyond one test is made by whichever test comes first: what it starts
    is nobody's in particular (`make test-fast` makes it once, for all)."""
    if fixturedef.scope == "function":
        return (yield)
    watching, SPAWN_WATCH.watching = SPAWN_WATCH.watching, False
    try:
        return (yield)
    finally:
        SPAWN_WATCH.watching = watching


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    """A test that starts a program carries `process` (or a marker that implies it), so that
    `make test-fast` can leave out every test that does."""
    try:
        result = yield
    finally:
        started = SPAWN_WATCH.end()
    if started and not SLOW & {mark.name for mark in item.iter_markers()}:
        pytest.fail(f"starts a program ({started}) but is not marked `process`", pytrace=False)
    return result


# Markers match what a test needs: `make test-fast` deselects docker and claude
# tests by marker, so a test that reaches for the engine or the binary must say so.
NEEDS = {
    "docker_engine": "docker",
    "base_image": "docker",
    "agent_image": "docker",
    "claude_bin": "claude",
    "codex_bin": "codex",
    "opencode_bin": "opencode",
    "gemini_bin": "gemini",
}


def unmarked_needs(item: pytest.Item) -> list[str]:
    """The markers `item` lacks for the prerequisite fixtures it uses."""
    names = set(getattr(item, "fixturenames", ()))
    marked = {mark.name for mark in item.iter_markers()}
    return sorted({marker for fixture, marker in NEEDS.items() if fixture in names} - marked)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    wrong = [
        f"{item.nodeid}: mark it {', '.join(missing)}"
        for item in items
        if (missing := unmarked_needs(item))
    ]
    if wrong:
        raise pytest.UsageError("tests need markers for what they use:\n  " + "\n  ".join(wrong))
