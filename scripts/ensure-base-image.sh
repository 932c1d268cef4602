#!/usr/bin/env bash
# Build the local Debian base image the sandbox is built FROM (registries are unreachable, so
# nothing is pulled): debootstrap once into the cache, then `docker import`. Idempotent; the
# rootfs tarball is cached so a fresh dockerd re-imports in seconds.
set -euo pipefail
image="${SPRINGFIELD_BASE_IMAGE:-springfield-base:bookworm}"
cache="${SPRINGFIELD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/springfield}"
tarball="$cache/bookworm-minbase.tar"
mkdir -p "$cache"

if ! docker info >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then echo "ensure-base-image: no Docker engine" >&2; exit 1; fi
  echo "ensure-base-image: no Docker engine, skipping" >&2; exit 0
fi
if docker image inspect "$image" >/dev/null 2>&1; then exit 0; fi

if [ ! -s "$tarball" ]; then
  command -v debootstrap >/dev/null || { echo "ensure-base-image: debootstrap missing" >&2; exit 1; }
  work="$(mktemp -d "$cache/rootfs.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  echo "ensure-base-image: debootstrap bookworm (about a minute)" >&2
  debootstrap --variant=minbase --include=python3,python3-venv,git,ca-certificates \
    bookworm "$work/rootfs" >"$cache/debootstrap.log" 2>&1 \
    || { echo "ensure-base-image: debootstrap failed, see $cache/debootstrap.log" >&2; exit 1; }
  tar -C "$work/rootfs" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
fi
docker import "$tarball" "$image" >/dev/null
echo "ensure-base-image: imported $image" >&2
