#!/usr/bin/env bash
# `make demo`: a real Springfield build loop on a throw-away project.
#
# Sets up what is missing (the pinned Claude Code CLI, a Docker engine when we may start one,
# the sandbox image), scaffolds a project with `sgf init`, seeds three tasks with `pn`, and runs
# `sgf build -a` with the real `claude` binary. The model is the scripted one, the README's
# documented way (`sgf build -a --offline`: ralph serves the build stage's shipped scenario and
# makes up the credential), unless SPRINGFIELD_DEMO_MODEL=real, which uses your own
# ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN. Agents run in Docker when an engine answers,
# otherwise directly on this machine (--sandbox none, also forced by SPRINGFIELD_DEMO_SANDBOX=none),
# and the script says which.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$here/.venv/bin:$PATH"
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
step() { printf '\n$ %s\n' "$*"; "$@"; }

model="${SPRINGFIELD_DEMO_MODEL:-scripted}"
if [ "$model" = real ] && [ -z "${ANTHROPIC_API_KEY:-}${CLAUDE_CODE_OAUTH_TOKEN:-}" ]; then
  echo "demo: SPRINGFIELD_DEMO_MODEL=real needs ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN" >&2
  exit 1
fi

say "Prerequisites"
claude="$("$here/scripts/ensure-claude.sh")"
if [ -z "$claude" ]; then
  echo "demo: the Claude Code CLI could not be installed (npm missing?)" >&2
  exit 1
fi
echo "claude: $claude ($("$claude" --version))"
sandbox="${SPRINGFIELD_DEMO_SANDBOX:-docker}"  # none: skip Docker even when it is there
if [ "$sandbox" = docker ]; then "$here/scripts/ensure-docker.sh" || true; fi
if [ "$sandbox" = docker ] && docker info >/dev/null 2>&1; then
  # the base `sgf sandbox build` falls back to when no registry answers (sgf sandbox base)
  "$here/scripts/ensure-base-image.sh"
else
  sandbox=none
  echo "demo: no Docker sandbox (no engine reachable, or SPRINGFIELD_DEMO_SANDBOX=none), so the"
  echo "      agent runs directly on this machine (sgf build --sandbox none)."
  export PATH="$(dirname "$claude"):$PATH"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/springfield-demo.XXXXXX")"
project="$work/greeter"
mkdir "$project"
cd "$project"

offline=()
if [ "$model" = scripted ]; then
  # the real CLI talks to ralph's scripted model; no Anthropic account needed
  offline=(--offline)
fi
if [ "$sandbox" = none ]; then
  # The agent shares this machine: keep its config in the throw-away dir.
  export CLAUDE_CONFIG_DIR="$work/claude-config"
  if [ "$(id -u)" = 0 ]; then export IS_SANDBOX=1; fi
fi

say "A throw-away project: $project"
git init -q -b main
git config user.name "Springfield demo"
git config user.email "demo@springfield.invalid"
git init -q --bare -b main "$work/remote.git"
git remote add origin "$work/remote.git"
step sgf init --stack python
if [ "$sandbox" = docker ]; then
  step sgf sandbox build --claude-binary "$claude"  # this project's own image
fi
git add -A && git commit -q -m "chore: sgf init" && git push -q -u origin main

say "Seed three tasks"
new() { pn create "$@" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'; }
fn=$(new "Write the greet function" -t task -p p1 --description "greet(name) in greet.py")
new "Test greet() with unit tests" -t task -p p2 --dep "$fn" >/dev/null
new "Add a command line" -t task -p p2 --dep "$fn" >/dev/null
step pn ready
pn export >/dev/null && git add -A && git commit -q -m "chore: seed tasks" && git push -q

say "The build loop: sgf build -a ${offline[*]} 6 (sandbox: $sandbox, model: $model)"
status=0
sgf build -a "${offline[@]}" --sandbox "$sandbox" 6 || status=$?

say "Afterwards"
step sgf status
step pn list --all
step git log --oneline --stat -n 4
echo
echo "log file:  $(ls "$project"/.sgf/logs/*.log | head -1)"
echo "project:   $project (throw-away; delete it when done)"
echo "sgf build exited with $status"
exit "$status"
