#!/usr/bin/env bash
# k3-serve under load, all streaming, on a generated checkpoint with its trunk
# streamed: 1, 4 and 16 concurrent clients (one slot each), then an
# agent-style follow-up turn against a cold prefill of the same conversation.
# Prints per client count: aggregate generated tokens per second, weight
# bytes read per generated token (from /metrics), p50/p95 time to first
# token, weight passes (and those that carried prompt ids) and bytes read per
# pass; then the follow-up's TTFT, the cold TTFT and their ratio. Goals
# (issue: k3-serve): at 16 clients bytes per token <= 1/4 of one client's; a
# follow-up's TTFT <= 1/4 of cold. A benchmark, not a test. Loopback only.
#
# Usage: bench/serve_bench.sh [BUILD_BIN_DIR] [MODEL_DIR]
#   default model: k3-synth --preset bench --layers 4 --experts 16 (~450 MB)
#   in a temporary directory, packed with k3-pack; K3_SERVE_BENCH_TOKENS
#   (default 24) tokens per request; K3_SERVE_BENCH_FLAGS the budget flags
#   (default "--trunk-gb 0.05 --cache-gb 0.1": streamed trunk and experts).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:-$here/../build/bin}" && pwd)
model=${2:-}
tokens=${K3_SERVE_BENCH_TOKENS:-24}
flags=${K3_SERVE_BENCH_FLAGS:---trunk-gb 0.05 --cache-gb 0.1}
work=$(mktemp -d /tmp/k3-servebench.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
if [ -z "$model" ]; then
  model="$work/model"
  "$bin/k3-synth" "$model" --preset bench --layers 4 --experts 16 --seed 1 > /dev/null 2>&1
fi
[ -f "$model/trunk/trunk.json" ] || [ -f "$work/trunk/trunk.json" ] || "$bin/k3-pack" "$model" "$work/trunk" > /dev/null 2>&1
trunk="$work/trunk"; [ -f "$model/trunk/trunk.json" ] && trunk="$model/trunk"

start() {  # start SLOTS: k3-serve on a free loopback port; sets $server and $url
  # shellcheck disable=SC2086
  "$bin/k3-serve" "$model" --trunk "$trunk" $flags --host 127.0.0.1 --port 0 --slots "$1" --queue 64 \
    2> "$work/server.log" &
  server=$!
  for _ in $(seq 1 3000); do
    port=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+)/v1.*|\1|p' "$work/server.log" | head -1)
    if [ -n "$port" ] && curl -sf --max-time 5 "http://127.0.0.1:$port/health" > /dev/null; then
      url="http://127.0.0.1:$port"; return 0
    fi
    kill -0 "$server" 2> /dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "serve_bench: k3-serve did not become ready" >&2; exit 1
}
stop() { kill "$server"; wait "$server" 2> /dev/null || true; server=""; }

# clients URL N TOKENS [MODE]: N concurrent streaming chat requests; prints
# "tokens seconds ttft_p50 ttft_p95"; MODE followup: one conversation's
# turn 1, then its turn 2, printing turn 2's TTFT.
cat > "$work/clients.py" <<'PY'
import http.client, json, sys, threading, time
url, n, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "load"
host, port = url.split("//")[1].split(":")
def stream(messages, out):
    c = http.client.HTTPConnection(host, int(port), timeout=3600)
    body = {"messages": messages, "max_tokens": tokens, "stream": True, "stream_options": {"include_usage": True},
            "chat_template_kwargs": {"thinking": False}}
    t0 = time.monotonic(); first = None; count = 0; text = ""
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]": continue
        j = json.loads(line[6:])
        if j.get("usage"): count = j["usage"]["completion_tokens"]
        if j["choices"] and j["choices"][0]["delta"].get("content"):
            if first is None: first = time.monotonic() - t0  # the first token's text
            text += j["choices"][0]["delta"]["content"]
    out.append((count, first if first is not None else time.monotonic() - t0, text))
story = " ".join("Paragraph %d: the lighthouse keeper climbed the stairs every evening to light the lamp." % i for i in range(24))
if mode == "followup":
    turn1 = [{"role": "user", "content": story + " Summarise."}]
    out = []; stream(turn1, out)
    turn2 = turn1 + [{"role": "assistant", "content": out[0][2]}, {"role": "user", "content": "Shorter, please."}]
    json.dump(turn2, open(sys.argv[5], "w"))
    out2 = []; stream(turn2, out2)
    print("%.3f" % out2[0][1]); sys.exit(0)
if mode == "cold":
    out = []; stream(json.load(open(sys.argv[5])), out); print("%.3f" % out[0][1]); sys.exit(0)
results = []; threads = []
t0 = time.monotonic()
for i in range(n):
    msgs = [{"role": "user", "content": "Client %d asks: what does the lighthouse keeper do each evening? %s" % (i, story[:200])}]
    th = threading.Thread(target=stream, args=(msgs, results)); th.start(); threads.append(th)
for th in threads: th.join()
wall = time.monotonic() - t0
ttft = sorted(r[1] for r in results)
def pct(p): return ttft[min(len(ttft) - 1, int(round(p * (len(ttft) - 1))))]
print(sum(r[0] for r in results), "%.3f" % wall, "%.3f" % pct(0.5), "%.3f" % pct(0.95))
PY
metric() { curl -s --max-time 10 "$url/metrics" | sed -nE "s/^$1 ([0-9.e+]+)$/\1/p"; }

echo "k3-serve bench on $(basename "$model") ($flags; $tokens tokens per request; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
printf '%8s %8s %10s %14s %10s %10s %8s %8s %14s\n' clients tokens "tokens/s" "bytes/token" "TTFT p50" "TTFT p95" \
  passes prefill "bytes/pass"
for n in 1 4 16; do
  start "$n"
  read -r made secs p50 p95 <<< "$(python3 "$work/clients.py" "$url" "$n" "$tokens")"
  bytes=$(metric k3_bytes_read_total); gen=$(metric k3_generated_tokens_total)
  passes=$(metric k3_weight_passes_total); prefill=$(metric k3_prefill_passes_total)
  stop
  awk -v n="$n" -v t="$made" -v s="$secs" -v b="$bytes" -v g="$gen" -v p="$p50" -v q="$p95" -v w="$passes" \
    -v f="$prefill" 'BEGIN { printf "%8d %8d %10.2f %14.0f %9.2fs %9.2fs %8d %8d %14.0f\n", n, t, t / s, b / g, p, q, w, f, b / w }'
done
start 1
warm=$(python3 "$work/clients.py" "$url" 1 "$tokens" followup "$work/turn2.json")
stop
start 1
cold=$(python3 "$work/clients.py" "$url" 1 "$tokens" cold "$work/turn2.json")
stop
awk -v w="$warm" -v c="$cold" 'BEGIN { printf "follow-up turn TTFT %.2f s (state kept) vs %.2f s cold: %.2fx\n", w, c, w / c }'
