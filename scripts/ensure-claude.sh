#!/usr/bin/env bash
# Install the pinned Claude Code CLI into the cache (npm ships a native linux-x64 binary) and
# print the binary's path. Idempotent: a second run only prints the path.
set -euo pipefail
version="${CLAUDE_CODE_VERSION:-2.1.330}"
cache="${SPRINGFIELD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/springfield}"
dir="$cache/claude-code-$version"
bin="$dir/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

if [ ! -x "$bin" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    if [ "${CI:-}" = "true" ]; then echo "ensure-claude: npm is missing" >&2; exit 1; fi
    echo "ensure-claude: npm is missing, claude tests will skip" >&2; exit 0
  fi
  mkdir -p "$dir"
  echo "ensure-claude: npm install @anthropic-ai/claude-code@$version" >&2
  # --ignore-scripts: the native binary arrives as an optional dependency; the postinstall
  # only re-links it and needs a newer node than Debian ships.
  (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
      "@anthropic-ai/claude-code@$version" "@anthropic-ai/claude-code-linux-x64@$version" >&2)
fi
"$bin" --version >/dev/null
echo "$bin"
