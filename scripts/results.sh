#!/usr/bin/env bash
# Reruns every measurement of docs/performance.md and rewrites its results:
# the JSON reports, the plots and the summary table.
#
#   scripts/results.sh [--quick] [--silo=PATH/dbtest] [--only=STEP,...] [--skip=STEP,...]
#                      [--out=DIR] [--seconds=S] [--warmup=S] [--rounds=N]
#                      [--bin=DIR] [--pmem-dir=DIR] [--no-plots] [--list]
#
# Default: 6-s measured windows after 1 s of warm-up, 3 rounds for the main
# comparisons (4 for durable SmallBank and Silo, whose two sides should each
# run first as often; 2 for the costly TPC-C extras and TPC-E): about 21 minutes on
# a 2-core machine, 2 more with --silo (estimated from a --quick run's
# start-up costs; TPC-C's load takes ~13 s per run). Writes into docs/results/:
# one JSON report per step (the programs' own --json), the PNG plots
# scripts/plot.py draws from the drtmx-bench reports, commands.tsv (the exact
# command of every step, when and on which code it ran), machine.txt and
# summary.md (scripts/results_table.py), whose table also replaces the
# generated block of docs/performance.md.
#
# --quick      1-s windows, 1 round, short component runs: checks in about 5
#              minutes that every step runs. Its numbers are noisy: it writes
#              into build/results-quick/ (not docs/results/) unless --out says
#              otherwise, and never touches docs/performance.md.
# --silo=PATH  Silo's dbtest: adds one-node TPC-C pairs against Silo
#              (scripts/compare-silo.sh). Without it that step is skipped and
#              said so. Build steps: docs/performance.md, "Against Silo".
# --only, --skip  steps to run or leave out (names: --list). Reports of the
#              steps not run stay as they are in the output directory.
# --out=DIR    where the results go (default docs/results, or
#              build/results-quick with --quick); docs/performance.md is
#              updated only when DIR is docs/results.
# --seconds, --warmup, --rounds  override the measured window, the warm-up
#              and the rounds of the cluster runs.
# --bin=DIR    the programs (default build/bin; build them first:
#              scripts/setup.sh).
# --pmem-dir=DIR  the pool files of the durable steps (default
#              /dev/shm/drtmx-results; removed before and after).
# --no-plots   write no PNG (no matplotlib needed).
#
# Every step's output goes to a log in a scratch directory; the results are
# moved into the output directory only when every selected step succeeded.
# The first failing step stops the script with its command, exit status and
# the end of its log. Run it on an otherwise idle machine: every number moves
# with whatever else runs (docs/performance.md, "Methodology").
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "results.sh: $*" >&2; exit 1; }

quick=0
silo=""
only=""
skip=""
out=""
seconds=""
warmup=""
rounds=""
bin=build/bin
pmem_dir=/dev/shm/drtmx-results
plots=1
list=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --silo=*) silo="${1#--silo=}" ;;
    --only=*) only="${1#--only=}" ;;
    --skip=*) skip="${1#--skip=}" ;;
    --out=*) out="${1#--out=}" ;;
    --seconds=*) seconds="${1#--seconds=}" ;;
    --warmup=*) warmup="${1#--warmup=}" ;;
    --rounds=*) rounds="${1#--rounds=}" ;;
    --bin=*) bin="${1#--bin=}" ;;
    --pmem-dir=*) pmem_dir="${1#--pmem-dir=}" ;;
    --no-plots) plots=0 ;;
    --list) list=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "results.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# The steps, in the order they run (cheap component runs first, so that a
# broken build or machine fails within a minute).
steps=(micro r2 store rdpma smallbank-presets smallbank-delay smallbank-durability
       recovery failover-smallbank tpcc-presets tpcc-districts20 tpcc-durability
       tpcc-replicas tpcc-one-node silo failover-tpcc tpce)
describe() {
  case "$1" in
    micro) echo "micro-bench: the hot path's building blocks" ;;
    r2) echo "r2-bench --suite=thesis: one-sided READ/WRITE against RPC, coroutines, batching" ;;
    store) echo "store-bench YCSB-C: one-sided GETs against RPC, hash and ordered tables" ;;
    rdpma) echo "rdpma-bench: persistent WRITE by H9 against the strawman and two-sided, 2 us delay" ;;
    smallbank-presets) echo "SmallBank, 3 nodes: drtmh, drtmx, drtm-r, farm, fasst in rounds" ;;
    smallbank-delay) echo "SmallBank, 3 nodes: drtmh against drtmx with a 3 us fabric delay" ;;
    smallbank-durability) echo "SmallBank, 3 nodes: durability off against pmem (pools in /dev/shm)" ;;
    recovery) echo "SmallBank, 3 nodes: a durable cluster SIGKILLed, then restarted with --recover" ;;
    failover-smallbank) echo "SmallBank, 3 nodes: node 2 SIGKILLed mid-run, the survivors fail over" ;;
    tpcc-presets) echo "TPC-C, 3 nodes: drtmh, drtmx, drtm-r, farm, fasst in rounds" ;;
    tpcc-districts20) echo "TPC-C, 3 nodes, Stock-Level over 20 districts: drtmh, drtmx, drtmx-gts" ;;
    tpcc-durability) echo "TPC-C, 3 nodes: durability off against pmem" ;;
    tpcc-replicas) echo "TPC-C, 3 nodes: 1, 2 and 3 copies of each partition" ;;
    tpcc-one-node) echo "TPC-C, one node, one worker, one warehouse: 1, 2 and 8 coroutines" ;;
    silo) echo "TPC-C, one node: drtmx against Silo (only with --silo=PATH)" ;;
    failover-tpcc) echo "TPC-C, 3 nodes: node 2 SIGKILLed mid-run, the survivors fail over" ;;
    tpce) echo "TPC-E, 3 nodes: drtmh against drtmx" ;;
  esac
}
if [ "$list" = 1 ]; then
  for s in "${steps[@]}"; do printf '%-22s %s\n' "$s" "$(describe "$s")"; done
  exit 0
fi
known() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
for name in ${only//,/ } ${skip//,/ }; do
  known "$name" || die "no step named '$name' (the steps: --list)"
done
selected() {
  local s="$1"
  if [ -n "$only" ] && ! [[ ",$only," == *",$s,"* ]]; then return 1; fi
  if [ -n "$skip" ] && [[ ",$skip," == *",$s,"* ]]; then return 1; fi
  return 0
}
run_list=()
for s in "${steps[@]}"; do selected "$s" && run_list+=("$s"); done
[ "${#run_list[@]}" -gt 0 ] || die "--only and --skip leave no step to run"

# Windows and rounds. R2: the costly TPC-C extras and TPC-E.
if [ "$quick" = 1 ]; then
  S=1; W=0.5; R=1
  r2_args=(--seconds=0.3 --warmup=0.2)
  store_args=(--seconds=0.5 --warmup=0.3)
  rdpma_args=(--seconds=0.2 --warmup=0.05)
  micro_min=0.05
  [ -n "$out" ] || out=build/results-quick
else
  S=6; W=1; R=3
  r2_args=(--seconds=2 --warmup=0.5)
  store_args=(--seconds=3 --warmup=1)
  rdpma_args=(--seconds=2 --warmup=0.2)
  micro_min=0.5
  [ -n "$out" ] || out=docs/results
fi
[ -z "$seconds" ] || S="$seconds"
[ -z "$warmup" ] || W="$warmup"
[ -z "$rounds" ] || R="$rounds"
[[ "$S" =~ ^[1-9][0-9]*$ ]] || die "--seconds takes a whole number of seconds (at least 1), not '$S'"
[[ "$W" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--warmup takes a number of seconds, not '$W'"
[[ "$R" =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive whole number, not '$R'"
R2=$((R > 1 ? R - 1 : 1))
W2=$(awk -v w="$W" 'BEGIN { print w + 1 }')        # durable TPC-C: a longer warm-up
FS=$((S > 2 ? S : 2)); HALF=$((FS / 2))            # crash and failover runs: kill half-way
RS=$((R % 2 == 1 ? R + 1 : R))                     # two sides, each first as often: even
WI=$(awk -v w="$W" 'BEGIN { printf "%d", (w < 1 ? 1 : w) }')   # compare-silo.sh: whole seconds

# What must be there before anything runs.
need_bin() { [ -x "$bin/$1" ] || die "$bin/$1 is missing: build first (scripts/setup.sh) or give --bin=DIR"; }
for s in "${run_list[@]}"; do
  case "$s" in
    micro) need_bin micro-bench ;;
    r2) need_bin r2-bench ;;
    store) need_bin store-bench ;;
    rdpma) need_bin rdpma-bench ;;
    *) need_bin drtmx-bench; need_bin drtmx-node ;;
  esac
done
command -v python3 >/dev/null || die "python3 is missing (the summary table is written by scripts/results_table.py)"
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ "$plots" = 1 ] && ! "$py" -c 'import matplotlib' 2>/dev/null; then
  die "matplotlib is missing, so no plots can be drawn: install python3-matplotlib (scripts/setup.sh does) or pass --no-plots"
fi
if selected silo && [ -n "$silo" ] && [ ! -x "$silo" ]; then
  die "--silo=$silo is not an executable file (Silo's dbtest; docs/performance.md, \"Against Silo\")"
fi
if selected tpcc-durability; then
  avail_kb=$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')
  if [ "${avail_kb:-0}" -lt $((12 * 1024 * 1024)) ]; then
    die "/dev/shm has $((avail_kb / 1024 / 1024)) GiB free; durable TPC-C needs about 12 GiB (its pools are 8.9 GiB): free some, or --skip=tpcc-durability"
  fi
fi
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
  echo "results.sh: warning: the machine is not idle (load average $load): the numbers move with whatever else runs" >&2
fi

# The pool directory is removed before and after the durable steps: only
# when it holds nothing but pool files (drtmx-bench's *.pool), so that a
# mistyped --pmem-dir never deletes anything else.
clear_pools() {
  [ -e "$pmem_dir" ] || return 0
  if [ -n "$(find "$pmem_dir" -mindepth 1 ! -name '*.pool' -print -quit 2>/dev/null)" ]; then
    echo "results.sh: --pmem-dir $pmem_dir holds files that are not pool files; not removing it" >&2
    return 1
  fi
  rm -rf "$pmem_dir"
}
clear_pools || die "give --pmem-dir a new or empty directory (or one with only *.pool files)"
stage=$(mktemp -d "${TMPDIR:-/tmp}/drtmx-results.XXXXXX")
mkdir -p "$stage/logs"
trap 'clear_pools || true' EXIT
trap 'echo "results.sh: interrupted; nothing was written to $out (logs: $stage/logs)" >&2; exit 130' INT TERM

commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
B="$bin/drtmx-bench"
step_name=""
step_no=0
: >"$stage/commands.tsv"

# run ARGS...: runs one command of the current step, its output to the
# step's log; records it (without its --json=..., which names the report)
# in commands.tsv; stops the script if it fails.
run() {
  local log="$stage/logs/$step_name.log" shown=() a rc t0
  for a in "$@"; do
    case "$a" in --json=*|--benchmark_out=*) ;; *) shown+=("$a") ;; esac
  done
  printf '  %s\n' "${shown[*]}"
  echo "\$ $*" >>"$log"
  t0=$SECONDS
  set +e
  "$@" >>"$log" 2>&1
  rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    echo "results.sh: step $step_name failed (exit status $rc) running:" >&2
    echo "  $*" >&2
    echo "its last lines (the whole log: $log):" >&2
    tail -n 15 "$log" | sed 's/^/  | /' >&2
    echo "results.sh: stopped; nothing was written to $out (the reports so far: $stage)" >&2
    exit 1
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$step_name" "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit" \
    "$((SECONDS - t0))" "${shown[*]}" >>"$stage/commands.tsv"
}
j() { echo "--json=$stage/$1.json"; }

step_micro() {
  run "$bin/micro-bench" --benchmark_min_time="$micro_min" \
    --benchmark_out="$stage/micro.json" --benchmark_out_format=json
}
step_r2() { run "$bin/r2-bench" --suite=thesis "${r2_args[@]}" "$(j r2)"; }
step_store() {
  local r t
  for ((r = 1; r <= R; r++)); do
    for t in hash ordered; do
      run "$bin/store-bench" --table=$t --dist=uniform "${store_args[@]}" "$(j store-$t-r$r)"
    done
  done
}
step_rdpma() {
  run "$bin/rdpma-bench" --fabric-delay-ns=2000 --coroutines=1 "${rdpma_args[@]}" "$(j rdpma)"
}
step_smallbank-presets() {
  run "$B" --bench=smallbank --policy=drtmh,drtmx,drtm-r,farm,fasst --rounds=$R \
    --seconds=$S --warmup=$W "$(j smallbank-presets)"
}
step_smallbank-delay() {
  run "$B" --bench=smallbank --policy=drtmh,drtmx --fabric-delay-ns=3000 --rounds=$R2 \
    --seconds=$S --warmup=$W "$(j smallbank-delay)"
}
step_smallbank-durability() {
  run "$B" --bench=smallbank --sweep=durability=off,pmem --pmem-dir="$pmem_dir" --format \
    --rounds=$RS --seconds=$S --warmup=$W "$(j smallbank-durability)"
}
step_recovery() {
  run "$B" --bench=smallbank --durability=pmem --pmem-dir="$pmem_dir" --format \
    --seconds=$FS --warmup=$W --crash-at=$HALF
  run "$B" --bench=smallbank --durability=pmem --pmem-dir="$pmem_dir" --recover \
    --seconds=$HALF --warmup=$W "$(j recovery)"
  clear_pools
}
step_failover-smallbank() {
  local r
  for ((r = 1; r <= R; r++)); do
    run "$B" --bench=smallbank --seconds=$FS --warmup=$W --kill-node=2@$HALF --timeline-ms=10 \
      "$(j failover-smallbank-r$r)"
  done
}
step_tpcc-presets() {
  run "$B" --bench=tpcc --policy=drtmh,drtmx,drtm-r,farm,fasst --rounds=$R \
    --seconds=$S --warmup=$W "$(j tpcc-presets)"
}
step_tpcc-districts20() {
  run "$B" --bench=tpcc --stock-level-districts=20 --policy=drtmh,drtmx,drtmx-gts \
    --rounds=$R2 --seconds=$S --warmup=$W "$(j tpcc-districts20)"
}
step_tpcc-durability() {
  run "$B" --bench=tpcc --sweep=durability=off,pmem --pmem-dir="$pmem_dir" --format \
    --rounds=$R2 --seconds=$S --warmup=$W2 "$(j tpcc-durability)"
  clear_pools
}
step_tpcc-replicas() {
  run "$B" --bench=tpcc --sweep=replicas=1,2,3 --rounds=$R2 --seconds=$S --warmup=$W \
    "$(j tpcc-replicas)"
}
step_tpcc-one-node() {
  run "$B" --bench=tpcc --nodes=1 --replicas=1 --threads=1 --sweep=coroutines=1,2,8 \
    --rounds=$R --seconds=$S --warmup=$W "$(j tpcc-one-node)"
}
step_silo() {
  # compare-silo.sh prints machine-readable lines; they are the report.
  run scripts/compare-silo.sh --silo="$silo" --bench-exe="$B" --rounds=$RS \
    --seconds=$S --warmup=$WI --coroutines=1,8
  grep -E '^(run|pair|scale|median|load_average) ' "$stage/logs/silo.log" >"$stage/silo.txt"
}
step_failover-tpcc() {
  local r
  for ((r = 1; r <= R2; r++)); do
    run "$B" --bench=tpcc --seconds=$FS --warmup=$W --kill-node=2@$HALF --timeline-ms=10 \
      "$(j failover-tpcc-r$r)"
  done
}
step_tpce() {
  run "$B" --bench=tpce --policy=drtmh,drtmx --rounds=$R2 --seconds=$S --warmup=$W \
    "$(j tpce)"
}

echo "results.sh: ${#run_list[@]} steps, ${S}-s windows after ${W} s, $R rounds ($R2 for" \
  "the costly ones), into $out; logs in $stage/logs"
t_all=$SECONDS
ran=()
for s in "${run_list[@]}"; do
  step_no=$((step_no + 1))
  step_name="$s"
  if [ "$s" = silo ] && [ -z "$silo" ]; then
    echo "[$step_no/${#run_list[@]}] silo: skipped — no --silo=PATH/dbtest given (docs/performance.md," \
      "\"Against Silo\", says how to build Silo); the table keeps an earlier Silo row if $out has one"
    continue
  fi
  echo "[$step_no/${#run_list[@]}] $s: $(describe "$s") ($(date -u +%H:%M:%S) UTC)"
  t0=$SECONDS
  "step_$s"
  echo "  done in $((SECONDS - t0)) s"
  ran+=("$s")
done

# Everything ran: move the reports into place. Reports of steps that ran
# replace the earlier ones of the same step (e.g. fewer store-bench rounds).
mkdir -p "$out"
for s in "${ran[@]}"; do
  rm -f "$out/$s.json" "$out/$s.txt" "$out/$s"-r[0-9]*.json "$out/$s"-*-r[0-9]*.json "$out/$s"*.png
done
for f in "$stage"/*.json "$stage"/*.txt; do
  if [ -e "$f" ]; then mv "$f" "$out/"; fi
done
: >"$stage/commands.old"
if [ -f "$out/commands.tsv" ]; then   # keep the lines of the steps that did not run now
  awk -F'\t' -v ran=" ${ran[*]} " 'index(ran, " " $1 " ") == 0' "$out/commands.tsv" \
    >"$stage/commands.old"
fi
cat "$stage/commands.old" "$stage/commands.tsv" >"$out/commands.tsv"
{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
  echo "memory: $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "kernel: $(uname -r)"
  echo "dev_shm_huge: $(awk '$2 == "/dev/shm" { n = split($4, o, ","); h = "never";
    for (i = 1; i <= n; i++) if (o[i] ~ /^huge=/) h = substr(o[i], 6); print h; exit }' /proc/mounts)"
  echo "transparent_hugepage: $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "load_average_at_start: $load"
  echo "mode: $([ "$quick" = 1 ] && echo quick || echo full), seconds $S, warmup $W, rounds $R/$R2"
} >"$out/machine.txt"

if [ "$plots" = 1 ]; then
  reports=()
  for s in "${ran[@]}"; do
    case "$s" in
      micro|r2|store|rdpma|silo) ;;   # not drtmx-bench reports
      failover-*) reports+=("$out/$s-r1.json") ;;
      *) reports+=("$out/$s.json") ;;
    esac
  done
  if [ "${#reports[@]}" -gt 0 ]; then
    "$py" scripts/plot.py --out "$out" "${reports[@]}" >"$stage/logs/plot.log" 2>&1 ||
      { tail -n 15 "$stage/logs/plot.log" >&2; die "scripts/plot.py failed (log: $stage/logs/plot.log)"; }
  fi
fi

"$py" scripts/results_table.py --dir "$out" >"$out/summary.md" ||
  die "scripts/results_table.py failed on $out"
if [ "$(realpath "$out")" = "$(realpath docs/results)" ]; then
  "$py" scripts/results_table.py --dir "$out" --update docs/performance.md ||
    die "scripts/results_table.py could not update docs/performance.md"
  echo "results.sh: docs/performance.md's summary table rewritten"
fi
rm -rf "$stage"
echo "results.sh: done in $(((SECONDS - t_all) / 60)) min $(((SECONDS - t_all) % 60)) s;" \
  "results in $out (table: $out/summary.md)"
