#!/usr/bin/env bash
# Streaming benchmark: k3-forward on the synthetic "bench" checkpoint (K3's
# graph scaled down: ~1.7 GB trunk, ~7 GB routed experts) at three budgets:
# everything streaming, trunk pinned (experts streaming), everything
# resident. Prints s/token, bytes read per token, achieved read GB/s, and the
# ratio to the device's own O_DIRECT bandwidth measured with fio at the same
# request sizes; per row, where the disk idled (seconds per token of the MoE
# layers' expert phases, the gaps between MoE layers and the token boundary,
# each with its busy share: --stats-json's io_busy_by_phase); for the resident case, the ratio to the memory-bandwidth
# bound (weight bytes touched per token / measured memory read bandwidth).
#
# Usage: bench/stream_bench.sh [BUILD_DIR]     (default: build)
# Env:   K3_BENCH_DIR  where the checkpoint and trunk are cached (default /var/tmp/k3-bench; outside the repo)
#        K3_BENCH_GEN  tokens generated per run (default 6); K3_BENCH_THREADS (default: all cores)
#        K3_BENCH_REPEAT  runs per budget (default 1); the table shows medians
#        K3_BENCH_BASELINE  another k3-forward to compare with: the binary itself, its bin directory or its
#                           build directory. At each budget both run back to back (ours first in odd
#                           repetitions, the baseline first in even ones, so drift of the shared device
#                           evens out); each gets its own rows, side by side, and a line per budget gives
#                           after/before of the medians (s/token, bytes read per token)
#        K3_BENCH_FLAGS  more k3-forward flags for this build's runs only (e.g. --expert-lookahead, which a
#                        baseline may not know); the baseline runs without them
#        K3_BENCH_CACHE_GB  expert cache of the "pinned" row (default 0: one layer's top-k, the floor)
#        K3_BENCH_SYNTH  k3-synth geometry flags of the checkpoint (default "--preset bench"); e.g.
#                        "--preset bench --layers 8 --experts 64" (~1 GB) for a quick run. Use one
#                        K3_BENCH_DIR per geometry: a cached checkpoint of other flags is refused
#        K3_BENCH_ORACLE  1: also row "pinned-oracle", the pinned budget with every lookahead guess right
#                         (--expert-lookahead-from a trace the first pinned run records): the most
#                         --expert-lookahead can give on this disk
#        K3_BENCH_BLOCKS  row-block sizes in MB (e.g. "32 4 0.5 0.07"): everything streaming at each block
#                         size (rows blocks-X), beside --preset min (row "min") and whole layers ("streaming")
# The page cache is dropped before each run (needs root) and all streaming
# reads use O_DIRECT, so the page cache cannot fake the streaming figures.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bin
DIR=${K3_BENCH_DIR:-/var/tmp/k3-bench}
GEN=${K3_BENCH_GEN:-6}
REPEAT=${K3_BENCH_REPEAT:-1}
THREADS=${K3_BENCH_THREADS:-0}
MODEL=$DIR/model
TRUNK=$DIR/trunk
mkdir -p "$DIR"
for t in k3-synth k3-pack k3-forward k3-bench-kernels; do
  [ -x "$BIN/$t" ] || { echo "stream_bench: $BIN/$t missing; build it first (cmake --build $BUILD)" >&2; exit 2; }
done

SYNTH=${K3_BENCH_SYNTH:---preset bench}
if [ ! -f "$MODEL/model.safetensors.index.json" ]; then
  echo "== generating the bench checkpoint in $MODEL (once; cached): k3-synth $SYNTH"
  # shellcheck disable=SC2086  # the flags are words
  "$BIN/k3-synth" "$MODEL" $SYNTH --seed 1
  echo "$SYNTH" >"$DIR/synth-flags"
fi
cached=$(cat "$DIR/synth-flags" 2>/dev/null || echo "--preset bench")
if [ "$cached" != "$SYNTH" ]; then
  echo "stream_bench: $MODEL was generated with k3-synth $cached, not $SYNTH: set K3_BENCH_DIR to another directory" >&2
  exit 2
fi
if [ ! -f "$TRUNK/trunk.json" ]; then
  echo "== packing the trunk into $TRUNK (once; cached)"
  "$BIN/k3-pack" "$MODEL" "$TRUNK"
fi

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "  (cannot drop caches: not root; O_DIRECT still bypasses them)"; }

# Request sizes the engine issues: trunk sections are read in 4 MB pieces by
# 8 I/O threads; an expert is one read of about its size.
expert_kb=$(python3 -c "
import json; t=json.load(open('$MODEL/config.json'))['text_config']
L=t['routed_expert_hidden_size']; M=t['moe_intermediate_size']
print(int((3*L*M*17/32 + 4095)//4096*4))")
# The largest shard (fio's 8 jobs start 10% apart, so a small one has no room).
shard=$(ls -S "$MODEL"/model-*-of-*.safetensors | head -1)
fio_bw() {  # fio_bw BS_KB JOBS [FILE RW] -> MB/s of O_DIRECT reads (default: random reads of a shard)
  fio --name=k3 --filename="${3:-$shard}" --readonly --direct=1 --ioengine=psync --rw="${4:-randread}" --bs="$1"k \
      --numjobs="$2" --offset_increment=10% --group_reporting --time_based --runtime=8 --output-format=json 2>/dev/null |
    python3 -c "import json,sys; t=sys.stdin.read(); j=json.loads(t[t.find('{'):]); print('%.0f' % (j['jobs'][0]['read']['bw_bytes']/1e6))"
}
# On a shared machine the device's rate drifts: it is measured before and
# after the runs and the better figure of each is the one compared against.
dev_trunk=0; dev_expert=0
measure_device() {
  echo "== device O_DIRECT read bandwidth (fio, $shard) $1"
  if command -v fio >/dev/null; then
    drop_caches
    local a b c
    a=$(fio_bw 4096 8); b=$(fio_bw "$expert_kb" 8); c=$(fio_bw 4096 8 "$TRUNK/trunk.bin" read)
    echo "  4 MB requests x 8 in flight:      $a MB/s"
    echo "  ${expert_kb} kB requests x 8 in flight:  $b MB/s"
    echo "  trunk.bin in order, 4 MB x 8:     $c MB/s (the streamed trunk's pattern)"
    [ "$c" -gt "$a" ] && a=$c
    [ "$a" -gt "$dev_trunk" ] && dev_trunk=$a
    [ "$b" -gt "$dev_expert" ] && dev_expert=$b
  else
    echo "  fio not installed (apt-get install fio)"
  fi
  return 0
}
measure_device "before the runs"
mem_gbps=$("$BIN/k3-bench-kernels" --quick --only none 2>/dev/null | sed -n 's/.*single-core memory read[^:]*: \([0-9.]*\) GB\/s.*/\1/p')
echo "== memory read bandwidth (k3-bench-kernels, single core): ${mem_gbps:-?} GB/s"

ids="1000 2000 3000 4000 5000 6000 7000 8000"
BASE=${K3_BENCH_BASELINE:-}
BASE_EXE=""
if [ -n "$BASE" ]; then
  for c in "$BASE" "$BASE/k3-forward" "$BASE/bin/k3-forward"; do
    if [ -f "$c" ] && [ -x "$c" ]; then BASE_EXE=$c; break; fi
  done
  [ -n "$BASE_EXE" ] || { echo "stream_bench: K3_BENCH_BASELINE=$BASE: no k3-forward there (give the binary, its bin directory or its build directory)" >&2; exit 2; }
  BASE=$BASE_EXE
fi
OURS_FLAGS=${K3_BENCH_FLAGS:-}
PINNED_CACHE=${K3_BENCH_CACHE_GB:-0}
run1() {  # run1 ours|base NAME flags...: K3_BENCH_FLAGS go to our side's runs only, whatever the baseline's path
  local side=$1 name=$2 exe=$BIN/k3-forward; shift 2
  [ "$side" = base ] && exe=$BASE_EXE
  # shellcheck disable=SC2086  # the flags are words
  [ "$side" = ours ] && set -- "$@" $OURS_FLAGS
  drop_caches
  echo "$ids" | "$exe" "$MODEL" --gen "$GEN" --ignore-eos --threads "$THREADS" \
      --stats-json "$DIR/$name.json" "$@" >"$DIR/$name.ids" 2>"$DIR/$name.err" || { cat "$DIR/$name.err"; exit 1; }
}
run() {  # run NAME flags...: ours and the baseline's (as base-NAME) back to back, in turns (run $rep)
  local name=$1; shift
  if [ -n "$BASE" ] && [ $((rep % 2)) -eq 0 ]; then run1 base "base-$name.$rep" "$@"; fi
  run1 ours "$name.$rep" "$@"
  if [ -n "$BASE" ] && [ $((rep % 2)) -eq 1 ]; then run1 base "base-$name.$rep" "$@"; fi
}
echo "== k3-forward: prompt of 8 ids, $GEN generated, threads=${THREADS} (0 = all), $REPEAT run(s) per budget${BASE:+; baseline $BASE}${OURS_FLAGS:+; this build with $OURS_FLAGS}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
ORACLE_TRACE=$DIR/pinned.trace
if [ -n "${K3_BENCH_ORACLE:-}" ]; then  # the pinned run's requests, for its perfect guesses
  rm -f "$ORACLE_TRACE"
  run1 ours pinned-trace --trunk "$TRUNK" --trunk-gb 3 --cache-gb "$PINNED_CACHE" --expert-trace "$ORACLE_TRACE"
fi
for rep in $(seq "$REPEAT"); do
  run streaming --trunk "$TRUNK" --trunk-gb 0 --cache-gb 0
  run pinned --trunk "$TRUNK" --trunk-gb 3 --cache-gb "$PINNED_CACHE"
  extra=""
  if [ -n "${K3_BENCH_ORACLE:-}" ]; then
    run1 ours "pinned-oracle.$rep" --trunk "$TRUNK" --trunk-gb 3 --cache-gb "$PINNED_CACHE" \
      --expert-lookahead-from "$ORACLE_TRACE"
    extra="pinned-oracle"
  fi
  run resident --trunk "$TRUNK" --trunk-gb 3 --cache-gb 8
  if [ -n "${K3_BENCH_BLOCKS:-}" ]; then
    run min --trunk "$TRUNK" --preset min
    extra="$extra min"
    for mb in $K3_BENCH_BLOCKS; do
      run "blocks-$mb" --trunk "$TRUNK" --trunk-gb 0 --cache-gb 0 --block-mb "$mb"
      extra="$extra blocks-$mb"
    done
  fi
  for r in streaming pinned resident $extra ${BASE:+base-streaming base-pinned base-resident}; do
    cmp -s "$DIR/streaming.1.ids" "$DIR/$r.$rep.ids" || { echo "stream_bench: ids differ between streaming and $r" >&2; exit 1; }
  done
done
echo "  ids identical at all budgets${BASE:+ and between both builds}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
measure_device "after the runs"

python3 - "$DIR" "$dev_trunk" "$dev_expert" "${mem_gbps:-0}" "$MODEL" "$TRUNK" "${BASE:+1}" "$REPEAT" "${extra:-}" <<'PY'
import json, statistics, sys
d, dev_trunk, dev_expert, mem = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
model, trunk, with_base, repeat = sys.argv[5], sys.argv[6], sys.argv[7] == "1", int(sys.argv[8])
extra = sys.argv[9].split()
def median_run(name):  # the median of every figure over the repeated runs
    runs = [json.load(open(f"{d}/{name}.{r}.json")) for r in range(1, repeat + 1)]
    x = {k: statistics.median(r["decode"][k] for r in runs) for k, v in runs[0]["decode"].items() if not isinstance(v, dict)}
    for k in runs[0]["decode"].get("io_busy_by_phase", {}):  # a baseline may not have them
        x[k] = statistics.median(r["decode"].get("io_busy_by_phase", {}).get(k, 0) for r in runs)
    return x, statistics.median(r["peak_rss_bytes"] for r in runs)
t = json.load(open(f"{trunk}/trunk.json"))
layers = sum(s["length"] for s in t["sections"] if s["layer"] >= 0)
head = sum(s["length"] for s in t["sections"] if s["name"] == "head")
c = json.load(open(f"{model}/config.json"))["text_config"]
L, M, k = c["routed_expert_hidden_size"], c["moe_intermediate_size"], c["num_experts_per_token"]
moe_layers = c["num_hidden_layers"] - c["first_k_dense_replace"]
touched = layers + head + moe_layers * k * 3 * L * M * 17 // 32  # weight bytes a decode step reads
print(f"  weight bytes touched per decoded token: {touched/1e9:.3f} GB (trunk {(layers+head)/1e9:.3f} GB + experts)")
print(f"  device (better of before/after): {dev_trunk:.0f} MB/s at 4 MB, {dev_expert:.0f} MB/s at expert size; medians of {repeat} run(s)")
print(f"  {'budget':<15} {'s/token':>8} {'trunk MB/tok':>13} {'expert MB/tok':>14} {'hit rate':>9} {'I/O wait s':>10} {'compute s':>10} {'GB/s':>6} {'vs device':>9} {'disk busy':>9} {'peak RSS':>9}")
names = [n for b in ["streaming", "pinned", "resident"] for n in ([b, "base-" + b] if with_base else [b])] + extra
for name in names:
    x, rss = median_run(name)
    gbps = x["achieved_gbps"]
    # Streaming reads are mostly trunk pieces of 4 MB; weight the device figure by the byte mix.
    tb, eb = x["trunk_bytes_per_token"], x["expert_bytes_per_token"]
    dev = (tb * dev_trunk + eb * dev_expert) / (tb + eb) / 1e3 if tb + eb > 0 and dev_trunk > 0 else 0
    ratio = f"{gbps/dev:.2f}" if dev > 0 and gbps > 0 else "-"
    busy = f"{100*x['io_busy_share']:.0f}%" if "io_busy_share" in x else "-"
    print(f"  {name:<15} {x['s_per_token']:>8.3f} {tb/1e6:>13.1f} {eb/1e6:>14.1f} {100*x['expert_hit_rate']:>8.1f}% "
          f"{x['io_wait_seconds']:>10.2f} {x['compute_seconds']:>10.2f} {gbps:>6.2f} {ratio:>9} {busy:>9} {rss/1e9:>8.2f}G")
    if name.endswith("resident") and mem > 0 and x["s_per_token"] > 0:
        bound = touched / (mem * 1e9)
        print(f"  {name}: memory-bandwidth bound {bound:.3f} s/token at {mem} GB/s; measured / bound = {x['s_per_token']/bound:.2f}")
for name in names:  # where the disk idled, per decoded token (medians)
    x, _ = median_run(name)
    if "experts_seconds" not in x or x["experts_seconds"] == 0:
        continue
    steps = statistics.median(json.load(open(f"{d}/{name}.{r}.json"))["decode_steps"] for r in range(1, repeat + 1)) or 1
    print(f"  {name}: disk busy by phase, s per token: MoE expert reads {x['experts_seconds']/steps:.3f} s "
          f"({100*x['experts_busy_share']:.0f}% busy), between MoE layers {x['between_layers_seconds']/steps:.3f} s "
          f"({100*x['between_layers_busy_share']:.0f}%), token boundary {x['token_boundary_seconds']/steps:.3f} s "
          f"({100*x['token_boundary_busy_share']:.0f}%)")
for name in names:  # --expert-lookahead's guesses, where there were any (medians)
    runs = [json.load(open(f"{d}/{name}.{r}.json")).get("expert_lookahead") for r in range(1, repeat + 1)]
    if not all(runs) or all(g["guessed_layers"] == 0 for g in runs):
        continue
    med = lambda k: statistics.median(g[k] for g in runs)
    med2 = lambda k: statistics.median(g.get(k, 0) for g in runs)  # a baseline may not count it
    print(f"  {name}: expert lookahead: guess hit rate {100*med('guess_hit_rate'):.1f}% ({med('guessed_used'):.0f} of "
          f"{med('guessed_experts'):.0f} guessed experts used); {med('reads'):.0f} guessed reads, {med('reads_used'):.0f} used, "
          f"{med('wasted_reads'):.0f} evicted unused ({med('wasted_bytes')/1e6:.1f} MB), "
          f"{med2('cancelled_reads'):.0f} cancelled unread ({med2('cancelled_bytes')/1e6:.1f} MB)")
if with_base:
    print(f"  after/before (this build / baseline, medians of {repeat} interleaved run(s) each):")
    for b in ["streaming", "pinned", "resident"]:
        (a, ra), (z, rz) = median_run(b), median_run("base-" + b)
        ratio = lambda key: f"{a[key]/z[key]:.3f}" if z[key] > 0 else ("1.000" if a[key] == 0 else "-")
        bytes_a = a["trunk_bytes_per_token"] + a["expert_bytes_per_token"]
        bytes_z = z["trunk_bytes_per_token"] + z["expert_bytes_per_token"]
        print(f"  {b:<15} s/token {z['s_per_token']:.3f} -> {a['s_per_token']:.3f} (x{ratio('s_per_token')}); "
              f"MB read/token {bytes_z/1e6:.1f} -> {bytes_a/1e6:.1f}; compute s {z['compute_seconds']:.2f} -> "
              f"{a['compute_seconds']:.2f}; peak RSS {rz/1e9:.2f}G -> {ra/1e9:.2f}G")
if "pinned-oracle" in extra:  # every guess right: the lookahead's ceiling on this disk
    o, _ = median_run("pinned-oracle")
    for ref in (["base-pinned"] if with_base else []) + ["pinned"]:
        z, _ = median_run(ref)
        print(f"  pinned-oracle / {ref}: s/token {z['s_per_token']:.3f} -> {o['s_per_token']:.3f} "
              f"(x{o['s_per_token']/z['s_per_token']:.3f})")
PY
