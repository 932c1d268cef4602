#!/usr/bin/env bash
# The local Debian base image the sandbox is built FROM, for machines without a registry:
# `sgf sandbox base` (debootstrap from Debian's mirror once into the cache, then an import;
# a fresh dockerd re-imports the cached root file system in seconds). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
image="${SPRINGFIELD_BASE_IMAGE:-springfield-base:bookworm}"
sgf="$here/.venv/bin/sgf"
[ -x "$sgf" ] || sgf="$(command -v sgf || true)"

if ! docker info >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then echo "ensure-base-image: no Docker engine" >&2; exit 1; fi
  echo "ensure-base-image: no Docker engine, skipping" >&2; exit 0
fi
if docker image inspect "$image" >/dev/null 2>&1; then exit 0; fi
if [ -z "$sgf" ]; then echo "ensure-base-image: sgf is not installed (make env)" >&2; exit 1; fi
"$sgf" sandbox base --tag "$image" >&2
