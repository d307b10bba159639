#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default experiment: R2 on a
# 2-node local shm cluster — one-sided READ and RPC echo, 64-byte payloads.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for op in read rpc; do
  build/bin/r2-bench --fabric=shm --nodes=2 --threads=1 --coroutines=8 --op=$op \
    --payload=64 --batch=1 --seconds=3 "$@"
done
