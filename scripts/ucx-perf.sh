#!/usr/bin/env bash
# r2-bench --fabric=ucx beside ucx_perftest (UCX's own numbers), in the same
# minutes, on this host over tcp (UCX_TLS=tcp unless set): READ/GET,
# WRITE/PUT, CAS, message round trips; r2-bench with 1 and 8 coroutines, two
# node processes of which only node 0 issues (node 1 serves, as
# ucx_perftest's server does).
#   scripts/ucx-perf.sh [build dir] [seconds per r2-bench run]
# Prints one line per measurement:
#   <tool> <op> coroutines=<n> p50_us=<x> mops=<y>
set -euo pipefail
build=${1:-build}
secs=${2:-3}
export UCX_TLS=${UCX_TLS:-tcp}
bench="$build/bin/r2-bench"
[ -x "$bench" ] || { echo "ucx-perf: no $bench (build first)" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "ucx-perf: no ucx_perftest (apt-get install ucx-utils)" >&2; exit 1; }
port=$((20000 + RANDOM % 20000))

perftest() {  # test name, label
  ucx_perftest -p "$port" >/dev/null 2>&1 &
  local server=$!
  local out=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # the server listens within a moment
    if out=$(ucx_perftest 127.0.0.1 -p "$port" -t "$1" -s 8 -n 50000 -w 5000 -f 2>/dev/null); then
      break
    fi
    sleep 0.2
  done
  wait "$server" || true
  # Final line: iterations, typical/avg/overall latency (us), bandwidth..., msg rate
  local last
  last=$(echo "$out" | grep -E '^ *[0-9]' | tail -1)
  echo "ucx_perftest $2 $1 latency_us(typical,avg,overall)=$(echo "$last" | awk '{print $2","$3","$4}') msgrate=$(echo "$last" | awk '{print $(NF-1)}')/s"
  port=$((port + 1))
}

r2() {  # op, coroutines
  local out
  out=$("$bench" --fabric=ucx --nodes=2 --processes --issuers=1 --op="$1" --payload=8 \
    --coroutines="$2" --seconds="$secs" --warmup=0.5 2>&1)
  local nums
  nums=$(echo "$out" | sed -n 3p)
  echo "r2-bench $1 coroutines=$2 mops=$(echo "$nums" | awk '{print $1}') p50_us=$(echo "$nums" | awk '{print $2}') p99_us=$(echo "$nums" | awk '{print $3}') cpu_us_per_op=$(echo "$nums" | awk '{print $4}')"
}

echo "# $(date -u +%FT%TZ) UCX_TLS=$UCX_TLS $(ucx_info -v | head -1)"
"$bench" --fabric=ucx --nodes=2 --processes --op=read --seconds=0.2 --warmup=0 2>&1 | head -1
for pair in "ucp_get read" "ucp_put_lat write" "ucp_cswap cas" "ucp_am_lat rpc"; do
  set -- $pair
  perftest "$1" "$2"
  r2 "$2" 1
  r2 "$2" 8
done
