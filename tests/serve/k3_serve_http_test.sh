#!/usr/bin/env bash
# k3-serve's HTTP surface against what a web page, a slow client or a hostile
# framing can send, over raw sockets (tests/serve/http_guard_checks.py): Host
# and Origin checks, CORS preflights, JSON-only POSTs; one body limit for
# Content-Length and chunked bodies; bounded headers (431); deadlines and a
# per-peer bound so slow clients do not stop /health (408); pipelined
# requests answered in order; a non-streamed request whose client left frees
# its slot; /tokenize choosing chat or prompt by parsing; NULs kept in error
# messages; requests still queued at SIGTERM answered 503 shutting_down; an
# empty --model-name refused.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

bad "empty --model-name" 2 "--model-name is empty" -- "$BIN/k3-serve" "$TINY" --model-name ''
bad "--cors-origin with a path" 2 "--cors-origin https://a.example/: not an origin" -- \
  "$BIN/k3-serve" "$TINY" --cors-origin https://a.example/
bad "--read-timeout 0" 2 "--read-timeout" -- "$BIN/k3-serve" "$TINY" --read-timeout 0

start_server "$work/server.log" --slots 1 --queue 1 --max-body-mb 0.01 --read-timeout 2 \
  --allowed-hosts box.lan --cors-origin https://app.example || exit 1
probe() {
  python3 "$K3_SOURCE_DIR/tests/serve/http_guard_checks.py" "$port" "$@" > "$work/probe.txt" 2>&1
  grep -v '^passes ' "$work/probe.txt"
  local n
  n=$(sed -n 's/^passes //p' "$work/probe.txt")
  passes=$((passes + ${n:-0}))
  fails=$((fails + $(grep -c '^FAIL' "$work/probe.txt")))
  [ -n "$n" ] || { echo "FAIL probe $*: $(tail -3 "$work/probe.txt")"; fails=$((fails + 1)); }
}
probe hosts origins content_types body_limits header_limits pipelining tokenize nul_in_errors
probe slow_clients
probe disconnect
check "the server still answers" 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/health")"

# SIGTERM: a request still queued is refused 503 shutting_down (not an
# engine error), streamed or not; a streamed one gets no finish_reason
# before its error event.
long='{"prompt":"Hello","max_tokens":4000}'
curl -s --max-time 120 -H 'Content-Type: application/json' -d "$long" "$url/v1/completions" > "$work/a.json" &
a=$!
for _ in $(seq 1 300); do
  [ "$(curl -s --max-time 5 "$url/metrics" | sed -n 's/^k3_slots_busy //p')" = 1 ] && break
  sleep 0.1
done
curl -s --max-time 120 -w '\n%{http_code}' -H 'Content-Type: application/json' \
  -d '{"prompt":"Hi","max_tokens":2}' "$url/v1/completions" > "$work/b.json" &
b=$!
for _ in $(seq 1 300); do
  [ "$(curl -s --max-time 5 "$url/metrics" | sed -n 's/^k3_queue_length //p')" = 1 ] && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$b"
check "queued at SIGTERM: 503" 503 "$(tail -1 "$work/b.json")"
check "queued at SIGTERM: shutting_down" shutting_down "$(jget "$(head -1 "$work/b.json")" 'j["error"]["code"]')"
wait "$a"
check "the running one ends with its text" length "$(jget "$(cat "$work/a.json")" 'j["choices"][0]["finish_reason"]')"
wait "$pid"

start_server "$work/server2.log" --slots 1 --queue 1 || exit 1
curl -sN --max-time 120 -H 'Content-Type: application/json' -d "${long%\}},\"stream\":true}" \
  "$url/v1/completions" > /dev/null &
a=$!
for _ in $(seq 1 300); do
  [ "$(curl -s --max-time 5 "$url/metrics" | sed -n 's/^k3_slots_busy //p')" = 1 ] && break
  sleep 0.1
done
curl -sN --max-time 120 -H 'Content-Type: application/json' -d '{"prompt":"Hi","max_tokens":2,"stream":true}' \
  "$url/v1/completions" > "$work/c.txt" &
c=$!
for _ in $(seq 1 300); do
  [ "$(curl -s --max-time 5 "$url/metrics" | sed -n 's/^k3_queue_length //p')" = 1 ] && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$c"
wait "$a"
contains "queued stream at SIGTERM: shutting_down event" '"code": "shutting_down"' "$(cat "$work/c.txt")"
check "queued stream at SIGTERM: no finish_reason" 0 "$(grep -c '"finish_reason": "' "$work/c.txt")"
contains "queued stream at SIGTERM: ends with [DONE]" "data: [DONE]" "$(tail -c 20 "$work/c.txt")"
finish k3_serve_http_test
