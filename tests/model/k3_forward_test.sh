#!/usr/bin/env bash
# k3-forward driven through pipes on the tiny checkpoint: golden greedy ids
# (incremental and --recompute), the --logits file against the golden logits,
# teacher forcing, and every bad-input path's exit code and one-line message.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
FWD="$BIN/k3-forward"
TOOL=k3-forward

golden() {  # golden PYTHON-EXPRESSION over g = golden.json
  python3 -c "import json,sys; g=json.load(open('$TINY/golden.json')); print($1)"
}

prompt=$(golden "' '.join(map(str, g['greedy']['prompt_ids']))")
want=$(golden "'\n'.join(map(str, g['greedy']['ids']))")
check "bundled prompt_ids.txt is the golden prompt" "$prompt" "$(cat "$TINY/prompt_ids.txt")"

# Greedy ids: incremental (default) and full recompute, 1 and 2 threads.
out=$(echo "$prompt" | "$FWD" "$TINY" --gen 20 --threads 1 2> "$work/err"); rc=$?
check "greedy exit" 0 "$rc"
check "greedy incremental ids" "$want" "$out"
contains "summary on stderr" "k3-forward: done in " "$(cat "$work/err")"
contains "summary peak RSS" "peak RSS" "$(cat "$work/err")"
out=$("$FWD" "$TINY" --gen 20 --recompute --threads 2 --ids "$TINY/prompt_ids.txt" 2> /dev/null)
check "greedy --recompute ids" "$want" "$out"
out=$(echo "$prompt" | "$FWD" "$TINY" --gen 5 2> /dev/null)
check "--gen 5 stops after 5" "$(echo "$want" | head -5)" "$out"

# --logits: prompt rows then one row per evaluated generated token; the rows
# that chose each generated id equal the golden greedy logits.
echo "$prompt" | "$FWD" "$TINY" --gen 20 --logits "$work/l.safetensors" > /dev/null 2>&1; rc=$?
check "--logits exit" 0 "$rc"
res=$(python3 - "$work/l.safetensors" "$TINY" <<'PY'
import json, struct, sys
path, tiny = sys.argv[1], sys.argv[2]
def load(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    return h, b[8 + n:]
h, data = load(path)
t = h['logits']; rows, vocab = t['shape']
assert t['dtype'] == 'F32' and t['data_offsets'] == [0, rows * vocab * 4], t
assert len(data) == rows * vocab * 4
g = json.load(open(tiny + '/golden.json'))['greedy']
p = len(g['prompt_ids'])
assert rows == p + 19, rows
gh, gdata = load(tiny + '/golden_logits.safetensors')
gt = gh['greedy.logits']; off = gt['data_offsets'][0]
mine = struct.unpack('<%df' % (rows * vocab), data)
ref = struct.unpack('<%df' % (20 * vocab), gdata[off:off + 20 * vocab * 4])
mx = max(abs(x) for x in ref)
err = max(abs(mine[(p - 1 + i) * vocab + j] - ref[i * vocab + j]) for i in range(20) for j in range(vocab))
print('ok' if err <= 1e-4 * mx else 'error %g > %g' % (err, 1e-4 * mx))
PY
)
check "--logits file matches golden greedy logits" "ok" "$res"

# Teacher forcing: one argmax per position, equal to the golden argmax.
tf_ids=$(golden "' '.join(map(str, g['teacher_forcing']['ids']))")
tf_want=$(golden "'\n'.join(map(str, g['teacher_forcing']['argmax']))")
out=$(echo "$tf_ids" | "$FWD" "$TINY" --teacher-forcing 2> /dev/null)
check "--teacher-forcing argmax" "$tf_want" "$out"

# Bad input: documented exit code, one line on stderr, nothing on stdout.
bad "non-numeric stdin" 4 "'abc' is not a token id" -- sh -c "echo '976 abc' | '$FWD' '$TINY' --gen 2"
bad "negative id" 4 "'-5' is not a token id" -- sh -c "echo '-5' | '$FWD' '$TINY' --gen 2"
bad "id >= vocab" 4 "outside the vocabulary 0..8447" -- sh -c "echo '976 8448' | '$FWD' '$TINY' --gen 2"
bad "empty prompt" 4 "prompt is empty" -- sh -c "printf '  \n' | '$FWD' '$TINY' --gen 2"
bad "missing ids file" 4 "not found" -- "$FWD" "$TINY" --ids "$work/nope.txt"
bad "missing model dir" 3 "not found" -- sh -c "echo 1 | '$FWD' '$work/no-model' --gen 2"
bad "unknown flag" 2 "--bogus" -- "$FWD" "$TINY" --bogus
bad "missing MODEL_DIR" 2 "MODEL_DIR" -- "$FWD"
bad "negative --gen" 2 "--gen" -- "$FWD" "$TINY" --gen -3

# A truncated shard is refused with exit 3 before any compute.
mkdir "$work/cut"
for f in "$TINY"/*.json "$TINY"/*.safetensors; do ln -s "$f" "$work/cut/"; done
rm "$work/cut/model-00003-of-00005.safetensors"
head -c 100000 "$TINY/model-00003-of-00005.safetensors" > "$work/cut/model-00003-of-00005.safetensors"
bad "truncated shard" 3 "model-00003-of-00005.safetensors" -- sh -c "echo 976 | '$FWD' '$work/cut' --gen 2"

out=$("$FWD" --help); rc=$?
check "--help exit" 0 "$rc"
contains "--help lists exit codes" "Exit codes:" "$out"

# Stop ids come from the model: generation_config.json's eos_token_id and the
# tokenizer's eos_token both stop generation by default (the stopping id is
# written); --ignore-eos keeps going.
mkdir -p "$work/eos"
for f in "$TINY"/*; do ln -s "$f" "$work/eos/$(basename "$f")"; done
third=$(echo "$want" | sed -n 3p)
rm "$work/eos/generation_config.json" "$work/eos/tokenizer_config.json"
echo "{\"eos_token_id\": [8193, $third]}" > "$work/eos/generation_config.json"
sed 's/"eos_token": "\[EOS\]"/"eos_token": "ony"/' "$TINY/tokenizer_config.json" > "$work/eos/tokenizer_config.json"
contains "tokenizer eos_token replaced" '"eos_token": "ony"' "$(cat "$work/eos/tokenizer_config.json")"
out=$(echo "$prompt" | "$FWD" "$work/eos" --gen 20 2> /dev/null)
check "stops at the tokenizer's eos_token (2nd id, an ordinary token here)" "$(echo "$want" | head -2)" "$out"
sed 's/"eos_token": "\[EOS\]"/"eos_token": "[EOS]"/' "$TINY/tokenizer_config.json" > "$work/eos/tokenizer_config.json"
out=$(echo "$prompt" | "$FWD" "$work/eos" --gen 20 2> /dev/null)
check "stops at generation_config's second eos id" "$(echo "$want" | head -3)" "$out"
out=$(echo "$prompt" | "$FWD" "$work/eos" --gen 20 --ignore-eos 2> /dev/null)
check "--ignore-eos keeps going" "$want" "$out"

finish "k3_forward_test"
