#!/usr/bin/env bash
# The official OpenAI client for Node (npm package "openai", pinned by
# tests/clients/package-lock.json, installed with npm ci into the build
# directory) drives k3-serve on the tiny model: chat non-streamed and
# streamed, reasoning_content with thinking on and off, a tool-call round
# trip, abort mid-stream, four concurrent streams each equal to its run
# alone, completions, errors (tests/clients/openai_client_checks.mjs).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
install_clients || exit 1
cp "$K3_SOURCE_DIR/tests/clients/openai_client_checks.mjs" "$clients/"
start_server "$work/server.log" --slots 4 || exit 1
timeout 500 node "$clients/openai_client_checks.mjs" "$url" "$BIN/k3-tokenize" "$TINY"
check "openai client checks" 0 "$?"
finish k3_serve_client_test
