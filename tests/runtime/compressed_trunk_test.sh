#!/usr/bin/env bash
# A compressed trunk (k3-pack --compress) through the real tools: logits and
# ids byte-identical to the resident run and to the uncompressed trunk at
# every budget and thread count, on the bundled fixture and on a generated
# checkpoint with Gaussian weights (whose layers must shrink by more than a
# quarter); the plan shows the compressed bytes read per token; --check
# passes; a damaged block is refused by --check, at load (pinned) and while
# streaming, never decoded into weights.
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
W=$(mktemp -d "${TMPDIR:-/tmp}/k3-compressed-test.XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect CODE PATTERN -- command...
  local code=$1 pat=$2; shift 3
  "$@" >"$W/out" 2>"$W/err" </dev/null
  local rc=$?
  [ "$rc" -eq "$code" ] || { cat "$W/err" >&2; fail "expected exit $code, got $rc: $*"; }
  grep -qE -- "$pat" "$W/err" || { cat "$W/err" >&2; fail "stderr lacks /$pat/: $*"; }
}

# --- fixture -------------------------------------------------------------------
"$B/k3-pack" "$TINY" "$W/raw" 2>/dev/null || fail "k3-pack"
"$B/k3-pack" --compress "$TINY" "$W/z" 2>"$W/err" || { cat "$W/err"; fail "k3-pack --compress"; }
grep -q '"version": 4' "$W/z/trunk.json" || fail "compressed trunk.json is not version 4"
[ "$(stat -c %s "$W/z/trunk.bin")" -lt "$(stat -c %s "$W/raw/trunk.bin")" ] || fail "compressed trunk is not smaller"
"$B/k3-pack" --check "$W/z" "$TINY" 2>"$W/err" || { cat "$W/err"; fail "--check on a compressed trunk"; }
grep -q "compressed from" "$W/err" || fail "--check does not say the trunk is compressed"

echo "1 2 3 4 5 6 7 8 9 10 11 12" >"$W/ids"
run() {  # run MODEL NAME flags...
  local model=$1 name=$2; shift 2
  "$B/k3-forward" "$model" --ids "$W/ids" --gen 8 --ignore-eos --logits "$W/$name.st" "$@" >"$W/$name.ids" 2>"$W/$name.err" \
    || { cat "$W/$name.err" >&2; fail "k3-forward $name: $*"; }
}
run "$TINY" resident
for t in raw z; do
  run "$TINY" "$t.s0t1" --trunk "$W/$t" --trunk-gb 0 --cache-gb 0 --threads 1
  run "$TINY" "$t.s0t2" --trunk "$W/$t" --trunk-gb 0 --cache-gb 0 --threads 2
  run "$TINY" "$t.half" --trunk "$W/$t" --trunk-gb 0.0015 --cache-gb 0.00005 --io-threads 3
  run "$TINY" "$t.laptop" --trunk "$W/$t" --preset laptop --threads 2
done
for r in s0t1 s0t2 half laptop; do
  cmp -s "$W/resident.st" "$W/z.$r.st" || fail "fixture: logits differ: resident vs compressed $r"
  cmp -s "$W/raw.$r.st" "$W/z.$r.st" || fail "fixture: logits differ: uncompressed vs compressed $r"
  cmp -s "$W/resident.ids" "$W/z.$r.ids" || fail "fixture: ids differ: resident vs compressed $r"
done
# Row blocks decoded from codec blocks: from one row of the widest matrix
# (smaller than a codec block) to blocks spanning several codec blocks.
for bm in 0.001 0.004 0.3; do
  run "$TINY" "z.b$bm" --trunk "$W/z" --trunk-gb 0 --cache-gb 0 --block-mb "$bm" --threads 2
  cmp -s "$W/resident.st" "$W/z.b$bm.st" || fail "fixture: logits differ: resident vs compressed row blocks of $bm MB"
  grep -q "row blocks" "$W/z.b$bm.err" || fail "--block-mb $bm did not stream row blocks"
done
run "$TINY" z.min --trunk "$W/z" --preset min
cmp -s "$W/resident.st" "$W/z.min.st" || fail "fixture: logits differ: resident vs compressed at --preset min"
grep -qE "read per token +[0-9.]+ [kM]B compressed" "$W/z.s0t1.err" || fail "the plan does not show compressed bytes"
grep -q "compressed trunk: .* CPU s/token decoding" "$W/z.s0t1.err" || fail "no decode figure"
# Every position's logits through compressed head row blocks.
"$B/k3-forward" "$TINY" --ids "$W/ids" --teacher-forcing --logits "$W/tf1.st" >/dev/null 2>&1 || fail "tf resident"
"$B/k3-forward" "$TINY" --ids "$W/ids" --teacher-forcing --logits "$W/tf2.st" --trunk "$W/z" --trunk-gb 0 --cache-gb 0 \
  >/dev/null 2>"$W/err" || { cat "$W/err"; fail "tf compressed"; }
cmp -s "$W/tf1.st" "$W/tf2.st" || fail "teacher forcing: logits differ with compressed head blocks"

# --- generated checkpoint, Gaussian weights -------------------------------------
G="$W/gen"
"$B/k3-synth" "$G" --weights normal --seed 3 --vocab 2048 --hidden 256 --intermediate 512 --layers 8 --kda-heads 4 \
  --kda-head-dim 64 --mla-heads 4 --q-lora 64 --kv-lora 32 --experts 64 --top-k 4 --moe-inter 128 --latent 128 \
  --shards 3 2>"$W/err" || { cat "$W/err"; fail "k3-synth --weights normal"; }
"$B/k3-pack" "$G" "$W/graw" 2>/dev/null || fail "pack generated"
"$B/k3-pack" --compress "$G" "$W/gz" 2>"$W/err" || { cat "$W/err"; fail "pack --compress generated"; }
python3 - "$W/graw/trunk.json" "$W/gz/trunk.json" <<'PY' || fail "Gaussian layers did not shrink by a quarter"
import json, sys
raw, z = (json.load(open(f)) for f in sys.argv[1:])
dec = sum(s["length"] for s in z["sections"] if s["layer"] >= 0)
sto = sum(s["stored_length"] for s in z["sections"] if s["layer"] >= 0)
assert dec == sum(s["length"] for s in raw["sections"] if s["layer"] >= 0)
assert sto < 0.75 * dec, (sto, dec)
PY
echo "5 17 300 42 1999 7 7 7 100 1000" >"$W/ids"
run "$G" gres
run "$G" gs0 --trunk "$W/gz" --trunk-gb 0 --cache-gb 0 --threads 1
run "$G" gs0t2 --trunk "$W/gz" --trunk-gb 0 --cache-gb 0 --threads 2 --io-threads 2
run "$G" gpart --trunk "$W/gz" --trunk-gb 0.004 --cache-gb 0.003 --threads 2
run "$G" gall --trunk "$W/gz" --trunk-gb 1 --cache-gb 1
run "$G" graws0 --trunk "$W/graw" --trunk-gb 0 --cache-gb 0 --threads 1 --stats-json "$W/graw.json"
run "$G" gzs0 --trunk "$W/gz" --trunk-gb 0 --cache-gb 0 --threads 1 --stats-json "$W/gz.json"
run "$G" gzb1 --trunk "$W/gz" --trunk-gb 0 --cache-gb 0 --block-mb 0.002 --threads 1
run "$G" gzb2 --trunk "$W/gz" --trunk-gb 0 --cache-gb 0 --block-mb 0.1 --threads 2 --io-threads 3
run "$G" gzb3 --trunk "$W/gz" --trunk-gb 0.004 --cache-gb 0 --block-mb 0.7 --threads 2
for r in gs0 gs0t2 gpart gall graws0 gzs0 gzb1 gzb2 gzb3; do
  cmp -s "$W/gres.st" "$W/$r.st" || fail "generated: logits differ: resident vs $r"
done
grep -qE "pinned trunk +[1-7] of 8 layers" "$W/gpart.err" || fail "the partial budget should pin some layers"
python3 - "$W/graw.json" "$W/gz.json" <<'PY' || fail "compressed streaming does not read fewer trunk bytes"
import json, sys
a, b = (json.load(open(f))["decode"] for f in sys.argv[1:])
assert b["trunk_bytes_per_token"] < 0.8 * a["trunk_bytes_per_token"], (a, b)
assert b["decode_cpu_seconds_per_token"] > 0 and a["decode_cpu_seconds_per_token"] == 0, (a, b)
PY

# --- a damaged block ---------------------------------------------------------------
cp -r "$W/gz" "$W/bad"
python3 - "$W/bad/trunk.json" "$W/bad/trunk.bin" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
sec = [s for s in t["sections"] if s["name"] == "layer.5"][0]
off = sec["stored_offset"] + sum(b[0] for b in sec["blocks"][:3]) + sec["blocks"][3][0] // 2
with open(sys.argv[2], "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0x24]))
PY
expect 8 "layer.5 block 3" -- "$B/k3-pack" --check "$W/bad" "$G"
expect 3 "layer.5 block 3.*damaged" -- "$B/k3-forward" "$G" --ids "$W/ids" --gen 2 --trunk "$W/bad" --trunk-gb 1 --cache-gb 0
expect 3 "layer.5 block 3.*damaged" -- "$B/k3-forward" "$G" --ids "$W/ids" --gen 2 --trunk "$W/bad" --trunk-gb 0 --cache-gb 0
expect 3 "layer.5 block 3.*damaged" -- "$B/k3-forward" "$G" --ids "$W/ids" --gen 2 --trunk "$W/bad" --trunk-gb 0 --cache-gb 0 --block-mb 0.01
[ ! -s "$W/out" ] || fail "a run over a damaged block printed ids"
# A damaged raw streamed section is caught by its block's hash on first read.
cp -r "$W/graw" "$W/badraw"
python3 - "$W/badraw/trunk.json" "$W/badraw/trunk.bin" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
sec = [s for s in t["sections"] if s["name"] == "layer.5"][0]
x = sec["tensors"][0]
with open(sys.argv[2], "r+b") as f:
    f.seek(x["offset"] + 1); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0x01]))
PY
expect 3 "section layer.5 block 0 .*does not match its hash" -- "$B/k3-forward" "$G" --ids "$W/ids" --gen 2 --trunk "$W/badraw" --trunk-gb 0 --cache-gb 0
[ ! -s "$W/out" ] || fail "a run over a damaged raw section printed ids"
echo "compressed trunk: OK"
