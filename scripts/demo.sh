#!/usr/bin/env bash
# A pensa (pn) walkthrough in a throw-away git repository. Until the full Springfield loop
# exists (a later issue replaces this script), `make demo` shows the agents' issue tracker:
# create, dependencies, ready, claim-next, close (which closes the fixed bug), export and
# history.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$here/.venv/bin:$PATH"
command -v pn >/dev/null || { echo "demo: pn is not installed; run 'make env' first" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/pensa-demo.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q
git config user.name "demo agent"
git config user.email "demo@example.com"
export PN_ACTOR="demo-agent"

step() { printf '\n$ %s\n' "$*"; "$@"; }

echo "pensa demo in $work (removed at the end)"
bug=$(pn q "login crashes on an empty password" -t bug -p p0)
echo "logged bug $bug"
schema=$(pn q "add a password column to the users table" -t task -p p1 --spec auth)
fix=$(pn create "reject empty passwords" -t task --spec auth --fixes "$bug" --dep "$schema" --json \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "planned $schema, then $fix (fixes $bug, depends on $schema)"

step pn list
step pn ready                       # bugs are never ready; $fix waits for $schema
step pn dep tree "$fix"
step pn claim-next --json           # what an agent loop does: atomic ready + claim
step pn close "$schema" --reason "migration written"
step pn ready                       # the dependency is closed: the fix is ready now
step pn claim-next
step pn close "$fix" --reason "empty passwords rejected"
step pn show "$bug"                 # closed automatically: "fixed by <task>"
step pn export
step cat .pensa/issues.jsonl .pensa/deps.jsonl
step pn history "$fix"
step pn status
echo
echo "demo: done"
