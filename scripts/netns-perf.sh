#!/usr/bin/env bash
# Across namespace hosts on this machine (scripts/netns-cluster.sh; root),
# UCX over tcp between them, in the same minutes as the one-host baselines:
#   1. drtmx-bench SmallBank and TPC-C: --fabric=ucx on 3 namespace hosts
#      against --fabric=shm on one host, alternating, ROUNDS rounds;
#   2. r2-bench --fabric=ucx between two namespace hosts (node 0 issues,
#      node 1 serves) against ucx_perftest between the same two namespaces:
#      READ/GET and WRITE/PUT latency with 1 and 8 coroutines.
#   scripts/netns-perf.sh [build dir] [seconds per run] [rounds]
# Prints one line per measurement; removes the cluster on every exit.
set -euo pipefail
build=${1:-build}
secs=${2:-5}
rounds=${3:-2}
here="$(cd "$(dirname "$0")" && pwd)"
name="dxp$$"
for b in drtmx-bench drtmx-node r2-bench; do
  [ -x "$build/bin/$b" ] || { echo "netns-perf: no $build/bin/$b (build first)" >&2; exit 1; }
done
command -v ucx_perftest >/dev/null || { echo "netns-perf: no ucx_perftest (apt-get install ucx-utils)" >&2; exit 1; }
trap '"$here/netns-cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT INT TERM
"$here/netns-cluster.sh" up 3 "$name" >/dev/null
dir="${TMPDIR:-/tmp}/drtmx-netns/$name"
coord=$(cat "$dir/coordinator")
net=${coord%.1}
bench="$(cd "$build/bin" && pwd)/drtmx-bench"
r2="$(cd "$build/bin" && pwd)/r2-bench"
export UCX_TLS=tcp UCX_NET_DEVICES=eth0

committed() { awk '$1 == "committed/s" {print $2; exit}'; }

echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $(ucx_info -v | head -1)"
logs=$(mktemp -d "${TMPDIR:-/tmp}/netns-perf.XXXXXX")
for wl in smallbank tpcc; do
  for r in $(seq 1 "$rounds"); do
    # A failed run is reported as such (its output stays in $logs).
    nice "$bench" --bench=$wl --nodes=3 --seconds="$secs" --warmup=1 >"$logs/$wl-shm-$r" 2>&1 || true
    ip netns exec "$name-c" nice "$bench" --bench=$wl --fabric=ucx --hosts="$dir/hosts" \
      --remote-shell="$dir/shell" --coordinator-host="$coord" --seconds="$secs" --warmup=1 \
      >"$logs/$wl-ucx-$r" 2>&1 || true
    shm=$(committed <"$logs/$wl-shm-$r")
    ucx=$(committed <"$logs/$wl-ucx-$r")
    echo "drtmx-bench $wl round=$r shm_committed_s=${shm:-failed} ucx_netns_committed_s=${ucx:-failed}" \
      "ratio=$(awk -v a="${ucx:-0}" -v b="${shm:-0}" 'BEGIN{ if (b > 0) printf "%.4f", a / b; else print "-" }')"
  done
  for f in shm ucx; do
    echo "  $wl $f: $(grep -h 'per transaction:' "$logs/$wl-$f-1" | sed 's/^ *//')"
  done
done
echo "# full outputs: $logs"

port=$((20000 + RANDOM % 20000))
perftest() { # test, label
  ip netns exec "$name-h1" ucx_perftest -p "$port" >/dev/null 2>&1 &
  local server=$! out=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do # the server listens within a moment
    if out=$(ip netns exec "$name-h0" ucx_perftest "$net.11" -p "$port" -t "$1" -s 8 -n 50000 \
      -w 5000 -f 2>/dev/null); then
      break
    fi
    sleep 0.2
  done
  wait "$server" || true
  local last
  last=$(echo "$out" | grep -E '^ *[0-9]' | tail -1)
  echo "ucx_perftest $2 $1 latency_us(typical,avg,overall)=$(echo "$last" | awk '{print $2","$3","$4}') msgrate=$(echo "$last" | awk '{print $(NF-1)}')/s"
  port=$((port + 1))
}
# Nodes started by hand share a cluster key (a file only its owner reads).
key="$dir/r2.key"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$key")
r2run() { # op, coroutines
  local common="--fabric=ucx --nodes=2 --issuers=1 --op=$1 --payload=8 --coroutines=$2
    --seconds=$secs --warmup=0.5 --cluster=${name}r2 --coordinator=$net.10:$port
    --cluster-key-file=$key"
  ip netns exec "$name-h1" "$r2" $common --node=1 >/dev/null 2>&1 &
  local other=$! out
  out=$(ip netns exec "$name-h0" "$r2" $common --node=0 --host-coordinator 2>&1)
  wait "$other" || true
  local nums
  nums=$(echo "$out" | sed -n 3p)
  echo "r2-bench $1 coroutines=$2 mops=$(echo "$nums" | awk '{print $1}') p50_us=$(echo "$nums" | awk '{print $2}') p99_us=$(echo "$nums" | awk '{print $3}') cpu_us_per_op=$(echo "$nums" | awk '{print $4}')"
  port=$((port + 1))
}
for pair in "ucp_get read" "ucp_put_lat write"; do
  set -- $pair
  perftest "$1" "$2"
  r2run "$2" 1
  r2run "$2" 8
done
