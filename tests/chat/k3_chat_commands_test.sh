#!/usr/bin/env bash
# k3-chat's /undo, /retry and /reset over the tiny model through a script,
# the history file after each, a mistyped command's suggestion, --json,
# --tools (a tool call's result as the next message), and one context
# default for --plan and a run.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
CHAT="$BIN/k3-chat"
roles() { python3 -c "import json,sys; print(' '.join(json.loads(l)['role'] for l in open(sys.argv[1])))" "$1"; }
users() { python3 -c "import json,sys; print('|'.join(json.loads(l)['content'] for l in open(sys.argv[1]) if json.loads(l)['role'] == 'user'))" "$1"; }

# /undo drops the last exchange, from the conversation and the history file.
printf 'First\n/send\nSecond\n/undo\nThird\n' > "$work/s1"
"$CHAT" "$TINY" --max-tokens 3 --threads 2 --history "$work/u.jsonl" < "$work/s1" > /dev/null 2> "$work/err"
check "/undo exit" 0 "$?"
check "/undo: Second and its reply are gone" "First|Third" "$(users "$work/u.jsonl")"
check "/undo: roles" "user assistant user assistant" "$(roles "$work/u.jsonl")"
contains "/undo says so" "the last exchange was dropped (2 messages left)" "$(cat "$work/err")"

# /retry answers the same message again: one user message, one reply.
printf 'Only\n/retry\n' > "$work/s2"
"$CHAT" "$TINY" --max-tokens 3 --threads 2 --history "$work/r.jsonl" --temp 1 --seed 3 < "$work/s2" > /dev/null 2> "$work/err"
check "/retry exit" 0 "$?"
check "/retry: the message once, a reply once" "user assistant" "$(roles "$work/r.jsonl")"
check "/retry: the same message" "Only" "$(users "$work/r.jsonl")"

# /undo with nothing to undo is refused (exit 4 at the end).
printf '/undo\n' | "$CHAT" "$TINY" --threads 2 > /dev/null 2> "$work/err"
check "/undo on an empty conversation: exit 4" 4 "$?"
contains "/undo on an empty conversation: says why" "no message to go back to" "$(cat "$work/err")"

# /reset keeps the conversation it ends in a copy beside the history, and says where.
printf 'Keep me\n/reset\nAfter\n' > "$work/s3"
"$CHAT" "$TINY" --max-tokens 3 --threads 2 --history "$work/k.jsonl" < "$work/s3" > /dev/null 2> "$work/err"
check "/reset exit" 0 "$?"
contains "/reset says where the old one is" "the previous one is kept in $work/k-1.jsonl" "$(cat "$work/err")"
check "/reset: the copy holds the old conversation" "Keep me" "$(users "$work/k-1.jsonl")"
check "/reset: the history holds the new one" "After" "$(users "$work/k.jsonl")"
printf 'Again\n/reset\n' | "$CHAT" "$TINY" --max-tokens 3 --threads 2 --history "$work/k.jsonl" > /dev/null 2> "$work/err"
contains "a second /reset: the next free name" "kept in $work/k-2.jsonl" "$(cat "$work/err")"
check "the first copy is untouched" "Keep me" "$(users "$work/k-1.jsonl")"

# A mistyped command: what was meant.
printf '/exi\n' | "$CHAT" "$TINY" --threads 2 > /dev/null 2> "$work/err"
check "/exi: exit 4" 4 "$?"
contains "/exi: did you mean /exit" "unknown command /exi; did you mean /exit?" "$(cat "$work/err")"
printf '/rset\n' | "$CHAT" "$TINY" --threads 2 > /dev/null 2> "$work/err"
contains "/rset: did you mean /reset" "did you mean /reset?" "$(cat "$work/err")"
printf '/zzz\n' | "$CHAT" "$TINY" --threads 2 > /dev/null 2> "$work/err"
holds "/zzz: no guess" "! grep -q 'did you mean' '$work/err'"

# --json: one JSON line per reply, the assistant message the history keeps, nothing else on stdout.
printf 'Hi\n/send\nThere\n' | "$CHAT" "$TINY" --json --max-tokens 3 --threads 2 --history "$work/j.jsonl" \
  > "$work/json.out" 2> /dev/null
check "--json exit" 0 "$?"
check "--json: one line per reply" 2 "$(wc -l < "$work/json.out")"
check "--json: the lines are the history's assistant messages" ok "$(python3 - "$work/json.out" "$work/j.jsonl" <<'PY'
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
hist = [m for m in map(json.loads, open(sys.argv[2])) if m["role"] == "assistant"]
print("ok" if out == hist and all(m["role"] == "assistant" for m in out) else "differ: %r %r" % (out, hist))
PY
)"

# --tools: declarations go into every prompt; after a reply that called a
# tool, the next message is that call's result (a tool message).
cat > "$work/tools.json" <<'JSON'
[{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
JSON
prompt_ids() { sed -nE 's/.*turn 1: prompt ([0-9]+) ids.*/\1/p' "$1"; }
printf 'Hi\n' | "$CHAT" "$TINY" --max-tokens 2 --threads 2 --stats > /dev/null 2> "$work/plain.err"
printf 'Hi\n' | "$CHAT" "$TINY" --max-tokens 2 --threads 2 --stats --tools "$work/tools.json" > /dev/null 2> "$work/tools.err"
check "--tools exit" 0 "$?"
holds "--tools: the declarations are in the prompt ($(prompt_ids "$work/tools.err") > $(prompt_ids "$work/plain.err") ids)" \
  "[ '$(prompt_ids "$work/tools.err")' -gt '$(prompt_ids "$work/plain.err")' ]"
printf '{"role": "user", "content": "Weather in Paris?"}\n{"role": "assistant", "content": "", "tool_calls": [{"id": "functions.get_weather:0", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]}\n' > "$work/t.jsonl"
printf '{"temp_c": 21}\n' | "$CHAT" "$TINY" --max-tokens 2 --threads 2 --tools "$work/tools.json" --history "$work/t.jsonl" \
  > /dev/null 2> "$work/err"
check "tool result turn exit" 0 "$?"
check "the input after a tool call is its result" "tool functions.get_weather:0 get_weather {\"temp_c\": 21}" \
  "$(python3 -c "import json; m=[json.loads(l) for l in open('$work/t.jsonl')][2]; print(m['role'], m['tool_call_id'], m['name'], m['content'])")"
echo '{"not": "an array"}' > "$work/bad_tools.json"
TOOL=k3-chat bad "--tools not an array" 4 "must be a non-empty JSON array" -- "$CHAT" "$TINY" --tools "$work/bad_tools.json"

# A bad message in --history is named by its line (blank lines count).
printf '{"role": "user", "content": "a"}\n\n{"role": "bogus", "content": "b"}\n' > "$work/bad.jsonl"
TOOL=k3-chat bad "bad history message" 4 "$work/bad.jsonl: line 3: role: unknown role" -- "$CHAT" "$TINY" --history "$work/bad.jsonl"

# One context default: what --plan plans is what a run plans.
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL pack"; exit 1; }
"$CHAT" "$TINY" --trunk "$work/trunk" --preset min --threads 2 --plan < /dev/null > /dev/null 2> "$work/plan.err"
check "chat --plan exit" 0 "$?"
printf 'Hi\n' | "$CHAT" "$TINY" --trunk "$work/trunk" --preset min --threads 2 --max-tokens 2 > /dev/null 2> "$work/run.err"
plan_line=$(grep -o 'MLA latent cache.*positions' "$work/plan.err")
contains "chat --plan: chat's context, 8192 positions" "8192 positions" "$plan_line"
check "chat run: the same MLA plan as --plan" "$plan_line" "$(grep -o 'MLA latent cache.*positions' "$work/run.err")"

finish k3_chat_commands_test
