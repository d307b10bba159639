#!/bin/sh
# ctest: install this build into a temporary prefix, build examples/ against
# the installed package only (find_package(drtmx)), and run each example
# under the default preset and under MVCC; each run's check must pass.
#   build_and_run.sh BUILD_DIR EXAMPLES_DIR
set -eu
build=$1
examples=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "examples: cmake --install failed"; exit 1; }
cmake -S "$examples" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; echo "examples: configuring against the package failed"; exit 1; }
cmake --build "$work/build" -j2 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; echo "examples: building against the package failed"; exit 1; }
for example in bank eventlog; do
  for policy in drtmh drtmx; do
    if ! out=$("$work/build/$example" --bench=$example --policy=$policy --seconds=1 \
        --warmup=0.2 --cluster="ex$$$example" 2>&1); then
      echo "$out"; echo "examples: $example --policy=$policy failed"; exit 1
    fi
    echo "$out" | grep -q "check: ok" || { echo "$out"; echo "examples: no check: ok"; exit 1; }
    echo "$example --policy=$policy: $(echo "$out" | grep 'committed/s' | tail -1)"
  done
done
# A bad workload option is the workload's error, not a crash.
if out=$("$work/build/bank" --bench=bank --accounts=65 2>&1); then
  echo "$out"; echo "examples: --accounts=65 was accepted"; exit 1
fi
echo "$out" | grep -q "accounts must be a multiple of 64" || { echo "$out"; exit 1; }
