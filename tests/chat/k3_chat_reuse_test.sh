#!/usr/bin/env bash
# A chat continued over three turns, each turn evaluating only what the model
# had not seen, gives bit-identical logits to one fresh run over each fully
# re-rendered prompt: k3-chat --logits (the row each reply's first token was
# drawn from) against k3-tokenize --chat | k3-forward --logits (the last
# prompt row), resident and streaming from a packed trunk with nothing pinned,
# and with --no-reuse (the whole prompt every turn).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

"$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
printf 'Hi there.\n/send\nTell me more about it,\nin two lines.\n/send\nAnd then?\n' > "$work/script"

# name, flags...
chat() {
  local name=$1; shift
  "$BIN/k3-chat" "$TINY" --max-tokens 6 --stats --history "$work/$name.jsonl" --logits "$work/$name.st" "$@" \
    < "$work/script" > "$work/$name.out" 2> "$work/$name.err"
  check "$name exit" 0 "$?"
}
chat resident
chat streaming --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0
chat noreuse --no-reuse
for name in resident streaming; do
  for t in 2 3; do
    reused=$(sed -nE "s/.*turn $t: prompt [0-9]+ ids, ([0-9]+) reused.*/\1/p" "$work/$name.err")
    holds "$name turn $t reuses the earlier state ($reused ids)" "[ '${reused:-0}' -gt 50 ]"
  done
done
contains "--no-reuse turn 3 reuses nothing" "turn 3: prompt" "$(cat "$work/noreuse.err")"
check "--no-reuse turn 3 reused ids" 0 "$(sed -nE 's/.*turn 3: prompt [0-9]+ ids, ([0-9]+) reused.*/\1/p' "$work/noreuse.err")"
check "same transcript resident/streaming" "$(cat "$work/resident.jsonl")" "$(cat "$work/streaming.jsonl")"
check "same transcript with --no-reuse" "$(cat "$work/resident.jsonl")" "$(cat "$work/noreuse.jsonl")"
check "transcript: 3 turns" 6 "$(wc -l < "$work/resident.jsonl")"

# Fresh runs: prompt of turn t = the first 2(t-1) messages + user message t, rendered from scratch.
for t in 1 2 3; do
  python3 - "$work/resident.jsonl" "$t" > "$work/req$t.json" <<'PY'
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
t = int(sys.argv[2])
print(json.dumps({"messages": msgs[:2 * t - 1]}, ensure_ascii=False))
PY
  "$BIN/k3-tokenize" --tok "$TINY" --chat-file "$work/req$t.json" > "$work/p$t.ids"
  "$BIN/k3-forward" "$TINY" --ids "$work/p$t.ids" --logits "$work/fresh$t.st" > /dev/null 2>&1
  check "fresh run $t (resident)" 0 "$?"
  "$BIN/k3-forward" "$TINY" --ids "$work/p$t.ids" --logits "$work/fresh_s$t.st" --trunk "$work/trunk" --trunk-gb 0 \
    --cache-gb 0 > /dev/null 2>&1
  check "fresh run $t (streaming)" 0 "$?"
done

# Row t of each chat's logits == the last row of fresh run t, bit for bit.
res=$(python3 - "$work" <<'PY'
import json, struct, sys
w = sys.argv[1]
def rows(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])["logits"]
    r, v = h["shape"]
    s, e = h["data_offsets"]
    d = b[8 + n + s:8 + n + e]
    return [d[i * v * 4:(i + 1) * v * 4] for i in range(r)]
out = []
for t in (1, 2, 3):
    want = rows(f"{w}/fresh{t}.st")[-1]
    for other in (f"fresh_s{t}.st",):
        out.append(f"{other}:{rows(w + '/' + other)[-1] == want}")
    for chat in ("resident", "streaming", "noreuse"):
        out.append(f"{chat}{t}:{rows(f'{w}/{chat}.st')[t - 1] == want}")
print(" ".join(out))
PY
)
for t in 1 2 3; do
  for chat in resident streaming noreuse; do
    contains "turn $t logits of $chat chat == fresh run" "$chat$t:True" "$res"
  done
  contains "turn $t fresh streaming == fresh resident" "fresh_s$t.st:True" "$res"
done

finish "k3_chat_reuse_test"
