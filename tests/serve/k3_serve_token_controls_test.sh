#!/usr/bin/env bash
# k3-serve's logprobs / top_logprobs (chat and completions shapes), n and
# logit_bias on the tiny model (tests/serve/token_controls_checks.py): the
# log-probabilities equal k3-forward --logprobs's for the same ids and seed,
# streamed equal non-streamed, choice i of n equals the n = 1 request with
# seed + i and three choices take the weight passes one does, a bias moves
# greedy to the next id, bad values are 400s naming the field.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
start_server "$work/serve.log" --slots 3 --thinking off || exit 1
timeout 400 python3 "$K3_SOURCE_DIR/tests/serve/token_controls_checks.py" "$url" "$BIN" "$TINY" "$work"
check "token controls checks" 0 "$?"
finish k3_serve_token_controls_test
