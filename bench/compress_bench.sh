#!/usr/bin/env bash
# Compressed-trunk benchmark (k3-pack --compress):
#  1. codec ratio per tensor kind and overall, and decode GB/s per core at 1
#     and 2 threads (k3-bench-compress), on the bundled tiny fixture and on
#     the bench geometry generated with uniform and with normal weights;
#  2. k3-forward all-streaming (--trunk-gb 0 --cache-gb 0) on the normal bench
#     checkpoint, uncompressed vs compressed trunk, interleaved pairs: s/token,
#     trunk and expert bytes read per token, disk busy share, compute vs I/O
#     wait, decode CPU s/token (medians);
#  3. k3-doctor's forecast for the real K3 at the laptop preset with this
#     machine's measured disk and decode speed.
#
# Usage: bench/compress_bench.sh [BUILD_DIR]     (default: build)
# Env:   K3_BENCH_DIR  where checkpoints and trunks are cached (default /var/tmp/k3-compress-bench)
#        K3_BENCH_GEN  tokens generated per run (default 4); K3_BENCH_REPEAT  pairs (default 3)
#        K3_BENCH_READ_MBPS  throttle k3-forward's reads to this many MB/s (a
#          cgroup v1 blkio or v2 io.max limit on the trunk's disk; needs root):
#          the disk-bound regime of a laptop, whose cores decode faster than
#          its NVMe delivers, on a machine whose two cores are busy computing
# The bench geometry is K3's graph at hidden 1536, 36 layers (1.66 GB of
# trunk) with 64 experts instead of 256 so the checkpoints stay small.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bin
DIR=${K3_BENCH_DIR:-/var/tmp/k3-compress-bench}
GEN=${K3_BENCH_GEN:-4}
REPEAT=${K3_BENCH_REPEAT:-3}
for t in k3-synth k3-pack k3-forward k3-doctor k3-bench-compress; do
  [ -x "$BIN/$t" ] || { echo "compress_bench: $BIN/$t missing; build it first" >&2; exit 2; }
done
mkdir -p "$DIR"

echo "== codec on the tiny fixture (weights from the published initialisation)"
"$BIN/k3-bench-compress" tests/data/k3-tiny
for w in uniform normal; do
  if [ ! -f "$DIR/$w/model.safetensors.index.json" ]; then
    "$BIN/k3-synth" "$DIR/$w" --preset bench --experts 64 --weights "$w" --seed 1 2>/dev/null
  fi
  echo "== codec on the bench geometry, $w weights"
  "$BIN/k3-bench-compress" "$DIR/$w"
done

M=$DIR/normal
[ -f "$DIR/raw/trunk.json" ] || "$BIN/k3-pack" "$M" "$DIR/raw" 2>/dev/null
[ -f "$DIR/z/trunk.json" ] || "$BIN/k3-pack" --compress "$M" "$DIR/z" 2>/dev/null
echo "== trunk.bin: uncompressed $(stat -c %s "$DIR/raw/trunk.bin") bytes, compressed $(stat -c %s "$DIR/z/trunk.bin") bytes"
echo "1 2 3 4 5 6 7 8" >"$DIR/ids"
# Optional read throttle: k3-forward runs in a cgroup limited to
# K3_BENCH_READ_MBPS on the block device holding the trunks.
CG=
if [ -n "${K3_BENCH_READ_MBPS:-}" ]; then
  src=$(df --output=source "$DIR" | tail -1)
  parent=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
  [ -n "$parent" ] && src=/dev/$parent  # limits apply to the whole disk
  dev=$(lsblk -dno MAJ:MIN "$src" | tr -d ' ')
  bps=$((K3_BENCH_READ_MBPS * 1000000))
  if [ -d /sys/fs/cgroup/blkio ]; then
    CG=/sys/fs/cgroup/blkio/k3-compress-bench
    mkdir -p "$CG" && echo "$dev $bps" >"$CG/blkio.throttle.read_bps_device"
  else
    CG=/sys/fs/cgroup/k3-compress-bench
    mkdir -p "$CG" && echo "$dev rbps=$bps" >"$CG/io.max"
  fi
  trap 'rmdir "$CG" 2>/dev/null || true' EXIT
  echo "== reads throttled to $K3_BENCH_READ_MBPS MB/s on device $dev"
fi
forward() {
  if [ -n "$CG" ]; then
    (echo "$BASHPID" >"$CG/cgroup.procs" && exec "$BIN/k3-forward" "$@")
  else
    "$BIN/k3-forward" "$@"
  fi
}
for i in $(seq "$REPEAT"); do
  for t in raw z; do
    sync; [ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches || true
    forward "$M" --ids "$DIR/ids" --gen "$GEN" --ignore-eos --trunk "$DIR/$t" --trunk-gb 0 --cache-gb 0 \
      --logits "$DIR/$t.st" --stats-json "$DIR/$t.$i.json" >/dev/null 2>"$DIR/$t.err"
  done
  cmp -s "$DIR/raw.st" "$DIR/z.st" || { echo "compress_bench: logits differ" >&2; exit 1; }
done
python3 - "$DIR" "$REPEAT" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
print("== all-streaming k3-forward, normal bench checkpoint (medians of %d interleaved pairs; logits identical)" % n)
print("%-13s %9s %12s %12s %9s %10s %10s %12s" % ("trunk", "s/token", "trunk B/tok", "expert B/tok", "disk busy",
      "compute s", "I/O wait s", "decode CPU s"))
for t, label in (("raw", "uncompressed"), ("z", "compressed")):
    runs = [json.load(open("%s/%s.%d.json" % (d, t, i + 1)))["decode"] for i in range(n)]
    m = lambda k: statistics.median(r.get(k, 0) for r in runs)
    print("%-13s %9.3f %12.0f %12.0f %8.0f%% %10.3f %10.3f %12.4f" % (label, m("s_per_token"), m("trunk_bytes_per_token"),
          m("expert_bytes_per_token"), 100 * m("io_busy_share"), m("compute_seconds"), m("io_wait_seconds"),
          m("decode_cpu_seconds_per_token")))
PY
echo "== k3-doctor forecast for the real K3 (this machine's disk measured on a shard, decode measured by the probe)"
"$BIN/k3-doctor" --probe-file "$(ls -S "$M"/*.safetensors | head -1)" 2>&1 | grep -E "compress|decode  |stored|uncompressed  |compressed  |preset laptop" || true
