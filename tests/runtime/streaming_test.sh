#!/usr/bin/env bash
# k3-pack and k3-forward in memory budgets, driven through the real tools:
# ids and logits are byte-identical at every budget, preset and thread count
# (on the bundled fixture and on a generated checkpoint), and each fault
# (trunk of another model, truncated trunk, shard deleted or truncated after
# packing, a file that shrinks mid-run, an impossible budget) is one clear
# line and its exit code.
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
W=$(mktemp -d "${TMPDIR:-/tmp}/k3-stream-test.XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect CODE PATTERN -- command...: exit code and a stderr line matching PATTERN.
expect() {
  local code=$1 pat=$2; shift 3
  "$@" >"$W/out" 2>"$W/err" </dev/null
  local rc=$?
  [ "$rc" -eq "$code" ] || { cat "$W/err" >&2; fail "expected exit $code, got $rc: $*"; }
  grep -qE -- "$pat" "$W/err" || { cat "$W/err" >&2; fail "stderr lacks /$pat/: $*"; }
}

# --- k3-pack on the fixture ---------------------------------------------------
"$B/k3-pack" "$TINY" "$W/trunk" 2>"$W/err" || { cat "$W/err"; fail "k3-pack"; }
[ -s "$W/trunk/trunk.bin" ] && [ -s "$W/trunk/trunk.json" ] || fail "k3-pack wrote no trunk"
"$B/k3-pack" --check "$W/trunk" "$TINY" 2>"$W/err" || { cat "$W/err"; fail "k3-pack --check on a fresh trunk"; }
expect 2 "k3-pack: " -- "$B/k3-pack" "$TINY"
expect 2 "k3-pack: " -- "$B/k3-pack" --bogus "$TINY" "$W/x"
"$B/k3-pack" --help | grep -q "Exit codes" || fail "k3-pack --help lacks exit codes"

# --- bit identity on the fixture ---------------------------------------------
echo "1 2 3 4 5 6 7 8 9 10 11 12" >"$W/ids"
run() {  # run NAME flags...: ids to $W/NAME.ids, logits to $W/NAME.st
  local name=$1; shift
  "$B/k3-forward" "$TINY" --ids "$W/ids" --gen 10 --ignore-eos --logits "$W/$name.st" "$@" >"$W/$name.ids" 2>"$W/$name.err" \
    || { cat "$W/$name.err" >&2; fail "k3-forward $name: $*"; }
}
run resident
run stream0 --trunk "$W/trunk" --trunk-gb 0 --cache-gb 0 --threads 1
run stream0t2 --trunk "$W/trunk" --trunk-gb 0 --cache-gb 0 --threads 2
run half --trunk "$W/trunk" --trunk-gb 0.0015 --cache-gb 0.00005 --io-threads 3
run laptop --trunk "$W/trunk" --preset laptop
run notrunk --cache-gb 0.0001
for r in stream0 stream0t2 half laptop notrunk; do
  cmp -s "$W/resident.st" "$W/$r.st" || fail "logits differ: resident vs $r"
  cmp -s "$W/resident.ids" "$W/$r.ids" || fail "ids differ: resident vs $r"
done
[ "$(wc -l <"$W/resident.ids")" -eq 10 ] || fail "expected 10 generated ids"
# Every position's logits (teacher forcing) through a head streamed in row blocks.
"$B/k3-forward" "$TINY" --ids "$W/ids" --teacher-forcing --logits "$W/tf_res.st" >"$W/tf_res.ids" 2>/dev/null || fail "tf resident"
"$B/k3-forward" "$TINY" --ids "$W/ids" --teacher-forcing --logits "$W/tf_str.st" --trunk "$W/trunk" --trunk-gb 0 \
  --cache-gb 0 >"$W/tf_str.ids" 2>"$W/tf_str.err" || { cat "$W/tf_str.err"; fail "tf streaming"; }
cmp -s "$W/tf_res.st" "$W/tf_str.st" || fail "teacher-forcing logits differ: resident vs streamed head blocks"
grep -qE "head +lm_head in [0-9]+ blocks of [0-9]+ rows" "$W/tf_str.err" || fail "the plan does not show the head blocks"
grep -q "memory plan" "$W/stream0.err" || fail "no memory plan printed"
grep -q "forecast peak RSS" "$W/stream0.err" || fail "no forecast in the plan"
grep -q "pinned trunk      0 of 13 layers" "$W/stream0.err" || fail "trunk-gb 0 should pin nothing"
grep -q "pinned trunk      13 of 13 layers + head + embedding" "$W/laptop.err" || fail "laptop should pin the tiny trunk"
grep -q "no --trunk: the whole trunk" "$W/notrunk.err" || fail "no --trunk message"
grep -qE "decode: 9 steps.*hit rate" "$W/stream0.err" || fail "no decode counters"
# One speed convention (docs/terminal.md): the decode line and the summary
# give the same s/token, the decode seconds over the 10 tokens generated.
dec_rate=$(sed -nE 's/.*: decode: [0-9]+ steps, ([0-9.]+ s\/token),.*/\1/p' "$W/stream0.err")
done_rate=$(sed -nE 's/.*generated in ([0-9.]+) s \(([0-9.]+ s\/token)\);.*/\2/p' "$W/stream0.err")
[ -n "$dec_rate" ] && [ "$dec_rate" = "$done_rate" ] || fail "decode line says [$dec_rate], summary says [$done_rate]"
"$B/k3-forward" "$TINY" --ids "$W/ids" --gen 3 --trunk "$W/trunk" --preset laptop --stats-json "$W/s.json" >/dev/null 2>&1 \
  || fail "--stats-json run"
python3 - "$W/s.json" <<'PY' || fail "stats json"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["decode_steps"] == 2, s
assert s["decode"]["expert_bytes_per_token"] >= 0 and 0 <= s["decode"]["expert_hit_rate"] <= 1, s
assert s["decode"]["trunk_bytes_per_token"] == 0, s  # the tiny trunk and its embedding fit laptop's budget: all pinned
assert s["peak_rss_bytes"] > 0 and s["forecast_peak_rss_bytes"] > 0, s
PY

# --- presets -------------------------------------------------------------------
"$B/k3-forward" "$TINY" --list-presets >"$W/presets" 2>"$W/err" </dev/null || { cat "$W/err"; fail "--list-presets"; }
for p in laptop desktop workstation server max; do grep -q "^$p " "$W/presets" || fail "--list-presets lacks $p"; done

# --- a generated checkpoint at three budgets ---------------------------------------
G="$W/gen"
"$B/k3-synth" "$G" --seed 5 --vocab 2048 --hidden 256 --intermediate 512 --layers 8 --kda-heads 4 --kda-head-dim 64 \
  --mla-heads 4 --q-lora 64 --kv-lora 32 --experts 64 --top-k 4 --moe-inter 128 --latent 128 --shards 3 2>"$W/err" \
  || { cat "$W/err"; fail "k3-synth"; }
"$B/k3-pack" "$G" "$W/gtrunk" 2>"$W/err" || { cat "$W/err"; fail "k3-pack generated"; }
echo "5 17 300 42 1999 7 7 7 100 1000" >"$W/gids"
grun() {
  local name=$1; shift
  "$B/k3-forward" "$G" --ids "$W/gids" --gen 12 --ignore-eos --logits "$W/$name.st" "$@" >"$W/$name.ids" 2>"$W/$name.err" \
    || { cat "$W/$name.err" >&2; fail "k3-forward generated $name: $*"; }
}
grun gresident
grun gstream --trunk "$W/gtrunk" --trunk-gb 0 --cache-gb 0 --threads 1 --stats-json "$W/gstream.json"
grun gpart --trunk "$W/gtrunk" --trunk-gb 0.004 --cache-gb 0.003 --threads 2
grun gall --trunk "$W/gtrunk" --trunk-gb 1 --cache-gb 1 --stats-json "$W/gall.json"
for r in gstream gpart gall; do
  cmp -s "$W/gresident.st" "$W/$r.st" || fail "generated: logits differ: resident vs $r"
  cmp -s "$W/gresident.ids" "$W/$r.ids" || fail "generated: ids differ: resident vs $r"
done
[ "$(sort -u "$W/gresident.ids" | wc -l)" -gt 1 ] || fail "generated model emits a single id: activations collapsed"
grep -qE "pinned trunk +[1-7] of 8 layers" "$W/gpart.err" || fail "the partial budget should pin some layers"
# More cache: more experts already resident, fewer bytes read per token; nothing read from trunk.bin when
# the budget pins it all, embedding included. A budget that pins every layer and the head but not the
# embedding reads its rows (each first with its one or two 256 KiB trunk blocks, to check them).
grun gnoemb --trunk "$W/gtrunk" --trunk-gb "$(python3 -c "
import json; t = json.load(open('$W/gtrunk/trunk.json'))
print(repr((sum(s['length'] for s in t['sections'] if s['name'] != 'embedding') + 512) / 1e9))")" --cache-gb 1 --stats-json "$W/gnoemb.json"
cmp -s "$W/gresident.st" "$W/gnoemb.st" || fail "generated: logits differ: resident vs embedding rows read"
grep -q "pinned trunk      8 of 8 layers + head  " "$W/gnoemb.err" || fail "a budget of layers + head pins them, not the embedding"
grep -q "pinned trunk      8 of 8 layers + head + embedding" "$W/gall.err" || fail "a budget of it all pins the embedding"
python3 - "$W/gstream.json" "$W/gall.json" "$W/gnoemb.json" <<'PY' || fail "counters do not follow the budget"
import json, sys
a, b, e = (json.load(open(f))["decode"] for f in sys.argv[1:])
assert b["expert_hit_rate"] > a["expert_hit_rate"], (a, b)
assert b["expert_bytes_per_token"] < a["expert_bytes_per_token"], (a, b)
assert b["trunk_bytes_per_token"] == 0 and a["trunk_bytes_per_token"] > 0, (a, b)
assert 0 < e["trunk_bytes_per_token"] <= 2 * 262144 + 4096, e
PY

# --- faults ----------------------------------------------------------------------
expect 3 "does not belong to the model" -- "$B/k3-forward" "$G" --ids "$W/gids" --trunk "$W/trunk"
cp -r "$W/trunk" "$W/trunc"
truncate -s -4096 "$W/trunc/trunk.bin"
expect 3 "truncated" -- "$B/k3-forward" "$TINY" --ids "$W/ids" --trunk "$W/trunc"
expect 8 "trunk.bin" -- "$B/k3-pack" --check "$W/trunc" "$TINY"
cp -r "$TINY" "$W/model"
chmod -R u+w "$W/model"
"$B/k3-pack" "$W/model" "$W/mtrunk" 2>/dev/null || fail "pack copy"
mv "$W/model/model-00003-of-00005.safetensors" "$W/shard3"
expect 3 "model-00003-of-00005.safetensors" -- "$B/k3-forward" "$W/model" --ids "$W/ids" --trunk "$W/mtrunk"
cp "$W/shard3" "$W/model/model-00003-of-00005.safetensors"
truncate -s -100000 "$W/model/model-00003-of-00005.safetensors"
expect 3 "model-00003-of-00005.safetensors" -- "$B/k3-forward" "$W/model" --ids "$W/ids" --trunk "$W/mtrunk"
mv "$W/shard3" "$W/model/model-00003-of-00005.safetensors"  # the packed file itself again (inode, time)
# Same size, changed bytes after packing: --check names the layer.
python3 - "$W/mtrunk/trunk.json" "$W/mtrunk/trunk.bin" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
sec = [s for s in t["sections"] if s["name"] == "layer.7"][0]
with open(sys.argv[2], "r+b") as f:
    f.seek(sec["tensors"][2]["offset"] + 5); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0xFF]))
PY
expect 8 "layer.7" -- "$B/k3-pack" --check "$W/mtrunk" "$W/model"
# ... and a run that pins layer 7 refuses the corrupted section.
expect 3 "layer.7 block [0-9]+ .*does not match its hash" -- "$B/k3-forward" "$W/model" --ids "$W/ids" --trunk "$W/mtrunk" --preset laptop

# A file that shrinks while k3-forward runs: the streamed trunk is re-read every token.
"$B/k3-pack" "$G" "$W/strunk" 2>/dev/null || fail "pack for shrink"
( "$B/k3-forward" "$G" --ids "$W/gids" --gen 100000 --ignore-eos --trunk "$W/strunk" --trunk-gb 0 --cache-gb 0 \
    --logits "$W/shrink.st" >"$W/shrink.ids" 2>"$W/shrink.err"; echo $? >"$W/shrink.rc" ) &
for _ in $(seq 100); do [ -s "$W/shrink.ids" ] && break; sleep 0.1; done
[ -s "$W/shrink.ids" ] || { cat "$W/shrink.err"; fail "streaming run produced nothing"; }
truncate -s 1000000 "$W/strunk/trunk.bin"
wait
[ "$(cat "$W/shrink.rc")" -eq 5 ] || { cat "$W/shrink.err"; fail "shrinking trunk.bin: expected exit 5, got $(cat "$W/shrink.rc")"; }
grep -qE "trunk.bin: file ends at|trunk.bin: read of" "$W/shrink.err" || { cat "$W/shrink.err"; fail "shrink error does not name trunk.bin"; }
[ ! -e "$W/shrink.st" ] || fail "a failed run left a logits file"

# Impossible budgets and contexts: refused before allocating.
expect 6 "memory plan needs .*, over the .* limit \\(90% of .* available: K3_AVAILABLE_MEMORY\\)" -- env K3_AVAILABLE_MEMORY=40000000 "$B/k3-forward" "$TINY" --ids "$W/ids" --trunk "$W/trunk" --preset laptop
[ "$(wc -l <"$W/err")" -le 14 ] || fail "the refusal should be the plan and one line"
expect 6 "memory plan needs" -- "$B/k3-forward" "$TINY" --ids "$W/ids" --trunk "$W/trunk" --ctx 100000000000
expect 2 "unknown --preset" -- "$B/k3-forward" "$TINY" --ids "$W/ids" --preset huge
expect 2 "needs --trunk" -- "$B/k3-forward" "$TINY" --ids "$W/ids" --trunk-gb 1
echo "streaming_test: all passed"
