#!/usr/bin/env bash
# k3-serve keeps a state at the end of a chat's system prompt and tool list
# (--system-keep-min, here lowered for the tiny model's short prompts):
#  1. A second conversation that shares only the system prompt and tools
#     continues from it: cached_tokens = the system part's ids, counted by
#     k3-tokenize --chat (no generation prompt).
#  2. With --prompt-cache, a restarted server (after kill -9) continues a
#     third conversation from it, and a Messages API one with the same
#     system prompt and tools.
#  3. The replies (message and logprobs) equal those of a server that
#     evaluates every prompt from scratch; there, with the minimum above the
#     system part, nothing is continued.
# The states at the system part's end and at the chat's unchanged prefix
# are kept within the pass that runs the prompt: the first request's prompt
# is one weight pass (it was two: a pass ended at the system part), the
# second's (from the system part on) one more.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

tools='[{"type":"function","function":{"name":"get_weather","description":"The weather in a city today",
"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]'
system='{"role":"system","content":"You are a careful assistant of a travel agency. Answer briefly."}'
# chat USER: the system prompt, the tools and one user message (the server's default: no thinking).
chat() {
  printf '{"messages":[%s,{"role":"user","content":"%s"}],"tools":%s,"max_tokens":4,"temperature":0,"logprobs":true,"top_logprobs":2}' \
    "$system" "$1" "$tools"
}
cached() { jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]'; }
prefill_passes() { curl -s --max-time 10 "$url/metrics" | awk '$1 == "k3_prefill_passes_total" {print $2}'; }
reply() { jget "$body" 'json.dumps([j["choices"][0]["message"], j["choices"][0]["logprobs"]], sort_keys=True)'; }
files() { find "$1" -maxdepth 1 -name 'prompt-*.k3state' | wc -l; }
wait_files() { for _ in $(seq 1 100); do [ "$(files "$1")" -ge "$2" ] && return 0; sleep 0.1; done; }

printf '{"messages":[%s],"tools":%s,"thinking":false,"add_generation_prompt":false}' "$system" "$tools" > "$work/sys.json"
n=$("$BIN/k3-tokenize" --tok "$TINY" --chat-file "$work/sys.json" --count)
holds "the system part has ids ($n)" "[ '$n' -gt 16 ]"

# 1. Within one server.
pc="$work/pc"
start_server "$work/a.log" --slots 1 --prompt-cache "$pc" --system-keep-min 16 || exit 1
post body /v1/chat/completions "$(chat "What is the weather in Paris?")"
check "first conversation: nothing to continue from" "200 0" "$status $(cached)"
check "the first prompt, its system part kept inside, is one weight pass" 1 "$(prefill_passes)"
post body /v1/chat/completions "$(chat "Book me a train to Lyon.")"
check "second conversation continues from the system part" "200 $n" "$status $(cached)"
check "and its prompt past the system part is one more" 2 "$(prefill_passes)"
lyon=$(reply)
# The system part; each conversation's prompt, and its prompt and reply.
wait_files "$pc" 5
check "kept in the prompt cache: the system part once, two states per conversation (prompt, reply)" 5 "$(files "$pc")"
kill -9 "$pid"
wait "$pid" 2> /dev/null

# 2. After a restart.
start_server "$work/b.log" --slots 1 --prompt-cache "$pc" --system-keep-min 16 || exit 1
post body /v1/chat/completions "$(chat "Tell me a story about the sea.")"
check "restarted: a third conversation continues from the system part" "200 $n" "$status $(cached)"
story=$(reply)
# The Messages API renders the same system prompt and tools (input_schema: the same declaration).
post body /v1/messages '{"model":"k3-tiny","max_tokens":2,"thinking":{"type":"disabled"},
"system":"You are a careful assistant of a travel agency. Answer briefly.","messages":[{"role":"user","content":"Where is Lyon?"}],
"tools":[{"name":"get_weather","description":"The weather in a city today",
"input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}'
check "a Messages conversation continues from it too" "200 $n" "$status $(jget "$body" 'j["usage"]["cache_read_input_tokens"]')"
kill -9 "$pid"
wait "$pid" 2> /dev/null

# 3. From scratch: the minimum above the system part keeps nothing for it.
start_server "$work/c.log" --slots 1 --system-keep-min $((n + 1)) || exit 1
post body /v1/chat/completions "$(chat "What is the weather in Paris?")"
post body /v1/chat/completions "$(chat "Book me a train to Lyon.")"
check "below the minimum: nothing continued" "200 0" "$status $(cached)"
check "the second conversation's reply and logprobs are those from scratch" "$(reply)" "$lyon"
post body /v1/chat/completions "$(chat "Tell me a story about the sea.")"
check "the third's too" "200 0" "$status $(cached)"
check "the third conversation's reply and logprobs are those from scratch" "$(reply)" "$story"
finish k3_serve_system_keep_test
