#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default experiment:
# SmallBank on a local cluster of 3 drtmx-node processes (shm fabric,
# 1 worker thread x 8 coroutines each, 3-way replication, the drtmh
# protocol), 5 measured seconds after 1 of warm-up. Extra arguments go to
# drtmx-bench (e.g. --policy=all to compare the protocol presets).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/bin/drtmx-bench --bench=smallbank --nodes=3 --threads=1 --coroutines=8 \
  --replicas=3 --policy=drtmh --seconds=5 --warmup=1 "$@"
