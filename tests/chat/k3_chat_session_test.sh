#!/usr/bin/env bash
# k3-chat scripted through stdin over the tiny model: one question from a
# file, a resumed --history, /reset with --system, /save, /effort, /think,
# Ctrl-C (SIGINT) during a reply, and refusals (a bad command argument, a
# history line that is not a message).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
CHAT="$BIN/k3-chat"
lines() { wc -l < "$1"; }
field() {  # field FILE LINE EXPR: python expression over m = that line's message
  python3 -c "import json,sys; m=json.loads(open('$1',encoding='utf-8').read().splitlines()[$2-1]); print($3)"
}

# One turn from a file (two lines are one message), then exit.
printf 'What is the capital of France?\nAnswer in one word.\n' > "$work/q1.txt"
"$CHAT" "$TINY" --max-tokens 8 --history "$work/h.jsonl" < "$work/q1.txt" > "$work/out" 2> "$work/err"
check "one turn exit" 0 "$?"
check "history: user + assistant" 2 "$(lines "$work/h.jsonl")"
check "user message is the whole file" "What is the capital of France?
Answer in one word." "$(field "$work/h.jsonl" 1 'm["content"]')"
check "assistant role" assistant "$(field "$work/h.jsonl" 2 'm["role"]')"
holds "the reply was shown" "[ -s '$work/out' ]"
contains "reasoning lines prefixed off a terminal" "> " "$(head -c 2 "$work/out")"
contains "the cut reply is reported" "the reply is incomplete" "$(cat "$work/err")"

# Resumed: the next run continues the same conversation.
cp "$work/h.jsonl" "$work/h1.jsonl"
echo "And Germany?" | "$CHAT" "$TINY" --max-tokens 8 --stats --history "$work/h.jsonl" > /dev/null 2> "$work/err"
check "resumed exit" 0 "$?"
check "history appended" 4 "$(lines "$work/h.jsonl")"
check "earlier lines unchanged" "$(cat "$work/h1.jsonl")" "$(head -2 "$work/h.jsonl")"
n1=$(echo '{"messages":[{"role":"user","content":"And Germany?"}]}' | "$BIN/k3-tokenize" --tok "$TINY" --chat --count)
n2=$(sed -nE 's/.*turn 1: prompt ([0-9]+) ids.*/\1/p' "$work/err")
holds "resumed prompt holds the earlier turn ($n2 > $n1 ids)" "[ '${n2:-0}' -gt '$n1' ]"

# /reset with --system, /save, /effort, /think.
printf 'First\n/save %s\n/effort medium\n/effort low\n/reset\nSecond\n/think off\nThird\n/save %s/no/such/dir.jsonl\n/exit\nnot read\n' \
  "$work/saved.jsonl" "$work" > "$work/script"
"$CHAT" "$TINY" --max-tokens 5 --system "Be brief." --history "$work/r.jsonl" < "$work/script" > /dev/null 2> "$work/err"
check "refused commands make exit 4" 4 "$?"
contains "/save" "conversation saved to $work/saved.jsonl (3 messages)" "$(cat "$work/err")"
check "saved file" "system user assistant" "$(python3 -c "import json; print(' '.join(json.loads(l)['role'] for l in open('$work/saved.jsonl')))")"
contains "/effort medium refused" "/effort medium: not supported" "$(cat "$work/err")"
contains "/effort low" "thinking effort low" "$(cat "$work/err")"
contains "/reset" "new conversation" "$(cat "$work/err")"
contains "/save into a missing directory refused" "/save: " "$(cat "$work/err")"
# /effort and /think are kept as settings lines (the first one rewritten by /reset).
check "after /reset: settings, system + 2 turns, /think off between" \
  "settings:low/on system user assistant settings:low/off user assistant" \
  "$(python3 -c "import json; s = lambda m: 'settings:' + m['k3_chat_settings']['effort'] + '/' + m['k3_chat_settings']['thinking']; print(' '.join(m['role'] if 'role' in m else s(m) for m in map(json.loads, open('$work/r.jsonl'))))")"
check "system message kept" "Be brief." "$(field "$work/r.jsonl" 2 'm["content"]')"
check "turn after /reset" "Second" "$(field "$work/r.jsonl" 3 'm["content"]')"
check "thinking on: reasoning kept" True "$(field "$work/r.jsonl" 4 '"reasoning_content" in m')"
check "/think off: no reasoning" False "$(field "$work/r.jsonl" 7 '"reasoning_content" in m')"
check "/exit stops reading" 0 "$(grep -c 'not read' "$work/r.jsonl")"

# Ctrl-C during a reply stops it ("stopping within a layer" at once); the
# conversation is as before that message and goes on with the next one,
# exactly as a chat that never had it. To be sure the signal lands inside
# the reply, stdout is a pipe already full: k3-chat blocks writing the
# reply's first text, the signal is sent then, and the pipe is drained
# afterwards.
printf 'Talk for a long time.\n/send\nShort one.\n' > "$work/script2"
rc=$(python3 - "$CHAT" "$TINY" "$work" <<'PY'
import fcntl, os, signal, subprocess, sys, time
chat, tiny, work = sys.argv[1:4]
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
fl = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    while True:
        os.write(w, b"#" * 512)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, fl)
p = subprocess.Popen([chat, tiny, "--max-tokens", "100", "--history", work + "/i.jsonl"],
                     stdin=open(work + "/script2"), stdout=w, stderr=open(work + "/ierr", "w"))
os.close(w)
blocked = False
for _ in range(600):  # up to 60 s for the model to load and the prompt to run
    try:
        # Blocked in write(1, ...) on the full pipe (wchan pipe_write or anon_pipe_write).
        blocked = open(f"/proc/{p.pid}/wchan").read().strip().endswith("pipe_write")
    except OSError:
        break
    if blocked:
        break
    time.sleep(0.1)
if blocked:
    os.kill(p.pid, signal.SIGINT)
    time.sleep(0.2)
out = b""
while chunk := os.read(r, 65536):
    out += chunk
open(work + "/iout", "wb").write(out)
print(f"{p.wait()} {'blocked' if blocked else 'never-blocked'}")
PY
)
check "Ctrl-C: k3-chat was writing the reply when interrupted, then exit 0" "0 blocked" "$rc"
check "Ctrl-C: says it is stopping" 1 "$(grep -c 'k3-chat: stopping within a layer (Ctrl-C again quits at once)' "$work/ierr")"
check "Ctrl-C: the reply stopped, the conversation as before it" 1 \
  "$(grep -c 'reply stopped (Ctrl-C); the conversation is as before this message' "$work/ierr")"
check "Ctrl-C: the stopped exchange is not kept" 2 "$(lines "$work/i.jsonl")"
check "Ctrl-C: second message answered" "Short one." "$(field "$work/i.jsonl" 1 'm["content"]')"
printf 'Short one.\n' > "$work/script3"
"$CHAT" "$TINY" --max-tokens 100 --history "$work/alone.jsonl" < "$work/script3" > /dev/null 2>&1
check "Ctrl-C: the same transcript as a chat without the stopped message" "$(cat "$work/alone.jsonl")" "$(cat "$work/i.jsonl")"

# Refused history: a line that is not JSON, a message with an unknown role.
TOOL=k3-chat
printf '{"role":"user","content":"a"}\nnot json\n' > "$work/bad1.jsonl"
bad "history not JSON" 4 "bad1.jsonl line 2: not JSON" -- "$CHAT" "$TINY" --history "$work/bad1.jsonl"
printf '{"role":"user","content":"a"}\n{"role":"wizard","content":"b"}\n' > "$work/bad2.jsonl"
bad "history unknown role" 4 "bad2.jsonl: line 2: role: unknown role \"wizard\"" -- "$CHAT" "$TINY" --history "$work/bad2.jsonl"
check "refused history untouched" 2 "$(lines "$work/bad2.jsonl")"
ln -s "$work/h.jsonl" "$work/link.jsonl"
bad "history through a symbolic link" 5 "symbolic link" -- "$CHAT" "$TINY" --history "$work/link.jsonl"
bad "bad effort flag" 2 "--thinking-effort" -- "$CHAT" "$TINY" --thinking-effort medium
bad "--no-think with an effort" 2 "excludes" -- "$CHAT" "$TINY" --no-think --thinking-effort low

finish "k3_chat_session_test"
