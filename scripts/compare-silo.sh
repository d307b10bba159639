#!/usr/bin/env bash
# Runs Silo's TPC-C (the single-node OCC engine TPC-C numbers are compared
# with) and drtmx's single-node TPC-C alternately and prints each pair's
# committed transactions per second and their ratio, then the median ratio.
#
#   scripts/compare-silo.sh [--silo=PATH] [--rounds=N] [--seconds=S]
#                           [--coroutines=C[,C...]] [--bench-exe=PATH]
#                           [-- extra drtmx-bench options]
#
# --silo       Silo's dbtest binary (default: $SILO_DBTEST, else
#              ../silo/out-perf.masstree/benchmarks/dbtest beside the repository).
#              Silo is not part of drtmx: build it yourself (docs/performance.md,
#              "Against Silo"). Without it the script says so and runs drtmx alone.
# --rounds     pairs to run (default 3)
# --seconds    measured seconds per run (default 10)
# --coroutines drtmx coroutines per worker, a comma list (default 1,2,8): each
#              pair runs Silo once and drtmx once per value.
# --warmup     drtmx's unmeasured seconds before each run (default 2)
# --bench-exe  drtmx-bench to run (default build/bin/drtmx-bench)
# Both run 1 worker thread on 1 warehouse with the full TPC-C mix, no replication
# (drtmx's tables grow as the run inserts rows: any --seconds fits).
# Rounds alternate their order: odd rounds run Silo, then drtmx in the
# --coroutines order; even rounds run drtmx in the reverse order, then Silo.
# A machine whose speed drifts during the sitting (shared machines do, by a
# third within minutes) then favors neither side over a pair of rounds:
# give an even --rounds.
# Output: one line per run, "run peer=... txn_per_s=..."; per pair,
# "pair round=N coroutines=C silo=... drtmx=... ratio=..."; per round and
# coroutine count after the first, "scale round=N coroutines=C over=FIRST
# ratio=..." (drtmx at C over drtmx at the first count); then the medians.
# All machine-readable.
set -euo pipefail
cd "$(dirname "$0")/.."

silo="${SILO_DBTEST:-../silo/out-perf.masstree/benchmarks/dbtest}"
rounds=3
seconds=10
warmup=2
coroutines="1,2,8"
extra=()
bench=build/bin/drtmx-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --silo=*) silo="${1#--silo=}" ;;
    --rounds=*) rounds="${1#--rounds=}" ;;
    --seconds=*) seconds="${1#--seconds=}" ;;
    --coroutines=*) coroutines="${1#--coroutines=}" ;;
    --warmup=*) warmup="${1#--warmup=}" ;;
    --bench-exe=*) bench="${1#--bench-exe=}" ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-silo.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$rounds" "$seconds"; do
  if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
    echo "compare-silo.sh: --rounds and --seconds take a positive whole number, not '$n'" >&2
    exit 2
  fi
done
if ! [[ "$warmup" =~ ^[0-9]+$ ]]; then
  echo "compare-silo.sh: --warmup takes a whole number of seconds, not '$warmup'" >&2
  exit 2
fi
IFS=, read -r -a cos <<<"$coroutines"
for c in "${cos[@]}"; do
  if ! [[ "$c" =~ ^[1-9][0-9]*$ ]]; then
    echo "compare-silo.sh: --coroutines takes positive whole numbers, not '$c'" >&2
    exit 2
  fi
done

if [ ! -x "$bench" ]; then
  echo "compare-silo.sh: $bench is missing: build first (scripts/setup.sh) or give --bench-exe" >&2
  exit 2
fi
have_silo=1
if [ ! -x "$silo" ]; then
  have_silo=0
  echo "compare-silo.sh: Silo's dbtest not found at '$silo' (set --silo=PATH or SILO_DBTEST;" \
    "docs/performance.md says how to build it): running drtmx alone, no ratios" >&2
fi

run_silo() {
  # The last line of dbtest's output starts with committed txn/s.
  local out
  if ! out=$("$silo" --bench tpcc --num-threads 1 --scale-factor 1 --runtime "$seconds" 2>/dev/null); then
    echo "compare-silo.sh: Silo failed: $silo" >&2
    return 1
  fi
  tail -n 1 <<<"$out" | awk '{printf "%.0f\n", $1}'
}

run_drtmx() {
  local out
  if ! out=$("$bench" --bench=tpcc --nodes=1 --replicas=1 --threads=1 --coroutines="$1" \
    --seconds="$seconds" --warmup="$warmup" ${extra[@]+"${extra[@]}"} 2>&1); then
    echo "compare-silo.sh: drtmx-bench failed:" >&2
    tail -n 5 <<<"$out" >&2
    return 1
  fi
  grep -m1 '^  committed/s' <<<"$out" | awk '{print $2}'
}

ratios=()
scales=()
first="${cos[0]}"
for ((r = 1; r <= rounds; r++)); do
  # This round's order of the drtmx runs (reversed in even rounds).
  order=("${cos[@]}")
  if ((r % 2 == 0)); then
    order=()
    for ((i = ${#cos[@]} - 1; i >= 0; i--)); do order+=("${cos[$i]}"); done
  fi
  s=""
  if [ "$have_silo" = 1 ] && ((r % 2 == 1)); then
    s=$(run_silo)
    echo "run round=$r peer=silo txn_per_s=$s"
  fi
  declare -A got=()
  for c in "${order[@]}"; do
    got[$c]=$(run_drtmx "$c")
    echo "run round=$r peer=drtmx coroutines=$c txn_per_s=${got[$c]}"
  done
  if [ "$have_silo" = 1 ] && ((r % 2 == 0)); then
    s=$(run_silo)
    echo "run round=$r peer=silo txn_per_s=$s"
  fi
  for c in "${cos[@]}"; do
    d="${got[$c]}"
    if [ -n "$s" ]; then
      ratio=$(awk -v d="$d" -v s="$s" 'BEGIN { printf "%.2f", d / s }')
      echo "pair round=$r coroutines=$c silo=$s drtmx=$d ratio=$ratio"
      ratios+=("$c:$ratio")
    fi
    if [ "$c" != "$first" ]; then
      ratio=$(awk -v d="$d" -v f="${got[$first]}" 'BEGIN { printf "%.2f", d / f }')
      echo "scale round=$r coroutines=$c over=$first ratio=$ratio"
      scales+=("$c:$ratio")
    fi
  done
  unset got
done
median() {  # lines "C:ratio" on stdin; prints the median ratio of C and the count
  awk -F: -v c="$1" '$1 == c { print $2 }' | sort -n |
    awk '{ v[NR] = $1 } END { printf "%s %d\n", v[int((NR + 1) / 2)], NR }'
}
for c in "${cos[@]}"; do
  if [ "${#ratios[@]}" -gt 0 ]; then
    read -r m n < <(printf '%s\n' "${ratios[@]}" | median "$c")
    echo "median coroutines=$c ratio=$m pairs=$n"
  fi
  if [ "$c" != "$first" ] && [ "${#scales[@]}" -gt 0 ]; then
    read -r m n < <(printf '%s\n' "${scales[@]}" | median "$c")
    echo "median scale coroutines=$c over=$first ratio=$m rounds=$n"
  fi
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load_average $load"
