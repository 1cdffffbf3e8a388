#!/usr/bin/env bash
# k3-chat keeps the model state beside --history (HISTORY.k3s), so a resumed
# chat evaluates only the new message: --stats-json's "chat" reports the same
# reused and prefilled ids as the second turn of one uninterrupted run, with
# the same transcript and the same logits bits as that run and as a resume
# without the state file. /undo and /retry go back to a save point instead
# of evaluating the whole conversation again. A state file that is corrupt,
# of other weights, or a symbolic link is named, never used or written
# through, and the output does not change. Penalties travel in k3-forward's
# state files: a continued run samples as one run does.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

chat() {  # chat NAME SCRIPT_FILE HISTORY [ARGS...]
  local name=$1 script=$2 history=$3; shift 3
  "$BIN/k3-chat" "$TINY" --max-tokens 6 --stats --history "$history" --logits "$work/$name.st" \
    --stats-json "$work/$name.json" "$@" < "$script" > "$work/$name.out" 2> "$work/$name.err"
  check "$name exit" 0 "$?"
}
ids() {  # ids NAME FIELD [TURN]: the "chat" member's figure, of the last turn or turn TURN (from 1)
  python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['chat']
print(c['turns'][int(sys.argv[3]) - 1][sys.argv[2]] if sys.argv[3:] and sys.argv[3] else c[sys.argv[2]])" "$work/$1.json" "$2" "${3:-}" 2>&1 |
    tail -1
}
row() {  # row FILE N: logits row N (from 1) of a --logits file, hex
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])["logits"]
r, v = h["shape"]
s = h["data_offsets"][0] + 8 + n + (int(sys.argv[2]) - 1) * v * 4
print(b[s:s + v * 4].hex())
PY
}
printf 'Hi there.\n' > "$work/s1"
printf 'And then?\n' > "$work/s2"
printf 'Hi there.\n/send\nAnd then?\n' > "$work/s12"

# One run of two turns, and the same conversation in two runs.
chat one "$work/s12" "$work/one.jsonl"
chat first "$work/s1" "$work/res.jsonl"
holds "a state file beside the history" "[ -f '$work/res.jsonl.k3s' ]"
cp "$work/res.jsonl" "$work/first.jsonl"
cp "$work/res.jsonl.k3s" "$work/first.k3s"
chat resumed "$work/s2" "$work/res.jsonl"
reused=$(ids one reused_ids 2)
prefilled=$(ids one prefilled_ids 2)
holds "the second turn of one run reuses the first ($reused ids)" "[ '$reused' -gt 20 ]"
check "resumed: reused ids = one run's second turn" "$reused" "$(ids resumed reused_ids)"
check "resumed: prefilled ids = one run's second turn (only the new ones)" "$prefilled" "$(ids resumed prefilled_ids)"
check "resumed: the chat's turns in --stats-json" 1 "$(python3 -c "import json; print(len(json.load(open('$work/resumed.json'))['chat']['turns']))")"
check "resumed: the transcript of one run" "$(cat "$work/one.jsonl")" "$(cat "$work/res.jsonl")"
check "resumed: the logits of one run's second turn" "$(row "$work/one.st" 2)" "$(row "$work/resumed.st" 1)"

# The same without the state file, and with refused ones: evaluated again, same output.
again() {  # again NAME: resume first.jsonl (and a state file put there first) with the second message
  cp "$work/first.jsonl" "$work/$1.jsonl"
  chat "$1" "$work/s2" "$work/$1.jsonl"
  check "$1: the transcript of one run" "$(cat "$work/one.jsonl")" "$(cat "$work/$1.jsonl")"
  check "$1: the logits of one run" "$(row "$work/one.st" 2)" "$(row "$work/$1.st" 1)"
  check "$1: nothing reused" 0 "$(ids "$1" reused_ids)"
}
again nostate
check "nostate: the whole conversation evaluated" "$(python3 -c "print($reused + $prefilled)")" "$(ids nostate prefilled_ids)"
holds "nostate: a state file kept for the next run" "[ -f '$work/nostate.jsonl.k3s' ]"

cp "$work/first.k3s" "$work/corrupt.jsonl.k3s"
python3 -c "
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1; open(p, 'wb').write(b)" "$work/corrupt.jsonl.k3s"
again corrupt
contains "corrupt: named, and what happens" "corrupt.jsonl.k3s" "$(grep 'evaluated again' "$work/corrupt.err")"

mkdir "$work/other"
for f in "$TINY"/*; do ln -s "$f" "$work/other/"; done
rm "$work/other/config.json"
{ cat "$TINY/config.json"; echo; } > "$work/other/config.json"  # the same model, another config file: other weights to a state
cp "$work/first.k3s" "$work/otherw.jsonl.k3s"
cp "$work/first.jsonl" "$work/otherw.jsonl"
"$BIN/k3-chat" "$work/other" --max-tokens 6 --history "$work/otherw.jsonl" --stats-json "$work/otherw.json" \
  < "$work/s2" > /dev/null 2> "$work/otherw.err"
check "other weights: exit" 0 "$?"
contains "other weights: named" "saved for a different model" "$(grep 'evaluated again' "$work/otherw.err")"
check "other weights: nothing reused" 0 "$(ids otherw reused_ids)"
check "other weights: the transcript of one run" "$(cat "$work/one.jsonl")" "$(cat "$work/otherw.jsonl")"

# A history edited after its state was saved: the state no longer starts it.
sed 's/Hi there\./Hello there./' "$work/first.jsonl" > "$work/edited.jsonl"
cp "$work/first.k3s" "$work/edited.jsonl.k3s"
chat edited "$work/s2" "$work/edited.jsonl"
contains "edited history: the state is named, not used" "edited.jsonl.k3s: holds" "$(grep 'evaluated again' "$work/edited.err")"
check "edited history: nothing reused" 0 "$(ids edited reused_ids)"

cp "$work/first.jsonl" "$work/link.jsonl"
ln -s "$work/planted" "$work/link.jsonl.k3s"
chat link "$work/s2" "$work/link.jsonl"
contains "a symbolic link: not written through, said once" "the model state is not kept" "$(cat "$work/link.err")"
holds "a symbolic link: its target was not created" "[ ! -e '$work/planted' ] && [ -L '$work/link.jsonl.k3s' ]"

# /undo and /retry: the turn after them goes back to a save point; the
# transcript and logits are those of a run that never had the dropped turn.
printf 'Hi there.\n/send\nAnd then?\n/undo\nWhy?\n/retry\n' > "$work/su"
printf 'Hi there.\n/send\nWhy?\n' > "$work/sw"
chat undo "$work/su" "$work/undo.jsonl"
chat why "$work/sw" "$work/why.jsonl"
check "/undo /retry: the transcript of a run without the dropped turn" "$(cat "$work/why.jsonl")" "$(cat "$work/undo.jsonl")"
check "after /undo: the logits of that run" "$(row "$work/why.st" 2)" "$(row "$work/undo.st" 3)"
check "/retry: the same logits again" "$(row "$work/why.st" 2)" "$(row "$work/undo.st" 4)"
holds "after /undo: the first turn reused ($(ids undo reused_ids 3) ids)" "[ '$(ids undo reused_ids 3)' -gt 20 ]"
holds "/retry: goes back to its own turn's save point, past the first turn's" \
  "[ '$(ids undo reused_ids 4)' -gt '$(ids undo reused_ids 3)' ]"

# Penalties are saved in k3-forward's state files.
prompt=$(cat "$TINY/prompt_ids.txt")
# Sampled (seeded): the tiny model's greedy ids never repeat in 12 steps, so
# penalties cannot change a greedy run there.
pen=(--temp 1 --seed 7 --repeat-penalty 3 --frequency-penalty 2 --presence-penalty 1.5 --repeat-last-n -1)
whole=$(echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 12 --ignore-eos "${pen[@]}" 2> /dev/null)
differs "penalties change this generation" "$(echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 12 --ignore-eos --temp 1 --seed 7 2> /dev/null)" "$whole"
part=$(echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 6 --ignore-eos "${pen[@]}" --state-out "$work/p.k3s" 2> /dev/null)
rest=$("$BIN/k3-forward" "$TINY" --gen 6 --ignore-eos --state-in "$work/p.k3s" < /dev/null 2> /dev/null)
check "penalties saved: a continued run samples as one run" "$whole" "$(printf '%s\n%s' "$part" "$rest")"

finish k3_chat_state_test
