#!/usr/bin/env bash
# k3's matmul kernels against ggml's CPU backend (the kernels llama.cpp runs
# on a CPU), same weights, shapes and threads: builds k3-bench-ggml against
# an installed ggml and runs it, with the machine and its load around the
# run. Not part of CI. See bench/llamacpp/README.md for the figures.
#
#   bench/llamacpp/run.sh GGML_PREFIX [k3-bench-ggml flags: --reps N --threads "1 2" --only TEXT --quick]
#
# GGML_PREFIX is where ggml was installed (it holds lib/cmake/ggml). The k3
# build goes to $K3_BENCH_BUILD (default build-ggml/ in the repository).
set -euo pipefail
if [ $# -lt 1 ] || [ "$1" = --help ] || [ "$1" = -h ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0 || exit 2
fi
prefix=$1
shift
config=$(find "$prefix" -name ggml-config.cmake -print -quit 2>/dev/null || true)
if [ -z "$config" ]; then
  echo "run.sh: $prefix: no ggml-config.cmake under it (give the prefix ggml was installed to)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${K3_BENCH_BUILD:-$root/build-ggml}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DK3_BUILD_TESTS=OFF -DK3_BENCH_GGML=ON \
  -Dggml_DIR="$(dirname "$config")" > /dev/null
cmake --build "$build" -j"$(nproc)" --target k3-bench-ggml > /dev/null
echo "date: $(date -u +%FT%TZ)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bin/k3-bench-ggml" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
