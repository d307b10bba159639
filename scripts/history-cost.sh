#!/bin/bash
# What --history costs a cluster run: each workload without and with a
# history, alternating, for ROUNDS rounds; prints one JSON line per run and
# the median ratios (with / without) of committed/s and CPU per transaction.
#   scripts/history-cost.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-4}
seconds=${3:-4}
bench="$build/bin/drtmx-bench"
tmp=$(mktemp -d /dev/shm/history-cost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results"
: > "$results"
for r in $(seq 1 "$rounds"); do
  for wl in smallbank append; do
    for h in off on; do
      args=(--bench="$wl" --seconds="$seconds" --warmup=1 --json="$tmp/r.json")
      [ "$h" = on ] && args+=(--history="$tmp/h.jsonl")
      "$bench" "${args[@]}" > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
      tps=$(grep -o '"tps": [0-9.]*' "$tmp/r.json" | head -1 | awk '{print $2}')
      cpu=$(grep -o '"cpu_us_per_txn": [0-9.]*' "$tmp/r.json" | head -1 | awk '{print $2}')
      echo "{\"round\": $r, \"bench\": \"$wl\", \"history\": \"$h\", \"tps\": $tps, \"cpu_us_per_txn\": $cpu}" |
        tee -a "$results"
      rm -rf "$tmp"/h.jsonl*
    done
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for wl in ("smallbank", "append"):
    tps, cpu = [], []
    for r in sorted({x["round"] for x in runs}):
        off = next(x for x in runs if x["round"] == r and x["bench"] == wl and x["history"] == "off")
        on = next(x for x in runs if x["round"] == r and x["bench"] == wl and x["history"] == "on")
        tps.append(on["tps"] / off["tps"])
        cpu.append(on["cpu_us_per_txn"] / off["cpu_us_per_txn"])
    print(json.dumps({"bench": wl, "tps_ratio_median": round(statistics.median(tps), 3),
                      "cpu_per_txn_ratio_median": round(statistics.median(cpu), 3),
                      "tps_ratios": [round(x, 3) for x in tps]}))
PY
