#!/usr/bin/env bash
# Install the pinned codex, opencode and gemini CLIs into the shared cache and print one line
# per agent, "name path". Idempotent: once installed, a run only checks and prints the paths,
# so it works offline. Locally a missing npm or a failed install skips that agent's tests;
# under CI=true it is an error.
set -euo pipefail
codex_version="${CODEX_VERSION:-0.169.0}"
opencode_version="${OPENCODE_VERSION:-1.18.33}"
gemini_version="${GEMINI_CLI_VERSION:-0.61.0}"
cache="${SPRINGFIELD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/springfield}"

fail() {
  if [ "${CI:-}" = "true" ]; then echo "ensure-agents: $1" >&2; exit 1; fi
  echo "ensure-agents: $1, its tests will skip" >&2
}

# install NAME DIR BIN PACKAGE...: npm-install PACKAGE... into DIR unless BIN already runs.
install() {
  local name="$1" dir="$2" bin="$3"
  shift 3
  if [ ! -x "$bin" ]; then
    if ! command -v npm >/dev/null 2>&1; then fail "npm is missing ($name)"; return 0; fi
    mkdir -p "$dir"
    echo "ensure-agents: npm install $*" >&2
    # --ignore-scripts: the native binaries arrive as platform packages; the postinstall
    # scripts only re-link them (and would reach beyond the registry).
    if ! (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error "$@" >&2); then
      fail "npm install $* failed"
      return 0
    fi
  fi
  if "$bin" --version >/dev/null 2>&1; then echo "$name $bin"; else fail "$bin does not run"; fi
}

# codex: the platform package is a native binary, published as a version tag of @openai/codex.
dir="$cache/codex-$codex_version"
install codex "$dir" \
  "$dir/node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex" \
  "@openai/codex@$codex_version-linux-x64"
dir="$cache/opencode-$opencode_version"
install opencode "$dir" "$dir/node_modules/opencode-linux-x64/bin/opencode" \
  "opencode-linux-x64@$opencode_version"
dir="$cache/gemini-cli-$gemini_version"
install gemini "$dir" "$dir/node_modules/.bin/gemini" "@google/gemini-cli@$gemini_version"
