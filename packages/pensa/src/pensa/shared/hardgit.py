"""The git options that keep a repository's configuration from choosing what runs on the host.

A published contract module (see `pensa.shared`): every git that pn, ralph and sgf run on the
host carries `OPTIONS` (ralph and sgf spell the whole command once, as `HARDENED`), so the
rule has one owner. Repository configuration is attacker input (the threat model of git's
safe.directory work and CVE-2022-24765): an agent in the sandbox can write the work tree, and
with `--sandbox none` the repository's own config. So hooks point at a directory that holds
none, fsmonitor, pagers and external diff drivers are off, the `ext::` transport is refused,
nothing recurses into submodules (a nested repository's config came from an agent's commit:
git never looks inside one), and replace refs never stand in for what a commit holds (an
object must read the same on the host as everywhere else). `-c` reaches every git this one
spawns (GIT_CONFIG_PARAMETERS), submodules too (docs/security.md).
"""

from __future__ import annotations

OPTIONS = (
    "--no-pager",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "diff.external=",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "submodule.recurse=false",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "fetch.recurseSubmodules=false",
    "-c",
    "push.recurseSubmodules=no",
    "-c",
    "core.useReplaceRefs=false",
)
HARDENED = ("git", *OPTIONS)

# What `pn init` writes into .git/config, and sgf ensures again before every launch (in case it
# was unset since), so the developer's own plain git never looks inside a nested repository
# either. Each one was checked with real git against a nested repository whose config sets
# core.fsmonitor and a filter: diff.ignoreSubmodules stops status, diff, commit and switch
# from running `git status` inside it; submodule.recurse and fetch/push.recurseSubmodules
# stop a user's global `true`/`on-demand` from running checkout, reset, fetch or push there.
# (status.submoduleSummary changed nothing once diff.ignoreSubmodules was set: left out.)
SUBMODULE_SAFETY = (
    ("diff.ignoreSubmodules", "all"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
)
