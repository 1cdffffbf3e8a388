#!/usr/bin/env bash
# k3-tokenize --chat and k3-detok --chat through the real binaries: all 28
# chat vectors (ids from stdin and --chat-file, --text-out), every refusal
# with exit 4 naming the field, and a reply shown by channel, hidden
# reasoning, --json, and a malformed reply.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
CHAT=${K3_TEST_DATA:?}/chat
TOK="$BIN/k3-tokenize"
DETOK="$BIN/k3-detok"

# One directory per case: request.json, ids.txt, text.txt (float_requests.jsonl
# replaces a stored request that lost its floats; see tests/data/chat/README.md).
python3 - "$CHAT" "$work/cases" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
restored = {}
for line in open(os.path.join(src, "float_requests.jsonl"), encoding="utf-8"):
    c = json.loads(line)
    restored[c["name"]] = json.dumps(c["request"], ensure_ascii=False)
for line in open(os.path.join(src, "cases_k3_tiny.jsonl"), encoding="utf-8"):
    c = json.loads(line)
    d = os.path.join(out, c["name"])
    os.makedirs(d)
    open(os.path.join(d, "request.json"), "w", encoding="utf-8").write(
        restored.get(c["name"], json.dumps(c["request"], ensure_ascii=False)))
    open(os.path.join(d, "ids.txt"), "w").write("".join(f"{i}\n" for i in c["ids"]))
    open(os.path.join(d, "text.txt"), "w", encoding="utf-8").write(c["text"])
PY
n=0
for d in "$work"/cases/*/; do
  name=$(basename "$d")
  out=$("$TOK" --tok "$TINY" --chat < "$d/request.json"); rc=$?
  check "$name exit" 0 "$rc"
  check "$name ids" "$(cat "$d/ids.txt")" "$out"
  out=$("$TOK" --tok "$TINY" --chat-file "$d/request.json")
  check "$name ids --chat-file" "$(cat "$d/ids.txt")" "$out"
  "$TOK" --tok "$TINY" --chat --text-out < "$d/request.json" > "$work/text"
  check "$name --text-out" "$(sha256sum < "$d/text.txt")" "$(sha256sum < "$work/text")"
  n=$((n + 1))
done
check "all vectors ran" 28 "$n"

TOOL=k3-tokenize
req() { printf '%s' "$1" > "$work/req.json"; }
req '[1,2]'
bad "not an object" 4 "request: must be a JSON object" -- "$TOK" --tok "$TINY" --chat --chat-file "$work/req.json"
req '{"model":"k3"}'
bad "no messages" 4 "request: messages: missing" -- "$TOK" --tok "$TINY" --chat --chat-file "$work/req.json"
req '{"messages":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}'
bad "unknown role" 4 "messages[1].role: unknown role \"robot\"" -- "$TOK" --tok "$TINY" --chat --chat-file "$work/req.json"
req '{"messages":[{"role":"user","content":"a"}],"thinking_effort":"medium"}'
bad "medium effort" 4 "thinking_effort: \"medium\" is not supported" -- "$TOK" --tok "$TINY" --chat --chat-file "$work/req.json"
req '{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]}]}'
bad "non-object arguments" 4 "messages[0].tool_calls[0].function.arguments: the string holds an array" -- \
  "$TOK" --tok "$TINY" --chat --chat-file "$work/req.json"
req '{"messages": ['
bad "not JSON" 4 "request: not valid JSON" -- "$TOK" --tok "$TINY" --chat --chat-file "$work/req.json"
bad "missing file" 4 "nope.json: chat file not found" -- "$TOK" --tok "$TINY" --chat-file "$work/nope.json"
bad "--chat with --bos" 2 "--bos" -- "$TOK" --tok "$TINY" --chat --bos
bad "--text-out without --chat" 2 "add --chat" -- "$TOK" --tok "$TINY" --text-out --text x

# k3-detok --chat: a reply as the model writes it after the generation prompt.
TOOL=k3-detok
reply="Let me think.
Two lines.<|close|>think<|sep|><|open|>response<|sep|>The answer: 42.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>"
"$TOK" --tok "$TINY" --text "$reply" > "$work/reply.ids"
out=$("$DETOK" --tok "$TINY" --chat < "$work/reply.ids"); rc=$?
check "reply exit" 0 "$rc"
check "reply: reasoning prefixed, then the answer" "> Let me think.
> Two lines.

The answer: 42." "$out"
out=$("$DETOK" --tok "$TINY" --chat --no-reasoning < "$work/reply.ids")
check "--no-reasoning" "The answer: 42." "$out"
out=$("$DETOK" --tok "$TINY" --chat --json < "$work/reply.ids" | tail -1)
check "--json message" '{"role": "assistant", "content": "The answer: 42.", "reasoning_content": "Let me think.\nTwo lines."}' "$out"
# Tool calls.
reply='Need the weather.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>'
"$TOK" --tok "$TINY" --text "$reply" > "$work/tools.ids"
out=$("$DETOK" --tok "$TINY" --chat --no-reasoning < "$work/tools.ids")
check "tool call shown" "tool call: get_weather(city=Paris, days=3)" "$out"
out=$("$DETOK" --tok "$TINY" --chat --json < "$work/tools.ids" | tail -1)
contains "--json tool call" '"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 3}"}}]' "$out"
# Malformed: cut short. --json: partial message and exit 4; without: a warning, exit 0.
head -n 8 "$work/reply.ids" > "$work/cut.ids"
"$DETOK" --tok "$TINY" --chat --json < "$work/cut.ids" > "$work/out" 2> "$work/err"; rc=$?
check "cut reply --json exit" 4 "$rc"
contains "cut reply names the problem" "malformed reply: the reply stops in the think channel" "$(cat "$work/err")"
contains "cut reply partial JSON" '"reasoning_content": "Let me think.' "$(tail -1 "$work/out")"
"$DETOK" --tok "$TINY" --chat < "$work/cut.ids" > "$work/out" 2> "$work/err"; rc=$?
check "cut reply without --json exit" 0 "$rc"
contains "cut reply warning" "k3-detok: warning: malformed reply" "$(cat "$work/err")"
# A control token inside the answer.
"$TOK" --tok "$TINY" --text "r<|close|>think<|sep|><|open|>response<|sep|>ab[BOS]cd" > "$work/ctl.ids"
"$DETOK" --tok "$TINY" --chat --json < "$work/ctl.ids" > "$work/out" 2> "$work/err"; rc=$?
check "control token exit" 4 "$rc"
contains "control token named" "control token [BOS] in the response channel" "$(cat "$work/err")"
bad "--json without --chat" 2 "add --chat" -- "$DETOK" --tok "$TINY" --json

finish "k3_tokenize_chat_test"
