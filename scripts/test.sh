#!/usr/bin/env bash
# Installs what is missing, builds (Release) and runs the whole test suite
# with ctest, then prints how long each step took.
#   --sanitize   then also build with ASan + UBSan (into build-asan/) and run
#                the same suite there: about 20 minutes more on 2 cores
#                (.ci/run does both)
#   --only-sanitize   the sanitizer pass alone
set -euo pipefail
cd "$(dirname "$0")/.."
release=1
sanitize=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --only-sanitize) release=0; sanitize=1 ;;
    --no-sanitize) ;;  # the default (kept for old command lines)
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option '$a' (known: --sanitize, --only-sanitize)" >&2; exit 2 ;;
  esac
done

start=$SECONDS
times=()
step() {  # step NAME COMMAND...: runs it, remembers how long it took
  local name=$1 t0=$SECONDS
  shift
  "$@"
  times+=("$name $((SECONDS - t0)) s")
}

if [ "$release" = 1 ]; then
  echo "== set-up and build (Release)"
  step "set-up and build (Release):" scripts/setup.sh
  echo "== tests (Release)"
  step "tests (Release):" ctest --test-dir build -j2 --output-on-failure --timeout 600
fi
if [ "$sanitize" = 1 ]; then
  echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer)"
  step "build (ASan + UBSan):" env DRTMX_SANITIZE=1 scripts/setup.sh
  echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
  step "tests (ASan + UBSan):" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j2 --output-on-failure --timeout 900
fi
echo "== passed"
for t in "${times[@]}"; do echo "  $t"; done
echo "  in all: $((SECONDS - start)) s"
