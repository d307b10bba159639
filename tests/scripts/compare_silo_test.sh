#!/usr/bin/env bash
# scripts/compare-silo.sh: pairs and ratios against a stand-in peer, rounds
# in alternating order, a clear message and drtmx alone without one, refusal
# of bad options.
#   compare_silo_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
script="$src/scripts/compare-silo.sh"
common=(--bench-exe="$build/bin/drtmx-bench" --rounds=2 --seconds=1 --warmup=0 --coroutines=1,2)

# A stand-in for Silo's dbtest: its last line starts with txn/s.
cat >"$tmp/dbtest" <<'PEER'
#!/bin/sh
echo "some progress line"
echo "1000 1000 0.5 0 0"
PEER
chmod +x "$tmp/dbtest"
out=$("$script" --silo="$tmp/dbtest" "${common[@]}" -- --seed=7 2>&1) ||
  fail "run with a peer: $out"
# Round 1: Silo, then 1, 2; round 2 the other way round: 2, 1, then Silo.
order=$(grep '^run ' <<<"$out" | sed 's/^run round=\([0-9]\) peer=\([a-z]*\)\( coroutines=\([0-9]\)\)\{0,1\}.*/\1:\2\4/' | tr '\n' ' ')
[ "$order" = "1:silo 1:drtmx1 1:drtmx2 2:drtmx2 2:drtmx1 2:silo " ] || fail "run order '$order': $out"
grep -q '^run round=1 peer=silo txn_per_s=1000$' <<<"$out" || fail "no silo run line: $out"
declare -A got=()
for r in 1 2; do
  for c in 1 2; do
    line=$(grep "^pair round=$r coroutines=$c " <<<"$out") || fail "no pair for $r/$c: $out"
    d=$(sed 's/.*drtmx=\([0-9]*\).*/\1/' <<<"$line")
    q=$(sed 's/.*ratio=\([0-9.]*\).*/\1/' <<<"$line")
    [ "$d" -gt 0 ] || fail "drtmx committed nothing: $line"
    want=$(awk -v d="$d" 'BEGIN { printf "%.2f", d / 1000 }')
    [ "$q" = "$want" ] || fail "ratio $q, expected $want: $line"
    got[$r$c]=$d
  done
  want=$(awk -v a="${got[${r}2]}" -v b="${got[${r}1]}" 'BEGIN { printf "%.2f", a / b }')
  grep -q "^scale round=$r coroutines=2 over=1 ratio=$want$" <<<"$out" ||
    fail "no scale line $r (want $want): $out"
done
grep -q '^median coroutines=1 ratio=[0-9.]* pairs=2$' <<<"$out" || fail "no median for 1: $out"
grep -q '^median scale coroutines=2 over=1 ratio=[0-9.]* rounds=2$' <<<"$out" ||
  fail "no median scale: $out"
if grep -q '^scale round=[12] coroutines=1 ' <<<"$out"; then fail "a scale of 1 over 1: $out"; fi

# No peer: said, and drtmx runs alone.
out=$("$script" --silo="$tmp/none" "${common[@]}" 2>&1) ||
  fail "run without a peer: $out"
grep -q "Silo's dbtest not found at '$tmp/none'" <<<"$out" || fail "no message: $out"
grep -q '^run round=1 peer=drtmx coroutines=2 txn_per_s=[1-9]' <<<"$out" || fail "no run: $out"
if grep -q '^pair' <<<"$out"; then fail "pairs without a peer: $out"; fi

# Bad options.
for bad in --rounds=0 --seconds=x --warmup=-1 --coroutines=2,a --frobnicate; do
  if out=$("$script" "$bad" 2>&1); then fail "$bad accepted"; fi
  grep -q "compare-silo.sh:" <<<"$out" || fail "$bad: no reason given: $out"
done
echo "compare-silo.sh: ok"
