#!/usr/bin/env bash
# The official OpenAI client for Node (npm "openai", pinned by
# tests/clients/package-lock.json) drives k3-serve's /v1/responses on the
# tiny model: replies equal /v1/chat/completions' for the same conversation,
# streamed events, tool items, previous_response_id and store: false, errors
# (tests/clients/openai_responses_checks.mjs).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
install_clients || exit 1
cp "$K3_SOURCE_DIR/tests/clients/openai_responses_checks.mjs" "$clients/"
start_server "$work/server.log" --slots 2 || exit 1
timeout 300 node "$clients/openai_responses_checks.mjs" "$url"
check "openai responses checks" 0 "$?"
finish k3_serve_responses_test
