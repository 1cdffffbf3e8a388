#!/usr/bin/env bash
# k3-chat drafts by default (prompt lookup, --spec 4) and the replies are
# bit-identical to --no-spec: the same transcript and the same logits of each
# reply's first id, over six turns, resident and streaming with nothing
# pinned, at 1 and 2 threads, and with --spec 8. The generated checkpoint
# (small vocabulary, replies that repeat earlier turns) makes drafts happen:
# some kept, some rolled back, so the identity covers both paths. Also: the
# --help text, --no-spec with --spec refused, and the stats line.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

M="$work/model"
"$BIN/k3-synth" "$M" --preset tiny-like --vocab 1024 --seed 3 > /dev/null 2> "$work/synth.err" || { cat "$work/synth.err"; exit 1; }
"$BIN/k3-pack" "$M" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
printf 'Tell me a story.\n/send\nAnd another one.\n/send\nOne more, please.\n/send\nAnd another one.\n/send\nTell me a story.\n/send\nThanks. Another?\n' \
  > "$work/script"

chat() {  # chat NAME FLAGS...
  local name=$1; shift
  "$BIN/k3-chat" "$M" --no-think --max-tokens 40 --stats --history "$work/$name.jsonl" --logits "$work/$name.st" "$@" \
    < "$work/script" > "$work/$name.out" 2> "$work/$name.err"
  check "$name exit" 0 "$?"
}
drafts() {  # drafts NAME: "kept proposed" summed over the turns
  sed -nE 's/.*turn [0-9]+: .* drafts ([0-9]+)\/([0-9]+) kept.*/\1 \2/p' "$work/$1.err" |
    awk '{k += $1; p += $2} END {print k + 0, p + 0}'
}
chat plain --no-spec
chat default
chat spec8 --spec 8 --threads 2
chat streaming --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0
chat streaming2 --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 --threads 2 --spec 3

check "transcript: 6 turns" 12 "$(wc -l < "$work/plain.jsonl")"
check "--no-spec drafts nothing" "0 0" "$(drafts plain)"
for name in default spec8 streaming streaming2; do
  check "$name transcript == --no-spec" same "$(cmp -s "$work/plain.jsonl" "$work/$name.jsonl" && echo same)"
  check "$name reply logits == --no-spec (bit for bit)" same "$(cmp -s "$work/plain.st" "$work/$name.st" && echo same)"
  check "$name output == --no-spec" same "$(cmp -s "$work/plain.out" "$work/$name.out" && echo same)"
  read -r kept proposed <<< "$(drafts "$name")"
  holds "$name drafted ($kept of $proposed kept)" "[ '$proposed' -gt 0 ]"
  holds "$name kept drafts and rolled back others ($kept of $proposed)" "[ '$kept' -gt 0 ] && [ '$kept' -lt '$proposed' ]"
done
turn2=$(sed -nE 's/.*turn 2: .* ([0-9]+) generated in [0-9.]+ s, ([0-9]+) weight passes.*/\1 \2/p' "$work/default.err")
holds "a turn with kept drafts takes fewer weight passes than ids ($turn2)" "[ ${turn2% *} -gt ${turn2#* } ]"
contains "--help shows --spec and its default" "default 4" "$("$BIN/k3-chat" --help)"
contains "--help shows --no-spec" "--no-spec" "$("$BIN/k3-chat" --help)"
"$BIN/k3-chat" "$M" --spec 2 --no-spec < /dev/null > /dev/null 2> "$work/both.err"
check "--spec with --no-spec is a usage error" 2 "$?"
finish "k3_chat_spec_test"
