#!/usr/bin/env bash
# Make a Docker engine reachable for the test suite: install Debian's docker.io (and the other
# system tools the suite drives: debootstrap, tmux) when missing, start dockerd in the
# background when nothing answers. Idempotent. Without root it can only report; under CI=true a
# missing engine is a failure, locally the docker tests skip.
set -euo pipefail
cache="${SPRINGFIELD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/springfield}"
mkdir -p "$cache"

fail_or_warn() {
  if [ "${CI:-}" = "true" ]; then echo "ensure-docker: $1" >&2; exit 1; fi
  echo "ensure-docker: $1 (docker tests will skip)" >&2; exit 0
}

if docker info >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then fail_or_warn "no Docker engine answers and we are not root to start one"; fi

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-docker: installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "ensure-docker: starting dockerd (log: $cache/dockerd.log)" >&2
nohup dockerd >"$cache/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then exit 0; fi
  sleep 0.5
done
fail_or_warn "dockerd did not answer within 30 s; see $cache/dockerd.log"
