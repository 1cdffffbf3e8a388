#!/usr/bin/env bash
# Structured output in k3-serve on the tiny model (random weights): 200
# seeded requests across a set of JSON schemas, json_object, thinking on,
# streamed equal to non-streamed, forced tool calls (required and named,
# strict arguments); every reply validated with ajv (pinned in
# tests/clients); unsupported keywords refused with 400 naming them
# (tests/clients/structured_output_checks.mjs). Then /metrics reports the
# masks and their time.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
install_clients || exit 1
cp "$K3_SOURCE_DIR/tests/clients/structured_output_checks.mjs" "$clients/"
start_server "$work/server.log" --slots 4 || exit 1
timeout 900 node "$clients/structured_output_checks.mjs" "$url" "${K3_STRUCTURED_REQUESTS:-200}"
check "structured output checks" 0 "$?"
metrics=$(curl -s "$url/metrics")
masks=$(sed -nE 's/^k3_constraint_masks_total ([0-9.e+]+)$/\1/p' <<< "$metrics")
holds "masks counted in /metrics" "python3 -c 'import sys; sys.exit(0 if float(\"${masks:-0}\") > 1000 else 1)'"
contains "mask time in /metrics" "k3_constraint_mask_seconds_per_token " "$metrics"
finish k3_serve_structured_test
