#!/usr/bin/env bash
# k3-fetch-verify download when the hub's reply is not HTTP (another
# service's bytes on the port), or declares a Content-Length shorter than the
# body it sends (the excess is then read as the next reply on the reused
# connection): the error names what was wrong (never "a scheme other than
# http/https"), and since a new connection can fix it, it is retried: a fault
# that passes leaves a complete, correct download; one that lasts ends with
# exit 7 after the retries, naming it.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"

S2=model-00002-of-00005.safetensors

# Once each: retried, and the download completes byte for byte.
faults "$WORK/once.json" '[
  {"path": "'$S2'", "kind": "not-http", "times": 1},
  {"path": "tiktoken.model", "kind": "short-length", "short": 1000, "times": 1}
]'
start_hub once --faults "$WORK/once.json"
fetch "$WORK/dl" --jobs 1
expect_rc 0 "a garbled reply once: retried"
same_as_repo "$WORK/dl"
expect_in "$ERR" "$S2: the server's reply is not HTTP" "the non-HTTP reply named"
case "$ERR" in *"scheme other than http"*) fail "a garbled reply called a scheme refusal: $ERR" ;; esac
[ "$(content_requests "$S2" | wc -l)" -ge 2 ] || fail "the non-HTTP reply was not retried: $(content_requests "$S2")"

# Always: the retries run out, exit 7, the reason named.
faults "$WORK/always.json" '[{"path": "'$S2'", "kind": "not-http", "times": -1}]'
start_hub always --faults "$WORK/always.json"
fetch "$WORK/dl2" --include "$S2" --retries 3
expect_rc 7 "a reply that is never HTTP"
expect_in "$ERR" "the server's reply is not HTTP" "named at the end"
expect_in "$ERR" "gave up after 3 attempts" "given up after the retries"
case "$ERR" in *"scheme other than http"*) fail "a garbled reply called a scheme refusal: $ERR" ;; esac

echo "fetch_garbled_reply_test: ok"
