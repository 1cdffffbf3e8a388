#!/usr/bin/env bash
# k3-chat keeps a conversation within the context it planned (--ctx, 8192
# by default): a resumed history longer than that is refused before anything
# is evaluated (exit 6), a message that would make the conversation longer
# is refused and the conversation goes on (exit 4 at the end), and a reply
# is cut where the context ends. It used to prefill a 1,032-id history at
# --ctx 100.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
CHAT="$BIN/k3-chat"
TOOL=k3-chat
count() {  # count JSONL: ids of the conversation as a chat request renders it
  python3 -c "import json,sys; print(json.dumps({'messages':[json.loads(l) for l in open(sys.argv[1])]}))" "$1" |
    "$BIN/k3-tokenize" --tok "$TINY" --chat --count
}

# 1. A long resumed history at a small --ctx: exit 6, nothing evaluated, history untouched.
python3 - "$work/long.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(40):
        f.write(json.dumps({"role": "user", "content": "Tell me about the number %d and its friends." % i}) + "\n")
        f.write(json.dumps({"role": "assistant", "content": "The number %d is a fine number indeed." % i}) + "\n")
PY
n=$(count "$work/long.jsonl")
holds "the history is over 100 ids ($n)" "[ '${n:-0}' -gt 100 ]"
cp "$work/long.jsonl" "$work/long.before"
echo "one more" | timeout 60 "$CHAT" "$TINY" --ctx 100 --history "$work/long.jsonl" > "$work/out" 2> "$work/err"
check "long history at --ctx 100: exit" 6 "$?"
holds "names both sizes" "grep -Eq 'the conversation is [0-9]+ ids, and the planned context of 100 positions \\(--ctx\\)' '$work/err'"
check "history untouched" "$(cat "$work/long.before")" "$(cat "$work/long.jsonl")"
# The same history fits the default context.
echo "one more" | timeout 120 "$CHAT" "$TINY" --max-tokens 4 --history "$work/long.jsonl" > /dev/null 2> "$work/err"
check "the same history at the default --ctx: exit" 0 "$?"

# 2. A message that would overflow the context is refused; a short one after it is answered.
long_msg=$(python3 -c "print(' '.join(['word'] * 400))")
printf '%s\n/send\nHi\n' "$long_msg" > "$work/script"
timeout 120 "$CHAT" "$TINY" --ctx 200 --max-tokens 4 --history "$work/h2.jsonl" < "$work/script" > /dev/null 2> "$work/err"
check "over-long message: exit 4" 4 "$?"
contains "over-long message: refused" "message refused: with it the conversation is" "$(cat "$work/err")"
contains "over-long message: says what to do" "send a shorter message, /reset, or raise --ctx" "$(cat "$work/err")"
check "only the short turn is in the history" "user assistant" \
  "$(python3 -c "import json; print(' '.join(json.loads(l)['role'] for l in open('$work/h2.jsonl')))")"
check "the refused message is not kept" 0 "$(grep -c word "$work/h2.jsonl")"

# 3. A reply is cut where the context ends: the conversation never exceeds --ctx.
timeout 120 "$CHAT" "$TINY" --max-tokens 50 --stats <<< "Hi" > /dev/null 2> "$work/err"
p=$(sed -nE 's/.*turn 1: prompt ([0-9]+) ids.*/\1/p' "$work/err")
full=$(sed -nE 's/.*; ([0-9]+) generated in.*/\1/p' "$work/err")
holds "at the default --ctx the reply is longer than 3 ids (${full:-?}; prompt ${p:-?})" "[ -n '$p' ] && [ '${full:-0}' -gt 3 ]"
timeout 120 "$CHAT" "$TINY" --ctx $((p + 3)) --max-tokens 50 --stats <<< "Hi" > /dev/null 2> "$work/err"
check "reply at the context's end: exit" 0 "$?"
check "the reply stops where the context ends" 3 "$(sed -nE 's/.*; ([0-9]+) generated in.*/\1/p' "$work/err")"
contains "the cut reply is reported" "the reply is incomplete" "$(cat "$work/err")"

# 4. --help says which exit code is which.
help=$("$CHAT" --help)
contains "--help: over-long message" "also a message that would make the conversation longer than --ctx" "$help"
contains "--help: resumed conversation" "6 when the resumed conversation" "$help"
finish k3_chat_context_test
