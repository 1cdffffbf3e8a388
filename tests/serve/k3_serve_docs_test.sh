#!/usr/bin/env bash
# docs/serve.md's curl and Node snippets run as written against k3-serve on
# the tiny model (only the port differs: the test's server listens on a free
# loopback port instead of 8080).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
install_clients || exit 1
start_server "$work/server.log" --slots 2 || exit 1

curl_block=$(snippet curl)
holds "docs have a curl snippet" "[ -n \"\$curl_block\" ]"
out=$(bash -c "${curl_block//127.0.0.1:8080/127.0.0.1:$port}")
check "curl snippet exit" 0 "$?"
check "curl snippet answers a chat completion" "chat.completion assistant" \
  "$(jget "$out" 'j["object"] + " " + j["choices"][0]["message"]["role"]')"

node_block=$(snippet node)
holds "docs have a Node snippet" "[ -n \"\$node_block\" ]"
printf '%s\n' "${node_block//127.0.0.1:8080/127.0.0.1:$port}" > "$clients/doc_snippet.mjs"
out=$(cd "$clients" && timeout 300 node doc_snippet.mjs)
check "Node snippet exit" 0 "$?"
post expected /v1/chat/completions '{"messages": [{"role": "user", "content": "Count to five."}], "max_tokens": 8}'
check "Node snippet prints the streamed reply" "$(jget "$expected" '(j["choices"][0]["message"].get("reasoning_content") or "") + j["choices"][0]["message"]["content"]')" "$out"
finish k3_serve_docs_test
