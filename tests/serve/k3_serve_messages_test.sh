#!/usr/bin/env bash
# Anthropic's Messages API: the official Anthropic client for Node (npm
# package "@anthropic-ai/sdk", pinned by tests/clients/package-lock.json)
# drives k3-serve on the tiny model, started with an API key it sends as
# x-api-key: a plain message, streamed equal to non-streamed, greedy replies
# equal to /v1/chat/completions' for the same conversation, thinking on and
# off, a tool round trip and count_tokens against k3-tokenize --chat, a kept
# state continued, stop sequences, abort mid-stream, typed errors
# (tests/clients/anthropic_client_checks.mjs). Then, with curl, what the
# client does not show: Anthropic-shaped 401/404/413 bodies, the
# anthropic-version check, count_tokens with a Bearer key, /metrics.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
install_clients || exit 1
cp "$K3_SOURCE_DIR/tests/clients/anthropic_client_checks.mjs" "$clients/"
key=k3-test-key
start_server "$work/server.log" --slots 4 --api-key "$key" --max-body-mb 1 || exit 1
timeout 500 node "$clients/anthropic_client_checks.mjs" "$url" "$key" "$BIN/k3-tokenize" "$TINY"
check "anthropic client checks" 0 "$?"

msg='{"model":"k3-tiny","max_tokens":3,"messages":[{"role":"user","content":"Hi"}],"thinking":{"type":"disabled"}}'
post body /v1/messages "$msg"
check "no key: 401" 401 "$status"
check "no key: Anthropic's error shape" "error authentication_error" "$(jget "$body" 'j["type"] + " " + j["error"]["type"]')"
post body /v1/messages "$msg" -H "x-api-key: $key" -H "anthropic-version: 2023-01-01"
check "unknown anthropic-version: 400" 400 "$status"
check "anthropic-version named" "True" "$(jget "$body" '"anthropic-version" in j["error"]["message"]')"
post body /v1/messages/batches "$msg" -H "x-api-key: $key"
check "unknown path under /v1/messages: 404" 404 "$status"
check "404 in Anthropic's shape" "not_found_error" "$(jget "$body" 'j["error"]["type"]')"
python3 -c 'print("{\"model\":\"k3-tiny\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"" + "a" * 1100000 + "\"}]}")' > "$work/big.json"
out=$(curl -s --max-time 60 -w '\n%{http_code}' -H 'Content-Type: application/json' -H "x-api-key: $key" --data-binary @"$work/big.json" "$url/v1/messages")
status=${out##*$'\n'}
body=${out%$'\n'*}
check "body over --max-body-mb: 413" 413 "$status"
check "413 in Anthropic's shape" "request_too_large" "$(jget "$body" 'j["error"]["type"]')"
post body /v1/messages "$msg" -H "x-api-key: $key" -H "anthropic-version: 2023-06-01"
check "curl: 200" 200 "$status"
check "curl: a message" "message" "$(jget "$body" 'j["type"]')"
post body /v1/messages/count_tokens '{"model":"k3-tiny","messages":[{"role":"user","content":"Hi"}],"thinking":{"type":"disabled"}}' \
  -H "Authorization: Bearer $key"
check "count_tokens with a Bearer key" 200 "$status"
expected=$(printf '%s' '{"messages":[{"role":"user","content":"Hi"}],"thinking":false}' | "$BIN/k3-tokenize" --tok "$TINY" --chat | wc -w)
check "count_tokens counts the rendered prompt" "$expected" "$(jget "$body" 'j["input_tokens"]')"
grep -q 'k3_requests_total{endpoint="/v1/messages",status="200"}' <(curl -s -H "x-api-key: $key" "$url/metrics")
check "/metrics counts /v1/messages" 0 "$?"

# docs/serve.md's Anthropic snippet as written (only the port and the model's name differ).
snippet=$(awk '$0 == "<!-- serve-doc-test: anthropic-node -->" {on = 1; next} on && /^```/ && !inside {inside = 1; next}
       inside && /^```/ {exit} inside {print}' "$K3_SOURCE_DIR/docs/serve.md")
holds "docs have an Anthropic snippet" "[ -n \"\$snippet\" ]"
snippet=${snippet//127.0.0.1:8080/127.0.0.1:$port}
printf '%s\n' "${snippet//model: \"k3\"/model: \"k3-tiny\"}" > "$clients/anthropic_doc_snippet.mjs"
out=$(cd "$clients" && ANTHROPIC_API_KEY=$key timeout 300 node anthropic_doc_snippet.mjs)
check "Anthropic snippet exit" 0 "$?"
post expected /v1/chat/completions '{"messages": [{"role": "user", "content": "Count to five."}], "max_tokens": 8}' -H "x-api-key: $key"
check "Anthropic snippet prints the streamed reply" \
  "$(jget "$expected" '(j["choices"][0]["message"].get("reasoning_content") or "") + (j["choices"][0]["message"]["content"] or "")')" "$out"
finish k3_serve_messages_test
