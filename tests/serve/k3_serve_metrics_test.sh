#!/usr/bin/env bash
# k3-serve's request log and /metrics on the tiny model, through the HTTP API:
# one line on stderr per request (method, path, status; for a request that
# generated, its prompt, cached and generated ids, time to first token and
# total) with the ids the reply's usage reports; Prometheus histograms of the
# time to first token and the request duration whose counts, buckets and
# sums agree with the logged times; prompt tokens/s; and bytes read per
# generated id counted over passes that evaluated no prompt ids, so a long
# prompt does not raise it; a long prompt's progress with the time left; and
# no line for a monitor's successful poll of /health or /metrics.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"

# Every weight streamed at every pass (no trunk kept, no expert cache): a
# pass of one decode row reads the trunk and the row's routed experts, the
# same bytes for every id. A prompt progress line after every pass that
# leaves some of a prompt to do.
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
K3_SERVE_PROGRESS_MS=0 start_server "$work/server.log" --slots 1 --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 ||
  exit 1
log="$work/server.log"
metrics() { curl -s --max-time 10 "$url/metrics"; }
metric() { sed -nE "s/^$1 ([0-9.e+-]+)$/\1/p" <<< "$2"; }
# The logger runs once the reply is sent: wait until the line is there (10 s at most).
log_line() {  # log_line REGEX: the last log line matching it
  for _ in $(seq 1 100); do
    grep -Eq -- "$1" "$log" && break
    sleep 0.1
  done
  grep -E -- "$1" "$log" | tail -1
}
chat() {  # chat CONTENT MAX_TOKENS: a greedy non-streamed chat request, body in $body
  post body /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"$1\"}],\"max_tokens\":$2,\"temperature\":0,\"chat_template_kwargs\":{\"thinking\":false}}"
}

# 1. A request that generated: its line and the histograms.
chat "Hello there" 6
check "first request answered" 200 "$status"
prompt=$(jget "$body" 'j["usage"]["prompt_tokens"]')
made=$(jget "$body" 'j["usage"]["completion_tokens"]')
cached=$(jget "$body" 'j["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)')
line=$(log_line '^k3-serve: POST /v1/chat/completions 200 ')
holds "log line: path, status, the usage's ids, times [$line]" \
  "[[ '$line' =~ ^k3-serve:\ POST\ /v1/chat/completions\ 200\ prompt=$prompt\ cached=$cached\ generated=$made\ first_token=[0-9]+\.[0-9]{3}s\ total=[0-9]+\.[0-9]{3}s$ ]]"
first=$(sed -nE 's/.*first_token=([0-9.]+)s.*/\1/p' <<< "$line")
total=$(sed -nE 's/.* total=([0-9.]+)s$/\1/p' <<< "$line")
m=$(metrics)
histograms=$(python3 - "$first" "$total" << PY
import re, sys
text = """$m"""
first, total = float(sys.argv[1]), float(sys.argv[2])
out = []
for name, logged in (("k3_time_to_first_token_seconds", first), ("k3_request_duration_seconds", total)):
    if f"# TYPE {name} histogram" not in text:
        print(f"{name}: not a histogram"); sys.exit()
    buckets = [(b, int(n)) for b, n in re.findall(rf'^{name}_bucket{{le="([^"]+)"}} (\d+)$', text, re.M)]
    count = int(re.search(rf"^{name}_count (\d+)$", text, re.M)[1])
    total_s = float(re.search(rf"^{name}_sum (\S+)$", text, re.M)[1])
    counts = [n for _, n in buckets]
    bounds = [float(b) for b, _ in buckets[:-1]]
    ok = (count == 1 and buckets[-1] == ("+Inf", 1) and counts == sorted(counts) and bounds == sorted(bounds)
          and abs(total_s - logged) <= 0.0006
          # the one observation is in the first bucket whose bound holds it
          and all((n == 1) == (float(b) >= total_s) for b, n in buckets[:-1]))
    out.append(f"{name} {'ok' if ok else 'BAD count=%d sum=%s logged=%s buckets=%s' % (count, total_s, logged, buckets)}")
print("; ".join(out))
PY
)
check "histograms: one observation each, in its bucket, sums as logged" \
  "k3_time_to_first_token_seconds ok; k3_request_duration_seconds ok" "$histograms"
holds "first token before the end ($first <= $total)" "python3 -c 'import sys; sys.exit(not ($first <= $total))'"

# The same request again: its prompt continues from the state the first one
# kept, and the line says how many of its ids were continued.
chat "Hello there" 6
cached=$(jget "$body" 'j["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)')
holds "the repeated request continues from a kept state ($cached ids)" "[ '$cached' -gt 0 ]"
holds "its log line names the continued ids" \
  "grep -Eq '^k3-serve: POST /v1/chat/completions 200 prompt=$prompt cached=$cached generated=[0-9]+ ' '$log'"

# 2. Requests that did not generate: a line each, no ids, no observation.
post body /v1/chat/completions '{"messages": 3}'
check "bad body refused" 400 "$status"
holds "refused request: a line without ids" \
  "[[ '$(log_line '^k3-serve: POST /v1/chat/completions 400')' =~ ^k3-serve:\ POST\ /v1/chat/completions\ 400\ total=[0-9.]+s$ ]]"
curl -s --max-time 10 -o /dev/null "$url/%0Ak3-serve:%20forged"
holds "a path's control bytes cannot forge a line" "! grep -q '^k3-serve: forged' '$log'"
contains "the unknown path is logged on one line" 'k3-serve: GET /?k3-serve: forged 404' "$(log_line '^k3-serve: GET /.k3-serve')"
check "refused requests are not timed" 2 "$(metric k3_request_duration_seconds_count "$(metrics)")"

# 3. Bytes per generated id, decode passes only: a prompt 40 times longer
# reads more in all, the same per id generated after it (within 1%: the
# routed experts differ by id; counting the prompt's passes too, as before,
# made it 38% more).
m0=$(metrics)
chat "Hello" 8
long=$(python3 -c 'print(" ".join(["the quick brown fox jumps over the lazy dog"] * 40))')  # over one pass's 256 rows
m1=$(metrics)
chat "$long" 8
check "long prompt answered" 200 "$status"
m2=$(metrics)
per_id=$(python3 - << PY
import re
def v(text, name): return float(re.search(rf"^{name} (\S+)$", text, re.M)[1])
m0, m1, m2 = """$m0""", """$m1""", """$m2"""
def d(a, b, name): return v(b, name) - v(a, name)
short_total, long_total = d(m0, m1, "k3_bytes_read_total"), d(m1, m2, "k3_bytes_read_total")
short = d(m0, m1, "k3_decode_bytes_read_total") / d(m0, m1, "k3_decode_tokens_total")
longp = d(m1, m2, "k3_decode_bytes_read_total") / d(m1, m2, "k3_decode_tokens_total")
gauge = v(m2, "k3_bytes_read_per_token")
whole = v(m2, "k3_decode_bytes_read_total") / v(m2, "k3_decode_tokens_total")
print("long prompt reads more:", long_total > short_total,
      "| per id the same:", short > 0 and abs(longp - short) <= 0.01 * short,
      "| gauge is decode bytes / decode ids:", abs(gauge - whole) <= 1e-9 * whole,
      "| prompt bytes left out:", v(m2, "k3_decode_bytes_read_total") < v(m2, "k3_bytes_read_total"),
      f"({short:.0f} and {longp:.0f} B/id; {short_total:.0f} and {long_total:.0f} B in all)")
PY
)
contains "decode bytes per id" "long prompt reads more: True | per id the same: True | gauge is decode bytes / decode ids: True | prompt bytes left out: True" "$per_id"
echo "$per_id"

# 4. The long prompt's progress in the log: "prompt DONE / TOTAL, layer I of
# 13, R tokens/s, N s left" (the prompt is one layer-major pass: the layer
# it is at).
long_prompt=$(jget "$body" '"{:,}".format(j["usage"]["prompt_tokens"])')
progress=$(grep -E "^k3-serve: prompt [0-9,]+ / $long_prompt" "$log" | head -1)
holds "prompt progress logged with the layer, rate and time left [$progress]" \
  "[[ '$progress' =~ ^k3-serve:\ prompt\ [0-9,]+\ /\ $long_prompt,\ layer\ [0-9]+\ of\ 13,\ [0-9,]+\ tokens/s,\ [0-9]+\ (s|min)\ left$ ]]"

# 5. Prompt tokens/s: the prompt ids evaluated (not continued) per prefill second.
m=$(metrics)
holds "prompt tokens/s = (prompt - cached) / prefill seconds" "python3 -c '
p, c, s, r = $(metric k3_prompt_tokens_total "$m"), $(metric k3_cached_tokens_total "$m"), $(metric k3_prefill_seconds_total "$m"), $(metric k3_prompt_tokens_per_second "$m")
import sys; sys.exit(not (r > 0 and abs(r - (p - c) / s) <= 1e-9 * r))'"
# 6. A monitor's polls are not logged: successful GETs of /health and
# /metrics (start_server's wait and the figures above made several) write no
# line; a successful GET of another path and a poll by another method do.
curl -s --max-time 10 -o /dev/null "$url/health"
metrics > /dev/null
curl -s --max-time 10 -o /dev/null -X POST "$url/health"
curl -s --max-time 10 -o /dev/null "$url/v1/models"
holds "GET /v1/models is logged" "[ -n '$(log_line '^k3-serve: GET /v1/models 200 total=')' ]"
holds "POST /health is logged" "[ -n '$(log_line '^k3-serve: POST /health [0-9]+ total=')' ]"
check "successful GETs of /health and /metrics are not logged" "" \
  "$(grep -E '^k3-serve: GET /(health|metrics) 200' "$log")"
finish k3_serve_metrics_test
