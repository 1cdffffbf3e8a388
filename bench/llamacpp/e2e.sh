#!/usr/bin/env bash
# k3 against llama.cpp end to end, on the same synthetic Kimi-K3 weights:
# fetches llama.cpp's source at a pinned version, builds it for this CPU,
# converts a k3-synth checkpoint with llama.cpp's own converter and runs
# llama-bench and k3-forward side by side. Not part of CI or the default
# build. See bench/llamacpp/E2E.md for the figures and what each stage needs.
#
#   bench/llamacpp/e2e.sh STAGE WORK_DIR [args]
#
#   fetch   WORK_DIR          npm pack node-llama-cpp (pinned, sha256 checked),
#                             clone the llama.cpp git bundle it carries to WORK_DIR/src
#   build   WORK_DIR          CPU-only Release build (GGML_NATIVE, no network code) of
#                             llama-bench and libllama in WORK_DIR/build, plus
#                             llama-k3-logits (bench/llamacpp/llama_k3_logits.cpp)
#   convert WORK_DIR MODEL OUT.gguf
#                             llama.cpp's converter on a k3-synth checkpoint (through
#                             bench/llamacpp/convert_k3.py; BF16 trunk, MXFP4 experts)
#   bench   WORK_DIR MODEL OUT.gguf [--reps N] [--threads "1 2"] [--prompt N] [--gen N] [--trunk DIR]
#                             k3-forward (resident) and llama-bench interleaved, medians
#   check   WORK_DIR MODEL OUT.gguf [--prompt N]
#                             the next-token logits of one prompt from both, compared
#
# k3's tools come from $K3_BIN (default: build/ of this repository). With
# K3_BENCH_LOCK=FILE the bench stage holds flock FILE for its whole
# interleaved sequence (a machine shared by several benchmarks). Needs npm, git, cmake, ninja, g++ and, to convert,
# python3-torch python3-numpy python3-yaml python3-tqdm (scripts/install-deps.sh --llamacpp).
# Exits 2 on bad usage or a missing piece, 8 when the download's sha256 or
# the clone's commit is not the pinned one.
set -euo pipefail

# The pinned source: node-llama-cpp 3.22.1 ships llama.cpp's tree as one git
# bundle (commit de3ff815ea7d559ee917f063901b8986f038abc6, 2026-09-28).
NLC_VERSION=3.22.1
NLC_SHA256=a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f
LLAMA_COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
if [ $# -lt 2 ]; then
  usage >&2
  exit 2
fi
stage=$1
work=$2
shift 2
mkdir -p "$work"
work=$(cd "$work" && pwd)

die() {
  echo "e2e.sh: $*" >&2
  exit "${E2E_EXIT:-2}"
}

stage_fetch() {
  local tgz="$work/node-llama-cpp-$NLC_VERSION.tgz"
  if [ ! -f "$tgz" ]; then
    (cd "$work" && npm pack --silent "node-llama-cpp@$NLC_VERSION" > /dev/null)
  fi
  local got
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  [ "$got" = "$NLC_SHA256" ] || E2E_EXIT=8 die "$tgz: sha256 $got, expected $NLC_SHA256 (delete it and fetch again)"
  rm -rf "$work/pkg" && mkdir "$work/pkg"
  tar -xzf "$tgz" -C "$work/pkg" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  if [ ! -d "$work/src/.git" ]; then
    git clone --quiet "$work/pkg/package/llama/gitRelease.bundle" "$work/src"
  fi
  local head
  head=$(git -C "$work/src" rev-parse HEAD)
  [ "$head" = "$LLAMA_COMMIT" ] || E2E_EXIT=8 die "$work/src is at $head, expected $LLAMA_COMMIT (remove $work/src and fetch again)"
  echo "llama.cpp $head ($(git -C "$work/src" log -1 --format=%cs)) in $work/src"
}

stage_build() {
  [ -d "$work/src/.git" ] || die "$work/src: no llama.cpp tree (run: $0 fetch $work)"
  # As a user builds it for this machine's CPU; no curl/OpenSSL (nothing here downloads).
  nice -n 19 cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DBUILD_SHARED_LIBS=ON > "$work/cmake.log"
  nice -n 19 cmake --build "$work/build" -j2 --target llama-bench llama
  nice -n 19 g++ -O2 -std=c++17 -I"$work/src/include" -I"$work/src/ggml/include" \
    "$here/llama_k3_logits.cpp" -o "$work/build/bin/llama-k3-logits" \
    -L"$work/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$work/build/bin"
  echo "built llama-bench and llama-k3-logits in $work/build/bin"
  grep -E '^(CMAKE_BUILD_TYPE|GGML_NATIVE|GGML_OPENMP|GGML_LLAMAFILE|GGML_AVX2|CMAKE_CXX_COMPILER):' "$work/build/CMakeCache.txt" || true
}

stage_convert() {
  [ $# -ge 2 ] || die "convert needs MODEL_DIR OUT.gguf (--help)"
  local model=$1 out=$2
  [ -f "$model/config.json" ] || die "$model: no config.json (give a k3-synth checkpoint directory)"
  for m in torch numpy yaml tqdm; do
    /usr/bin/python3 -c "import $m" 2>/dev/null ||
      die "python3 module $m missing (scripts/install-deps.sh --llamacpp)"
  done
  # BF16 trunk (the checkpoint's own type); the converter repacks the MXFP4 experts as GGUF MXFP4.
  nice -n 19 /usr/bin/python3 "$here/convert_k3.py" "$work/src" "$model" --outfile "$out" --outtype bf16
}


k3_bin() {
  local bin=${K3_BIN:-$root/build}
  for t in k3-forward k3-pack; do
    [ -x "$bin/$t" ] || die "$bin/$t missing (build k3, or set K3_BIN to its binaries)"
  done
  echo "$bin"
}

# The prompt: N ids spread over the ordinary vocabulary, the same for both sides.
prompt_ids() { /usr/bin/python3 -c "import sys; n=int(sys.argv[1]); print(' '.join(str((i*7919+13)%32000+100) for i in range(n)))" "$1"; }

stage_bench() {
  [ $# -ge 2 ] || die "bench needs MODEL_DIR OUT.gguf (--help)"
  local model=$1 gguf=$2 reps=3 threads="1 2" prompt=64 gen=8 trunk=$1.trunk
  shift 2
  while [ $# -gt 0 ]; do
    case "$1" in
      --reps) reps=$2; shift 2 ;;
      --threads) threads=$2; shift 2 ;;
      --prompt) prompt=$2; shift 2 ;;
      --gen) gen=$2; shift 2 ;;
      --trunk) trunk=$2; shift 2 ;;
      *) die "bench: unknown flag '$1' (--reps N --threads \"1 2\" --prompt N --gen N --trunk DIR)" ;;
    esac
  done
  local bin res llama=$work/build/bin/llama-bench
  bin=$(k3_bin)
  [ -x "$llama" ] || die "$llama missing (run: $0 build $work)"
  [ -f "$gguf" ] || die "$gguf: no such file (run: $0 convert $work MODEL OUT.gguf)"
  # k3's packed trunk of MODEL (k3-pack; made once if missing).
  if [ ! -f "$trunk/trunk.json" ]; then "$bin/k3-pack" "$model" "$trunk" > /dev/null; fi
  res=$work/results/$(basename "$gguf" .gguf)-p$prompt-g$gen
  # A run's table is its own reps only: an earlier run of the same prompt and
  # length with more reps would otherwise leave its files in the medians.
  rm -rf "$res"
  mkdir -p "$res"
  prompt_ids "$prompt" > "$res/prompt.ids"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores" | tee "$res/machine.txt"
  # Benchmarks run at normal priority; with K3_BENCH_LOCK set the whole
  # sequence holds that lock, so benchmarks sharing the machine never overlap
  # and the two sides see the same machine.
  if [ -n "${K3_BENCH_LOCK:-}" ]; then
    exec 9> "$K3_BENCH_LOCK"
    echo "waiting for $K3_BENCH_LOCK ..."
    flock 9
  fi
  for rep in $(seq "$reps"); do
    for t in $threads; do
      # k3 resident: whole trunk pinned, every expert cached (the load reads them all).
      # --gen is one more than llama-bench's -n: k3's first token comes from the prompt pass.
      echo "rep $rep threads $t k3    load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$res/load.txt"
      "$bin/k3-forward" "$model" --trunk "$trunk" --trunk-gb 1000 --cache-gb 1000 \
        --threads "$t" --gen $((gen + 1)) --ignore-eos --ids "$res/prompt.ids" \
        --stats-json "$res/k3-t$t.$rep.json" > /dev/null 2> "$res/k3-t$t.$rep.err" ||
        { cat "$res/k3-t$t.$rep.err" >&2; die "k3-forward failed"; }
      echo "rep $rep threads $t llama load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$res/load.txt"
      # prefill: a prompt of N tokens from an empty context; decode: G tokens after
      # N tokens of context (-d), as k3 decodes after its prompt.
      "$llama" -m "$gguf" -t "$t" -p "$prompt" -n 0 -r 1 -o jsonl > "$res/llama-t$t.$rep.jsonl" 2> "$res/llama-t$t.$rep.err" ||
        { cat "$res/llama-t$t.$rep.err" >&2; die "llama-bench failed"; }
      "$llama" -m "$gguf" -t "$t" -p 0 -n "$gen" -d "$prompt" -r 1 -o jsonl >> "$res/llama-t$t.$rep.jsonl" 2>> "$res/llama-t$t.$rep.err" ||
        { cat "$res/llama-t$t.$rep.err" >&2; die "llama-bench failed"; }
    done
  done
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$res/load.txt"
  /usr/bin/python3 "$here/e2e_table.py" "$res"
}

stage_check() {
  [ $# -ge 2 ] || die "check needs MODEL_DIR OUT.gguf (--help)"
  local model=$1 gguf=$2 prompt=16 bin res
  [ "${3:-}" = --prompt ] && prompt=${4:?--prompt needs N}
  bin=$(k3_bin)
  [ -x "$work/build/bin/llama-k3-logits" ] || die "$work/build/bin/llama-k3-logits missing (run: $0 build $work)"
  res=$work/results/check-p$prompt
  # A run's table is its own reps only: an earlier run of the same prompt and
  # length with more reps would otherwise leave its files in the medians.
  rm -rf "$res"
  mkdir -p "$res"
  prompt_ids "$prompt" > "$res/prompt.ids"
  rm -f "$res/k3.safetensors"
  nice -n 19 "$bin/k3-forward" "$model" --quiet --threads 2 --gen 0 --ids "$res/prompt.ids" --logits "$res/k3.safetensors" > /dev/null
  nice -n 19 "$work/build/bin/llama-k3-logits" "$gguf" "$res/prompt.ids" "$res/llama.f32" 2 2> "$res/llama.err" > "$res/llama.top5"
  /usr/bin/python3 - "$res" <<'PY'
import json, struct, sys
import numpy as np
res = sys.argv[1]
with open(f"{res}/k3.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    head = json.loads(f.read(n))
    t = head["logits"]
    f.seek(8 + n + t["data_offsets"][0])
    k3_all = np.frombuffer(f.read(t["data_offsets"][1] - t["data_offsets"][0]), dtype="<f4").reshape(t["shape"])
ll_all = np.fromfile(f"{res}/llama.f32", dtype="<f4").reshape(t["shape"])
# Every position's largest difference: does it depend on the position?
print("max abs diff by position:", " ".join(f"{x:.3f}" for x in np.abs(k3_all.astype(np.float64) - ll_all).max(axis=1)))
k3, ll = k3_all[-1], ll_all[-1]
d = np.abs(k3.astype(np.float64) - ll)
top = lambda x: [int(i) for i in np.argsort(-x, kind="stable")[:5]]
print(f"positions {t['shape'][0]}, vocab {k3.size}")
print(f"k3    top-5 {top(k3)}  max |logit| {np.abs(k3).max():.4f}")
print(f"llama top-5 {top(ll)}  max |logit| {np.abs(ll).max():.4f}")
print(f"max abs diff {d.max():.6f} (at id {int(d.argmax())}), mean abs diff {d.mean():.6f}")
print(f"argmax agrees: {'yes' if top(k3)[0] == top(ll)[0] else 'NO'}; "
      f"top-5 shared: {len(set(top(k3)) & set(top(ll)))}/5; "
      f"correlation {np.corrcoef(k3, ll)[0, 1]:.6f}")
PY
}

case "$stage" in
  fetch) stage_fetch ;;
  build) stage_build ;;
  convert) stage_convert "$@" ;;
  bench) stage_bench "$@" ;;
  check) stage_check "$@" ;;
  *) die "unknown stage '$stage' (fetch, build, convert, bench, check; --help)" ;;
esac
