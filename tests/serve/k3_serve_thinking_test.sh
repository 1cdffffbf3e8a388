#!/usr/bin/env bash
# What a chat request that names neither reasoning_effort nor
# chat_template_kwargs gets: k3-serve's --thinking (default off) and
# --effort (default high). The prompt is checked against k3-tokenize --chat
# on the same messages with K3's own switches, and docs/serve.md's first
# curl example (8 tokens) returns visible content.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "$K3_SOURCE_DIR/tests/serve/serve_lib.sh"
messages='"messages":[{"role":"user","content":"What is 2+2?"}]'
native() { echo "{$messages$1}" | "$BIN/k3-tokenize" --tok "$TINY" --chat | xargs; }
served() {  # served JSON_TAIL: the ids /tokenize renders for the request
  post tok /tokenize "{$messages$1}"
  jget "$tok" '" ".join(map(str, j["tokens"]))'
}

start_server "$work/default.log" || exit 1
check "default: thinking off" "$(native ',"thinking":false')" "$(served '')"
check "reasoning_effort high: thinking on at high" "$(native ',"thinking":true,"thinking_effort":"high"')" \
  "$(served ',"reasoning_effort":"high"')"
check "reasoning_effort none: off" "$(native ',"thinking":false')" "$(served ',"reasoning_effort":"none"')"
check "chat_template_kwargs thinking on: the default effort, high" \
  "$(native ',"thinking":true,"thinking_effort":"high"')" "$(served ',"chat_template_kwargs":{"thinking":true}')"
# docs/serve.md's first curl example, as written (but the port).
curl_block=$(awk '$0 == "<!-- serve-doc-test: curl -->" {on = 1; next} on && /^```/ && !inside {inside = 1; next}
                  inside && /^```/ {exit} inside {print}' "$K3_SOURCE_DIR/docs/serve.md")
out=$(bash -c "${curl_block//127.0.0.1:8080/127.0.0.1:$port}")
check "the docs' curl example: no reasoning" False "$(jget "$out" '"reasoning_content" in j["choices"][0]["message"]')"
check "the docs' curl example: visible content" True "$(jget "$out" 'len(j["choices"][0]["message"]["content"]) > 0')"
kill -9 "$pid"

start_server "$work/on.log" --thinking on --effort low || exit 1
check "--thinking on --effort low" "$(native ',"thinking":true,"thinking_effort":"low"')" "$(served '')"
check "a request still turns it off" "$(native ',"thinking":false')" \
  "$(served ',"chat_template_kwargs":{"thinking":false}')"
post body /v1/chat/completions "{$messages,\"max_tokens\":4}"
check "thinking on: reasoning_content present" True "$(jget "$body" '"reasoning_content" in j["choices"][0]["message"]')"
bad "--thinking takes on or off" 2 "--thinking" -- "$BIN/k3-serve" "$TINY" --thinking maybe
bad "--effort takes low, high or max" 2 "--effort" -- "$BIN/k3-serve" "$TINY" --effort medium
finish k3_serve_thinking_test
