#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest:
# first the Release build, then the same suite under ASan + UBSan.
#   --no-sanitize   skip the sanitizer pass (quicker local runs)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=1
for a in "$@"; do
  case "$a" in
    --no-sanitize) sanitize=0 ;;
    *) echo "test.sh: unknown option '$a' (known: --no-sanitize)" >&2; exit 2 ;;
  esac
done

scripts/setup.sh
echo "== tests (Release)"
ctest --test-dir build -j2 --output-on-failure --timeout 600

if [ "$sanitize" = 1 ]; then
  DRTMX_SANITIZE=1 scripts/setup.sh
  echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j2 --output-on-failure --timeout 900
fi
