#!/bin/sh
# Leaves in the build folder only what one service runs: its own folder and the workspace packages
# it depends on (each with its production node_modules), the root's node_modules (tsx) and the
# workspace files, so each image carries one service and not the other three.
# Usage (after the filtered production install): sh deploy/docker/prune.sh @gw/<service>
set -eu
keep=$(pnpm ls --recursive --depth -1 --parseable --filter-prod "$1..." | sed "s#^$PWD/##")
for dir in packages/* services/*; do
  printf '%s\n' "$keep" | grep -qx "$dir" || rm -rf "$dir"
done
rm -f deploy/docker/prune.sh
