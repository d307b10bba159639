#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default experiment:
# SmallBank on a local cluster of 3 drtmx-node processes (shm fabric,
# 1 worker thread x 8 coroutines each, 3-way replication, the drtmh
# protocol), 5 measured seconds after 1 of warm-up. Extra arguments go to
# drtmx-bench and replace the defaults they name (e.g. --policy=all to
# compare the protocol presets, --seconds=20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
defaults=(--bench=smallbank --nodes=3 --threads=1 --coroutines=8 --replicas=3 --policy=drtmh
  --seconds=5 --warmup=1)
args=()
for d in "${defaults[@]}"; do
  key=${d%%=*}
  given=0
  for a in "$@"; do
    if [ "$a" = "$key" ] || [ "${a%%=*}" = "$key" ]; then given=1; fi
  done
  [ "$given" = 1 ] || args+=("$d")
done
exec build/bin/drtmx-bench "${args[@]}" "$@"
