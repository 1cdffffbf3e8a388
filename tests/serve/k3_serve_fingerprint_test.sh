#!/usr/bin/env bash
# k3-serve reads no checkpoint shard whole at start-up: on a copy of the tiny
# model that no download manifest vouches for, the weights' fingerprint (a
# pass over every shard, 1.56 TB at K3 size) is taken only when spilled
# states need it (--cache-dir), and then /health and stderr say it is
# being taken and how far it is. The shard digest cache (XDG_CACHE_HOME)
# records every shard the fingerprint read.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "$K3_SOURCE_DIR/tests/serve/serve_lib.sh"
cp -r "$TINY" "$work/model"
TINY=$work/model
export XDG_CACHE_HOME=$work/xdg
digests=$XDG_CACHE_HOME/k3/shard-digests

start_server "$work/plain.log" || exit 1
post body /v1/completions '{"prompt": [1, 2, 3], "max_tokens": 2}'
check "serves without --cache-dir" 200 "$status"
holds "no shard was read whole to start (no digest recorded)" "[ ! -e '$digests' ]"
holds "nothing said about a fingerprint" "! grep -q fingerprint '$work/plain.log'"
kill -9 "$pid"

# With --cache-dir the fingerprint is taken, and said (each report held 300 ms).
mkdir "$work/spill"
K3_PROGRESS=tty K3_SERVE_LOAD_DELAY_MS=300 "$BIN/k3-serve" "$TINY" --port 0 --cache-dir "$work/spill" \
  2> "$work/spill.log" &
pid=$!
server_pids+=("$pid")
steps=""
for _ in $(seq 1 600); do
  port=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+)/v1.*|\1|p' "$work/spill.log" | head -1)
  if [ -n "$port" ]; then
    b=$(curl -s --max-time 5 "http://127.0.0.1:$port/health")
    [[ "$b" == *'"status": "ok"'* ]] && break
    steps+=$(jget "$b" 'j.get("step", "")' 2> /dev/null)$'\n'
  fi
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.05
done
contains "/health says the fingerprint is being taken" "fingerprinting the checkpoint" "$steps"
contains "stderr says it too, with how far it is" "k3-serve: fingerprinting the checkpoint" \
  "$(tr '\r' '\n' < "$work/spill.log")"
holds "the shards it read are recorded" "[ -s '$digests' ]"
check "one digest per shard" 5 "$(grep -cE " [0-9a-f]{32}$" "$digests" 2> /dev/null || echo 0)"
finish k3_serve_fingerprint_test
