#!/usr/bin/env bash
# Builds k3 and runs every test.
#   scripts/test.sh              Release build in build/, then ctest
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in build-asan/, then ctest
# Installs missing Debian packages first (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
flags=(-DCMAKE_BUILD_TYPE=Release)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DK3_SANITIZE=ON)
fi
scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j "$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# --no-tests=error: an empty test list (a broken glob, a misconfigured build) fails instead of passing.
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
