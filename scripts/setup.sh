#!/usr/bin/env bash
# Installs the Debian packages drtmx needs (only the missing ones), then
# configures and builds into build/ (Release). Idempotent and quiet when
# nothing changed.
#   DRTMX_SANITIZE=1  build with ASan + UBSan into build-asan/ instead
#   BUILD_DIR=dir     build somewhere else
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ ninja-build pkg-config libibverbs-dev librdmacm-dev ibverbs-providers
  libucx-dev ucx-utils iproute2
  libboost-context-dev libboost-coroutine-dev libboost-program-options-dev
  libpmem-dev libjemalloc-dev libprotobuf-dev protobuf-compiler libssl-dev libgtest-dev libbenchmark-dev libsimdjson-dev
  python3 python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

sanitize=OFF
build_dir=${BUILD_DIR:-build}
if [ "${DRTMX_SANITIZE:-0}" = 1 ]; then
  sanitize=ON
  build_dir=${BUILD_DIR:-build-asan}
fi
build_type=Release
[ "$sanitize" = ON ] && build_type=RelWithDebInfo

if [ ! -f "$build_dir/build.ninja" ]; then
  log=$(mktemp)
  # Both compile in batches (CMakeLists.txt, DRTMX_UNITY): the sanitizer
  # build file by file took twice as long, the CI budget's largest part
  # (docs/design-notes.md, "Build and tests").
  unity=ON
  if ! cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=$build_type \
      -DDRTMX_SANITIZE=$sanitize -DDRTMX_UNITY=$unity >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
fi
if ! out=$(cmake --build "$build_dir" -j2 2>&1); then
  echo "$out" >&2
  echo "setup: the build in $build_dir failed (output above)" >&2
  exit 1
fi
