#!/usr/bin/env bash
# k3-chat's --history is only ever appended whole lines: a history whose last
# line has no line end (edited by hand, or cut by a full disk) gets one before
# the next message, so no two messages share a line and the chat resumes;
# /save onto the chat's own history (by its name, another spelling of it, or
# a link to it) goes through the history, so every later turn is still kept
# in the file at that name.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
CHAT=("$BIN/k3-chat" "$TINY" --max-tokens 3 --threads 2)
users() { python3 -c "import json,sys; print('|'.join(json.loads(l)['content'] for l in open(sys.argv[1]) if json.loads(l)['role'] == 'user'))" "$1"; }
lines_are_objects() { python3 -c "
import json, sys
n = 0
for l in open(sys.argv[1]):
    assert isinstance(json.loads(l), dict); n += 1
print(n)" "$1" 2>&1; }

for end in "" $'\r' ' '; do
  name="last line ending in [${end/$'\r'/CR}]"
  printf '{"role": "user", "content": "Hi"}\n{"role": "assistant", "content": "Hello"}%s' "$end" > "$work/h.jsonl"
  printf 'Next\n' | "${CHAT[@]}" --history "$work/h.jsonl" > /dev/null 2> "$work/err"
  check "$name: exit" 0 "$?"
  check "$name: one message per line" 4 "$(lines_are_objects "$work/h.jsonl")"
  printf 'Again\n' | "${CHAT[@]}" --history "$work/h.jsonl" > /dev/null 2> "$work/err"
  check "$name: resumes" 0 "$?"
  check "$name: every user message kept" "Hi|Next|Again" "$(users "$work/h.jsonl")"
done

# /save onto the running chat's own history, by three names.
ln -s "s.jsonl" "$work/link.jsonl"
for target in "$work/s.jsonl" "$work/./s.jsonl" "$work/link.jsonl"; do
  rm -f "$work/s.jsonl" "$work/s.jsonl.k3s"
  printf 'One\n/save %s\nTwo\n/send\nThree\n' "$target" | "${CHAT[@]}" --history "$work/s.jsonl" > /dev/null 2> "$work/err"
  check "/save $target: exit" 0 "$?"
  check "/save $target: the turns after it are kept" "One|Two|Three" "$(users "$work/s.jsonl")"
  check "/save $target: one message per line" 6 "$(lines_are_objects "$work/s.jsonl")"
  holds "/save $target: the link is still a link" "[ -L '$work/link.jsonl' ]"
done

finish k3_chat_history_lines_test
