#!/usr/bin/env bash
# Every tool started with stdin, stdout or stderr closed keeps its own output
# out of the files it opens: descriptors 0-2 are taken (on /dev/null, in the
# direction the stream is not used) before anything is opened. k3-chat with
# stdout or stderr closed used to write its reply or log text into the
# history file (which took the freed descriptor) and exit 0; the next resume
# failed.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
valid_history() {  # valid_history FILE: every line a JSON message object
  python3 -c "
import json, sys
for l in open(sys.argv[1], encoding='utf-8'):
    m = json.loads(l)
    assert isinstance(m, dict) and 'role' in m
print('valid')" "$1" 2>&1 | tail -1
}

# 1. k3-chat, each standard stream closed in turn.
for closed in stdout stderr stdin; do
  h="$work/h-$closed.jsonl"
  case $closed in
    stdout) echo "Hello" | "$BIN/k3-chat" "$TINY" --max-tokens 4 --history "$h" >&- 2> "$work/err"; rc=$? ;;
    stderr) echo "Hello" | "$BIN/k3-chat" "$TINY" --max-tokens 4 --history "$h" > "$work/out" 2>&-; rc=$? ;;
    stdin) "$BIN/k3-chat" "$TINY" --max-tokens 4 --history "$h" <&- > "$work/out" 2> "$work/err"; rc=$? ;;
  esac
  first=$( [ -e "$h" ] && wc -l < "$h" || echo 0)
  if [ -e "$h" ]; then
    check "k3-chat, $closed closed: the history holds only messages" valid "$(valid_history "$h")"
    # The next run resumes it.
    echo "Again" | "$BIN/k3-chat" "$TINY" --max-tokens 4 --history "$h" > /dev/null 2> "$work/err2"
    check "k3-chat, $closed closed: the history resumes" 0 "$?"
  fi
  case $closed in
    stdout) check "k3-chat, stdout closed: the reply cannot be written (exit 5)" 5 "$rc"
            contains "k3-chat, stdout closed: says so" "stdout" "$(cat "$work/err")" ;;
    stderr) check "k3-chat, stderr closed: exit" 0 "$rc"
            check "k3-chat, stderr closed: user + assistant" 2 "$first" ;;
    stdin) holds "k3-chat, stdin closed: no crash (exit $rc)" "[ $rc -lt 128 ] && [ $rc != 1 ]" ;;
  esac
done

# 2. k3-forward with stdout or stderr closed writes a state file that is one.
prompt=$(cat "$TINY/prompt_ids.txt")
echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 3 --state-out "$work/ref.k3s" > "$work/ref.ids" 2> /dev/null
echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 3 --state-out "$work/s.k3s" > "$work/ids" 2>&-
check "k3-forward, stderr closed: exit" 0 "$?"
check "k3-forward, stderr closed: same ids" "$(cat "$work/ref.ids")" "$(cat "$work/ids")"
cmp -s "$work/ref.k3s" "$work/s.k3s"
check "k3-forward, stderr closed: the same state file" 0 "$?"
echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 3 --state-out "$work/t.k3s" >&- 2> "$work/err"
check "k3-forward, stdout closed: exit 5" 5 "$?"
holds "k3-forward, stdout closed: no state file carrying ids" "[ ! -e '$work/t.k3s' ] || cmp -s '$work/ref.k3s' '$work/t.k3s'"

# 3. k3-pack with stdout and stderr closed writes a trunk that checks out.
"$BIN/k3-pack" "$TINY" "$work/trunk" >&- 2>&-
check "k3-pack, stdout and stderr closed: exit" 0 "$?"
"$BIN/k3-pack" --check "$work/trunk" "$TINY" > /dev/null 2> "$work/err"
check "k3-pack, stdout and stderr closed: the trunk checks" 0 "$?"

# 4. The other tools: a closed stdout is a write error (exit 5), never a silent success.
TOOL=k3-tokenize
echo "Hello" | "$BIN/k3-tokenize" --tok "$TINY" >&- 2> "$work/err"
check "k3-tokenize, stdout closed: exit 5" 5 "$?"
echo "1 2 3" | "$BIN/k3-detok" --tok "$TINY" >&- 2> "$work/err"
check "k3-detok, stdout closed: exit 5" 5 "$?"

# 5. k3-synth with stdout and stderr closed writes the same checkpoint bytes
# (same seed, same bytes) as with both open: no progress text in a shard.
"$BIN/k3-synth" "$work/synth-ref" --preset tiny-like > /dev/null 2>&1
"$BIN/k3-synth" "$work/synth" --preset tiny-like >&- 2>&-
check "k3-synth, stdout and stderr closed: exit" 0 "$?"
check "k3-synth, stdout and stderr closed: the same files, byte for byte" "" "$(diff -r "$work/synth-ref" "$work/synth" 2>&1)"
# 6. k3-doctor: a report that cannot be written is exit 5, never a silent success.
"$BIN/k3-doctor" --no-probe --model "$TINY" >&- 2> "$work/err"
check "k3-doctor, stdout closed: exit 5" 5 "$?"
"$BIN/k3-doctor" --no-probe --model "$TINY" > "$work/out" 2>&-
rc=$?
holds "k3-doctor, stderr closed: exit 0 or 10 (got $rc)" '[ $rc -eq 0 ] || [ $rc -eq 10 ]'
contains "k3-doctor, stderr closed: the report is on stdout" "checkpoint" "$(cat "$work/out")"
finish closed_descriptors_test
