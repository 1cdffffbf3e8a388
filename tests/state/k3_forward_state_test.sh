#!/usr/bin/env bash
# Conversations and sampling through the real k3-forward on the tiny
# checkpoint: a run split by --state-out/--state-in gives the ids and the
# logits (byte for byte) of one run, greedy and sampled, at any thread count
# and memory budget;
# sampled ids follow the documented algorithm (re-derived in Python from the
# logits); stop ids; and every refusal path leaves existing files untouched.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
SRC=${K3_SOURCE_DIR:?}
FWD="$BIN/k3-forward"

fwd() { "$FWD" "$TINY" "$@" 2>> "$work/stderr"; }
# logits_data FILE: the raw F32 bytes of tensor 'logits' (rows x vocab), as hex.
rows_equal() {  # rows_equal WHOLE FIRST_ROW PART... : PART files' rows, concatenated, equal WHOLE's rows from FIRST_ROW on
  python3 - "$@" <<'PY'
import json, struct, sys
def load(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    t = json.loads(b[8:8 + n])['logits']
    s, e = t['data_offsets']
    return t['shape'], b[8 + n + s:8 + n + e]
(rows, vocab), whole = load(sys.argv[1])
first = int(sys.argv[2])
parts = b''.join(load(p)[1] for p in sys.argv[3:])
want = whole[first * vocab * 4:]
print('equal' if parts == want and len(parts) > 0 else 'differ: %d vs %d bytes' % (len(parts), len(want)))
PY
}

prompt=$(cat "$TINY/prompt_ids.txt")   # 7 ids: "The capital of France is"
n_prompt=$(echo $prompt | wc -w)
more="290 641 3200 484 11 326"           # a second user turn

# ---- 1. Greedy: one run of 20 vs 8 + 12 through a state file, with other thread counts.
one=$(echo "$prompt" | fwd --gen 20 --threads 1 --logits "$work/one.st")
a=$(echo "$prompt" | fwd --gen 8 --threads 2 --state-out "$work/g.k3s" --logits "$work/a.st")
b=$(fwd --gen 12 --threads 1 --state-in "$work/g.k3s" --logits "$work/b.st" < /dev/null)
check "greedy split ids" "$one" "$(printf '%s\n%s' "$a" "$b")"
check "greedy split logits" "equal" "$(rows_equal "$work/one.st" 0 "$work/a.st" "$work/b.st")"
check "greedy ids are the golden ones" \
  "$(python3 -c "import json; print('\n'.join(map(str, json.load(open('$TINY/golden.json'))['greedy']['ids'])))")" "$one"
# --state-in and --state-out may name the same file: each turn replaces it.
cp "$work/g.k3s" "$work/same.k3s"
s1=$(fwd --gen 3 --state-in "$work/same.k3s" --state-out "$work/same.k3s" < /dev/null)
s2=$(fwd --gen 3 --state-in "$work/same.k3s" --state-out "$work/same.k3s" < /dev/null)
check "same file in and out" "$(echo "$b" | head -6)" "$(printf '%s\n%s' "$s1" "$s2")"
# --recompute continuing from a state recomputes from the saved history: same ids.
b2=$(fwd --gen 12 --recompute --state-in "$work/g.k3s" < /dev/null)
check "greedy split --recompute ids" "$b" "$b2"

# ---- 2. Sampled: the same, and the continuation keeps the saved sampler settings.
S="--temp 0.9 --top-k 200 --top-p 0.95 --min-p 0.01 --seed 1234"
one_s=$(echo "$prompt" | fwd --gen 20 $S --logits "$work/one_s.st")
a=$(echo "$prompt" | fwd --gen 5 $S --threads 1 --state-out "$work/s.k3s" --logits "$work/a_s.st")
b=$(fwd --gen 15 --threads 2 --state-in "$work/s.k3s" --logits "$work/b_s.st" < /dev/null)
check "sampled split ids (settings from the state)" "$one_s" "$(printf '%s\n%s' "$a" "$b")"
check "sampled split logits" "equal" "$(rows_equal "$work/one_s.st" 0 "$work/a_s.st" "$work/b_s.st")"
differs "sampling differs from greedy" "$one" "$one_s"
again=$(echo "$prompt" | fwd --gen 20 $S --threads 2)
check "same seed, same ids" "$one_s" "$again"
other=$(echo "$prompt" | fwd --gen 20 --temp 0.9 --top-k 200 --top-p 0.95 --min-p 0.01 --seed 1235)
differs "another seed, other ids" "$one_s" "$other"
# A flag given on the continuation overrides the saved value: --temp 0 is greedy.
b_greedy=$(fwd --gen 3 --temp 0 --state-in "$work/s.k3s" --logits "$work/bg.st" < /dev/null)
check "override to greedy" "$(python3 - "$work/bg.st" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
t = json.loads(b[8:8 + n])['logits']; rows, vocab = t['shape']
d = b[8 + n:]
out = []
for r in range(1, rows):   # row 0 is the pending id's position; rows 1.. chose ids 2..
    row = struct.unpack_from('<%df' % vocab, d, r * vocab * 4)
    out.append(max(range(vocab), key=lambda i: (row[i], -i)))
print('\n'.join(map(str, out)))
PY
)" "$(echo "$b_greedy" | tail -n +2)"

# ---- 2b. Memory budgets: a state saved while streaming weights (trunk and
# expert cache at zero, or a preset) continues in another budget, and the
# other way round, with the ids and logits of one all-resident run.
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1
check "k3-pack for the budget runs" 0 "$?"
a=$(echo "$prompt" | fwd --gen 6 $S --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 --threads 1 \
  --state-out "$work/m.k3s" --logits "$work/a_m.st")
b=$(fwd --gen 14 --threads 2 --state-in "$work/m.k3s" --logits "$work/b_m.st" < /dev/null)
contains "the first part really streamed" "pinned trunk      0 of 13 layers" "$(cat "$work/stderr")"
check "streamed then resident: ids" "$one_s" "$(printf '%s\n%s' "$a" "$b")"
check "streamed then resident: logits" "equal" "$(rows_equal "$work/one_s.st" 0 "$work/a_m.st" "$work/b_m.st")"
a=$(echo "$prompt" | fwd --gen 9 $S --cache-gb 0.0001 --state-out "$work/m2.k3s" --logits "$work/a_m2.st")
b=$(fwd --gen 11 --trunk "$work/trunk" --preset laptop --state-in "$work/m2.k3s" --logits "$work/b_m2.st" < /dev/null)
check "small cache then laptop preset: ids" "$one_s" "$(printf '%s\n%s' "$a" "$b")"
check "small cache then laptop preset: logits" "equal" \
  "$(rows_equal "$work/one_s.st" 0 "$work/a_m2.st" "$work/b_m2.st")"
t2=$(echo "$more" | fwd --gen 4 --trunk "$work/trunk" --trunk-gb 0.0015 --cache-gb 0.00005 --state-in "$work/m2.k3s")
check "conversation turn in a third budget" "$(echo "$prompt $(echo $a) $more" | fwd --gen 4 $S)" "$t2"

# ---- 3. The sampled ids follow the documented algorithm: recompute them in
# Python (its own MT19937-64) from the logits rows that chose them.
res=$(python3 - "$work/one_s.st" "$n_prompt" "$SRC/tests/sampling" $one_s <<'PY'
import json, struct, sys
sys.path.insert(0, sys.argv[3])
import sampler_reference as ref
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
t = json.loads(b[8:8 + n])['logits']; rows, vocab = t['shape']
d = b[8 + n:]
p0 = int(sys.argv[2]); ids = list(map(int, sys.argv[4:]))
g = ref.MT19937_64(1234)
for _ in range(p0):
    g.next()   # draws belong to positions; the prompt's are skipped
for j, want in enumerate(ids):
    row = struct.unpack_from('<%df' % vocab, d, (p0 - 1 + j) * vocab * 4)
    order, w = ref.candidates(list(row), 0.9, 200, 0.95, 0.01)
    got, _ = ref.pick(order, w, ref.unit(g.next()))
    if got != want:
        print('position %d: reference %d, k3-forward %d' % (p0 + j, got, want)); break
else:
    print('ok')
PY
)
check "sampled ids match the independent reference" "ok" "$res"

# ---- 4. Conversation: turn 1, then turn 2 from the state, equals one run over
# everything (the second turn's logits byte for byte), greedy and sampled.
for mode in greedy sampled; do
  F=""; [ "$mode" = sampled ] && F="$S"
  t1=$(echo "$prompt" | fwd --gen 4 $F --state-out "$work/c.k3s")
  t2=$(echo "$more" | fwd --gen 6 $F --state-in "$work/c.k3s" --state-out "$work/c2.k3s" --logits "$work/t2.st")
  whole=$(echo "$prompt $(echo $t1) $more" | fwd --gen 6 $F --logits "$work/whole.st")
  check "$mode conversation ids" "$whole" "$t2"
  # turn 2 evaluated the pending last id of turn 1, then $more, then 5 generated ids.
  first=$((n_prompt + 4 - 1))
  check "$mode conversation logits" "equal" "$(rows_equal "$work/whole.st" "$first" "$work/t2.st")"
  # The saved history is the whole conversation but the last generated id (pending).
  t3=$(fwd --gen 2 $F --state-in "$work/c2.k3s" < /dev/null)
  whole3=$(echo "$prompt $(echo $t1) $more" | fwd --gen 8 $F | tail -2)
  check "$mode third continuation" "$whole3" "$t3"
done

# ---- 5. A prompt saved without generating, continued with nothing or with more ids.
echo "$prompt" | fwd --gen 0 --state-out "$work/p.k3s" > /dev/null
check "prompt-only continuation, no new ids" "$one" "$(fwd --gen 20 --threads 1 --state-in "$work/p.k3s" < /dev/null)"
check "prompt-only continuation, more ids" "$(echo "$prompt $more" | fwd --gen 5)" \
  "$(echo "$more" | fwd --gen 5 --state-in "$work/p.k3s")"
# Teacher forcing continues too: argmax of each new position.
check "teacher forcing after a state" "$(echo "$prompt $more" | fwd --teacher-forcing | tail -6)" \
  "$(echo "$more" | fwd --teacher-forcing --state-in "$work/p.k3s")"

# ---- 6. Stop ids: generation ends after the first --stop-id, which is written.
third=$(echo "$one" | sed -n 3p)
out=$(echo "$prompt" | fwd --gen 20 --stop-id 1 --stop-id "$third")
check "--stop-id stops after it" "$(echo "$one" | head -3)" "$out"
out=$(echo "$prompt" | "$FWD" --gen 20 --stop-id "$third" "$TINY" 2> /dev/null)
check "--stop-id takes one value, MODEL_DIR may follow" "$(echo "$one" | head -3)" "$out"
# ... and the state continues right after it.
echo "$prompt" | fwd --gen 20 --stop-id "$third" --state-out "$work/stop.k3s" > /dev/null
check "continue after a stop id" "$(echo "$one" | sed -n 4,6p)" "$(fwd --gen 3 --state-in "$work/stop.k3s" < /dev/null)"

# ---- 7. Interrupted (SIGINT): the ids written so far and the state are kept,
# and the state continues exactly where the run stopped.
echo "$prompt" | "$FWD" "$TINY" --gen 1000000 --ignore-eos --state-out "$work/int.k3s" > "$work/int.out" 2> /dev/null &
pid=$!
for _ in $(seq 100); do [ -s "$work/int.out" ] && break; sleep 0.1; done
sleep 0.3
kill -INT "$pid"; wait "$pid"; rc=$?
check "interrupted exit" 130 "$rc"
n=$(wc -l < "$work/int.out")
cont=$(fwd --gen 3 --ignore-eos --state-in "$work/int.k3s" < /dev/null)
whole=$(echo "$prompt" | fwd --gen $((n + 3)) --ignore-eos)
check "interrupted run ($n ids) + continuation = one run" "$whole" "$(printf '%s\n%s' "$(cat "$work/int.out")" "$cont")"

# ---- 8. Refusals: exit code, one line naming the file, nothing on stdout, and
# existing outputs untouched.
cp "$work/g.k3s" "$work/keep.k3s"; echo "previous logits" > "$work/keep.st"
keep_sum=$(cat "$work/keep.k3s" "$work/keep.st" | md5sum)
# another model: a copy of the tiny checkpoint with a different config.json
mkdir "$work/other"; for f in "$TINY"/*; do ln -s "$f" "$work/other/"; done
rm "$work/other/config.json"; sed 's/"transformers_version"/"comment": "a fine-tune",\n  "transformers_version"/' \
  "$TINY/config.json" > "$work/other/config.json"
bad "state of another model" 3 "saved for a different model" -- \
  sh -c "echo 1 | '$FWD' '$work/other' --gen 2 --state-in '$work/g.k3s' --state-out '$work/keep.k3s' --logits '$work/keep.st'"
contains "another model: names the file" "$work/g.k3s" "$(cat "$work/err")"
head -c 50000 "$work/g.k3s" > "$work/trunc.k3s"
bad "truncated state" 4 "truncated state file" -- \
  sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --state-in '$work/trunc.k3s' --state-out '$work/keep.k3s'"
python3 -c "
import sys; b = bytearray(open('$work/g.k3s', 'rb').read()); b[len(b) // 2] ^= 4
open('$work/flip.k3s', 'wb').write(b)"
bad "corrupted state" 4 "checksum mismatch" -- \
  sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --state-in '$work/flip.k3s' --state-out '$work/keep.k3s'"
python3 -c "
import struct; b = bytearray(open('$work/g.k3s', 'rb').read()); b[8:12] = struct.pack('<I', 9)
open('$work/ver.k3s', 'wb').write(b)"
bad "other format version" 4 "format version 9" -- \
  sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --state-in '$work/ver.k3s' --state-out '$work/keep.k3s'"
bad "not a state file" 4 "not a k3 state file" -- \
  sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --state-in '$TINY/config.json' --state-out '$work/keep.k3s'"
bad "missing state file" 4 "state file not found" -- \
  sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --state-in '$work/none.k3s' --state-out '$work/keep.k3s'"
bad "bad ids after a good state" 4 "is not a token id" -- \
  sh -c "echo 'x' | '$FWD' '$TINY' --gen 2 --state-in '$work/g.k3s' --state-out '$work/keep.k3s' --logits '$work/keep.st'"
bad "state in a missing directory" 5 "does not exist" -- \
  sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --state-out '$work/no/dir/s.k3s'"
bad "nothing to continue" 4 "nothing left to evaluate" -- \
  sh -c "'$FWD' '$TINY' --teacher-forcing --state-in '$work/p.k3s' < /dev/null"
check "refusals left existing files untouched" "$keep_sum" "$(cat "$work/keep.k3s" "$work/keep.st" | md5sum)"
check "no temporary files left" "" "$(ls "$work" | grep '\.tmp\.' || true)"
bad "negative --temp" 2 "--temp" -- sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --temp -1"
bad "--top-p 0" 2 "--top-p" -- sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --temp 1 --top-p 0"
bad "--min-p 2" 2 "--min-p" -- sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --temp 1 --min-p 2"
bad "--top-k -1" 2 "--top-k" -- sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --temp 1 --top-k -1"
bad "--stop-id outside vocab" 2 "--stop-id 8448" -- sh -c "echo 1 | '$FWD' '$TINY' --gen 2 --stop-id 8448"
bad "--seed not a number" 2 "--seed" -- "$FWD" "$TINY" --seed abc

finish "k3_forward_state_test"
