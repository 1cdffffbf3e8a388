#!/usr/bin/env bash
# K3 at true scale on one machine: the real geometry (93 layers, 896 experts,
# 497,057 tensors in 96 shards, 1,560,936,091,448 bytes) as a sparse
# checkpoint, packed, then run with --preset laptop inside a memory cgroup
# limited to 8 GiB.
#
# The large matrices are holes, so the disk holds ~3.6 GB; norms, routers,
# their biases, A_log and the embedding are real so hidden states are
# non-zero and routing differs per token. The engine does not know: it reads,
# decodes and multiplies every byte as it would for real weights (the
# bytes-read counters show it). Holes cost no disk time, so s/token here is
# CPU-bound (the kernel zero-fills reads of holes at memory speed).
#
# Usage: bench/true_scale.sh [WORK_DIR]      (default: ./k3-true-scale)
#   WORK_DIR/model  the sparse checkpoint (generated when absent, reused otherwise)
#   WORK_DIR/trunk  its packed trunk (packed when absent)
# Environment: K3_BIN_DIR (default ./build/bin), LIMIT_GIB (default 8),
#   GEN (tokens generated, default 3), THREADS (default 0 = all cores),
#   BUDGET (default "--preset laptop"; e.g. "--trunk-gb 0 --cache-gb 1").
# Needs a writable memory cgroup (v2 memory.max or v1 memory.limit_in_bytes)
# for the run; refuses, saying why, where there is none.
set -euo pipefail

BIN=${K3_BIN_DIR:-$PWD/build/bin}
WORK=${1:-$PWD/k3-true-scale}
LIMIT_GIB=${LIMIT_GIB:-8}
GEN=${GEN:-3}
THREADS=${THREADS:-0}
BUDGET=${BUDGET:---preset laptop}
MODEL=$WORK/model
TRUNK=$WORK/trunk
mkdir -p "$WORK"
for t in k3-synth k3-pack k3-forward k3-bench-index; do
  [[ -x $BIN/$t ]] || { echo "true_scale: $BIN/$t not found (build it, or set K3_BIN_DIR)" >&2; exit 2; }
done

say() { printf '\n== %s\n' "$*"; }
sizes() { printf '%s: data on disk %s, apparent size %s\n' "$1" "$(du -sh "$1" | cut -f1)" \
  "$(du -sh --apparent-size "$1" | cut -f1)"; }
seconds_since() { echo "$(( $(date +%s) - $1 ))"; }

say "checkpoint: K3 geometry, sparse"
if [[ -f $MODEL/model.safetensors.index.json ]]; then
  echo "reusing $MODEL"
else
  t0=$(date +%s)
  "$BIN/k3-synth" "$MODEL" --preset k3 --sparse
  echo "generated in $(seconds_since "$t0") s"
fi
sizes "$MODEL"

say "index load (Checkpoint::open: index + 96 shard headers)"
"$BIN/k3-bench-index" "$MODEL" --repeat 3

say "pack the trunk (all-zero 4096-byte blocks stay holes)"
if [[ -f $TRUNK/trunk.json ]]; then
  echo "reusing $TRUNK"
else
  t0=$(date +%s)
  "$BIN/k3-pack" "$MODEL" "$TRUNK"
  echo "packed in $(seconds_since "$t0") s"
fi
sizes "$TRUNK"

say "presets forecast for this model (k3-forward --list-presets)"
"$BIN/k3-forward" "$MODEL" --trunk "$TRUNK" --list-presets

say "context plans at true scale (refused before anything large is allocated)"
set +e
out=$(echo 1 | "$BIN/k3-forward" "$MODEL" --trunk "$TRUNK" --preset laptop --ctx 10000000 --gen 0 2>&1 >/dev/null)
rc=$?
set -e
echo "$out" | tail -3
echo "--ctx 10000000: exit $rc (6 = refused)"
# 100,000 positions: 24 MLA layers x 100,000 x (512 + 64) x 4 bytes = 5.5 GB of
# latent cache. Accepted where memory allows: show the plan only (the run is
# stopped once the plan has been accepted and loading has begun).
set +e
out=$(echo 1 | timeout 20 "$BIN/k3-forward" "$MODEL" --trunk "$TRUNK" --preset laptop --ctx 100000 --gen 0 2>&1 >/dev/null)
rc=$?
set -e
echo "$out" | grep -E "MLA latent cache|forecast peak RSS|refus" || true
echo "--ctx 100000: exit $rc (124 = accepted and running when stopped; 6 = refused on this machine)"

say "run: $BUDGET, 5-token prompt, $GEN generated, in a ${LIMIT_GIB} GiB memory cgroup"
limit=$((LIMIT_GIB << 30))
cg="" ; kind=""
v2=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/{print $3}' /proc/self/cgroup)
if [[ -n $v1 && -d /sys/fs/cgroup/memory$v1 ]]; then
  parent=/sys/fs/cgroup/memory${v1%/}
  kind=v1
elif [[ -n $v2 && -f /sys/fs/cgroup${v2%/}/cgroup.controllers ]]; then
  parent=/sys/fs/cgroup${v2%/}
  kind=v2
else
  echo "true_scale: no memory cgroup found (neither v1 memory controller nor v2 with memory) in /proc/self/cgroup; refusing to run unconfined" >&2
  exit 6
fi
cg=$parent/k3-true-scale-$$
if ! mkdir "$cg" 2>/dev/null; then
  echo "true_scale: cannot create a child cgroup in $parent (not writable: run as root or with a delegated cgroup); refusing to run unconfined" >&2
  exit 6
fi
cleanup() { [[ -n $cg && -d $cg ]] && rmdir "$cg" 2>/dev/null || true; }
trap cleanup EXIT
if [[ $kind == v1 ]]; then
  echo "$limit" > "$cg/memory.limit_in_bytes" || { echo "true_scale: cannot write $cg/memory.limit_in_bytes" >&2; exit 6; }
  [[ -f $cg/memory.memsw.limit_in_bytes ]] && echo "$limit" > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
else
  grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null || echo +memory > "$parent/cgroup.subtree_control" 2>/dev/null || true
  echo "$limit" > "$cg/memory.max" || { echo "true_scale: cannot write $cg/memory.max (memory controller not delegated)" >&2; exit 6; }
  echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
fi
echo "cgroup $kind $cg, limit $limit bytes"

stats=$WORK/stats.json
t0=$(date +%s)
set +e
printf '%s\n' 1000 20000 3000 40000 5000 | bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
  "$BIN/k3-forward" "$MODEL" --trunk "$TRUNK" $BUDGET --gen "$GEN" --ignore-eos --threads "$THREADS" \
  --stats-json "$stats" > "$WORK/ids.txt" 2> "$WORK/forward.log"
rc=$?
set -e
wall=$(seconds_since "$t0")
cat "$WORK/forward.log"
echo "exit $rc after $wall s; generated ids: $(tr '\n' ' ' < "$WORK/ids.txt")"
if [[ $kind == v1 ]]; then
  echo "cgroup peak (memory.max_usage_in_bytes): $(cat "$cg/memory.max_usage_in_bytes") bytes; failcnt $(cat "$cg/memory.failcnt")"
  grep -E "oom_kill|under_oom" "$cg/memory.oom_control" 2>/dev/null || true
else
  echo "cgroup peak (memory.peak): $(cat "$cg/memory.peak" 2>/dev/null || echo n/a) bytes"
  grep -E "oom" "$cg/memory.events" 2>/dev/null || true
fi
[[ $rc -eq 0 ]] || { echo "true_scale: k3-forward failed (exit $rc)" >&2; exit "$rc"; }

say "figures"
python3 - "$stats" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
g = 1e9
d, p = s["decode"], s["prefill"]
print(f"peak RSS {s['peak_rss_bytes']/g:.2f} GB (forecast {s['forecast_peak_rss_bytes']/g:.2f} GB)")
print(f"prefill of {s['prompt_tokens']} tokens: {p['seconds']:.1f} s, trunk {p['trunk_bytes']/g:.1f} GB, "
      f"experts {p['expert_bytes']/g:.1f} GB read")
print(f"decode: {d['s_per_token']:.1f} s/token, per token: trunk {d['trunk_bytes_per_token']/g:.1f} GB, "
      f"experts {d['expert_bytes_per_token']/g:.1f} GB read, resident-expert hit rate {d['expert_hit_rate']:.3f}")
print(f"decode time: compute {d['compute_seconds']:.1f} s, waiting for I/O {d['io_wait_seconds']:.1f} s, "
      f"{d['achieved_gbps']:.2f} GB/s achieved")
print("CPU-bound here: reads of holes cost no disk time (the kernel zero-fills them), so s/token is the")
print("decode/multiply time of every byte, not NVMe bandwidth.")
EOF
