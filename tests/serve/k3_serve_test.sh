#!/usr/bin/env bash
# k3-serve over HTTP on the tiny model (loopback only): /health, /v1/models,
# completions equal to k3-forward + k3-detok for the same ids, chat with the
# prompt k3-tokenize --chat renders, a follow-up turn continuing from the
# kept state (cached_tokens), state files spilled to --cache-dir, /metrics,
# and the refusals: flags (non-loopback without a key), API keys (401),
# malformed and hostile bodies (400, 404, 413, deep nesting), a full queue
# (429 with Retry-After); and SIGTERM ending a stream cleanly.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

# Flags refused before anything loads.
bad "non-loopback host without a key" 2 "--host 0.0.0.0 is reachable from other machines" -- \
  "$BIN/k3-serve" "$TINY" --host 0.0.0.0
bad "empty key" 2 "the API key is empty" -- "$BIN/k3-serve" "$TINY" --api-key ""
bad "--slots 0" 2 "--slots: 0 is out of range (valid: from 1 to 256)" -- "$BIN/k3-serve" "$TINY" --slots 0
bad "missing cache dir" 2 "--cache-dir $work/none: not a directory" -- "$BIN/k3-serve" "$TINY" --cache-dir "$work/none"

mkdir -p "$work/cache"
start_server "$work/server.log" --slots 2 --cache-dir "$work/cache" --keep-mb 0 --max-body-mb 0.02 || exit 1
check "health" '{"status": "ok"}' "$(curl -s --max-time 10 "$url/health")"
# A second server on the taken port is refused (no SO_REUSEPORT sharing it).
bad "taken port" 2 "cannot listen on 127.0.0.1:$port" -- timeout 30 "$BIN/k3-serve" "$TINY" --port "$port"
models=$(curl -s --max-time 10 "$url/v1/models")
check "model id is the directory name" "k3-tiny" "$(jget "$models" 'j["data"][0]["id"]')"

# Completions from token ids: greedy equals k3-forward + k3-detok.
ids=$(tr '\n' ' ' < "$TINY/prompt_ids.txt" | xargs | tr ' ' ',')
"$BIN/k3-forward" "$TINY" --quiet --gen 12 --ids "$TINY/prompt_ids.txt" > "$work/gen.txt"
eos=$(python3 -c "import json; c=json.load(open('$TINY/config.json')); e=c.get('eos_token_id'); print(' '.join(map(str, e if isinstance(e, list) else [e])))")
python3 - "$work/gen.txt" "$eos" <<'PY'  # the stop id that ended the run is not part of the text
import sys
ids = open(sys.argv[1]).read().split()
if ids and ids[-1] in sys.argv[2].split(): ids.pop()
open(sys.argv[1], "w").write("\n".join(ids) + "\n")
PY
expected=$("$BIN/k3-detok" --tok "$TINY" < "$work/gen.txt"; echo x)
post body /v1/completions "{\"model\":\"k3-tiny\",\"prompt\":[$ids],\"max_tokens\":12,\"temperature\":0}"
check "completion status" 200 "$status"
got=$(python3 -c "import json,sys; sys.stdout.write(json.loads(sys.argv[1])['choices'][0]['text'])" "$body"; echo x)
check "completion text equals k3-forward + k3-detok" "${expected%x}" "${got%x}"
check "completion usage" "$(wc -w < "$TINY/prompt_ids.txt")" "$(jget "$body" 'j["usage"]["prompt_tokens"]')"
# Streamed: the chunks' text concatenates to the same.
stream=$(curl -sN --max-time 120 -H 'Content-Type: application/json' \
  -d "{\"prompt\":[$ids],\"max_tokens\":12,\"stream\":true}" "$url/v1/completions")
joined=$(python3 -c "
import json,sys
text=''
for line in sys.stdin.read().split('\n\n'):
    line = line.strip()
    if line.startswith('data: ') and line != 'data: [DONE]':
        text += json.loads(line[6:])['choices'][0]['text']
sys.stdout.write(text)" <<< "$stream"; echo x)
check "streamed completion equals non-streamed" "${got%x}" "${joined%x}"
contains "stream ends with [DONE]" "data: [DONE]" "$stream"

# Chat: the prompt is what k3-tokenize --chat renders (K3's own name for the
# thinking switch there, vLLM's chat_template_kwargs here).
messages='"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is 2+2?"}]'
chat="{$messages,\"chat_template_kwargs\":{\"thinking\":false}}"
native="{$messages,\"thinking\":false}"
n=$(echo "$native" | "$BIN/k3-tokenize" --tok "$TINY" --chat --count)
post tok /tokenize "$chat"
check "/tokenize count" "$n" "$(jget "$tok" 'j["count"]')"
check "/tokenize ids equal k3-tokenize --chat" "$(echo "$native" | "$BIN/k3-tokenize" --tok "$TINY" --chat | xargs)" \
  "$(jget "$tok" '" ".join(map(str, j["tokens"]))')"
post body /v1/chat/completions "${chat%\}},\"max_tokens\":6}"
check "chat status" 200 "$status"
check "chat prompt tokens" "$n" "$(jget "$body" 'j["usage"]["prompt_tokens"]')"
check "chat object" "chat.completion assistant" "$(jget "$body" 'j["object"] + " " + j["choices"][0]["message"]["role"]')"
check "thinking off: no reasoning_content" False "$(jget "$body" '"reasoning_content" in j["choices"][0]["message"]')"
check "cut by max_tokens" length "$(jget "$body" 'j["choices"][0]["finish_reason"]')"
check "first turn: nothing cached" 0 "$(jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
# The follow-up turn, as an agent sends it: the reply, then a new message.
reply=$(jget "$body" 'json.dumps(j["choices"][0]["message"]["content"])')
follow="{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"What is 2+2?\"},{\"role\":\"assistant\",\"content\":$reply},{\"role\":\"user\",\"content\":\"And 3+3?\"}],\"chat_template_kwargs\":{\"thinking\":false},\"max_tokens\":4}"
post body2 /v1/chat/completions "$follow"
check "follow-up status" 200 "$status"
cached=$(jget "$body2" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')
holds "follow-up continues from the kept prompt ($cached >= $n cached ids)" "[ '${cached:-0}' -ge '$n' ]"
holds "kept states were spilled to --cache-dir" "ls '$work/cache' | grep -q '\.k3state$'"
# Same follow-up on a fresh server: identical reply (reuse changes nothing but time).
start_server "$work/server2.log" --slots 1 || exit 1
url2=$url
post body3 /v1/chat/completions "$follow"
check "reused state gives the fresh run's reply" "$(jget "$body2" 'j["choices"][0]["message"]["content"]')" \
  "$(jget "$body3" 'j["choices"][0]["message"]["content"]')"
check "fresh server: nothing cached" 0 "$(jget "$body3" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"

# Hostile and malformed requests: OpenAI-shaped errors, the server keeps serving.
url=$(sed -nE 's|.*listening on (http://127\.0\.0\.1:[0-9]+)/v1.*|\1|p' "$work/server.log" | head -1)
err() { jget "$1" 'j["error"]["type"] + ": " + j["error"]["message"]'; }
post b /v1/chat/completions '{"messages": ['
check "malformed JSON" 400 "$status"
contains "malformed JSON message" "invalid_request_error: request body: not valid JSON" "$(err "$b")"
post b /v1/chat/completions '{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}'
check "unknown model" 404 "$status"
contains "unknown model message" 'model: "gpt-4o" is not served here' "$(err "$b")"
post b /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}'
check "max_tokens out of range" 400 "$status"
check "param" max_tokens "$(jget "$b" 'j["error"]["param"]')"
post b /v1/chat/completions '{"messages":[{"role":"user","content":7}]}'
check "wrong type" 400 "$status"
contains "wrong type names the field" "messages[0].content: must be a string" "$(err "$b")"
post b /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"x\":$(printf '[%.0s' $(seq 100))$(printf ']%.0s' $(seq 100))}"
check "deep nesting" 400 "$status"
contains "deep nesting message" "nested deeper than 64 levels" "$(err "$b")"
python3 -c "print('{\"prompt\": \"' + 'a' * 30000 + '\"}')" > "$work/big.json"
b=$(curl -s --max-time 30 -w '\n%{http_code}' -H 'Content-Type: application/json' --data-binary "@$work/big.json" "$url/v1/completions")
check "body over the limit" 413 "${b##*$'\n'}"
contains "413 is OpenAI-shaped" "over the limit of 20000 bytes" "${b%$'\n'*}"
post b /v1/completions "{\"prompt\":[$(python3 -c "print(','.join(['5'] * 9000))")]}"
check "prompt over the context" 400 "$status"
check "context code" context_length_exceeded "$(jget "$b" 'j["error"]["code"]')"
post b /v1/completions '{"prompt":[999999999]}'
check "id outside the vocabulary" 400 "$status"
b=$(curl -s --max-time 10 -w '\n%{http_code}' "$url/v1/nothing")
check "unknown path" 404 "${b##*$'\n'}"
check "still serving" '{"status": "ok"}' "$(curl -s --max-time 10 "$url/health")"

metrics=$(curl -s --max-time 10 "$url/metrics")
contains "metrics: requests by status" 'k3_requests_total{endpoint="/v1/chat/completions",status="400"}' "$metrics"
holds "metrics: tokens generated" "[ \"\$(sed -nE 's/^k3_generated_tokens_total ([0-9]+)$/\1/p' <<< \"\$metrics\")\" -gt 0 ]"
contains "metrics: cached tokens" "k3_cached_tokens_total" "$metrics"
contains "metrics: slots" "k3_slots_busy" "$metrics"

# API keys: every endpoint but /health; 401 is OpenAI-shaped.
echo "s3cret-key" > "$work/key"
start_server "$work/server3.log" --api-key-file "$work/key" --slots 1 --queue 0 || exit 1
check "health needs no key" 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/health")"
check "no key" 401 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/v1/models")"
b=$(curl -s --max-time 10 -H 'Authorization: Bearer wrong' "$url/v1/models")
check "wrong key" authentication_error "$(jget "$b" 'j["error"]["type"]')"
check "right key" 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Authorization: Bearer s3cret-key' "$url/v1/models")"

# A full queue: 429 with Retry-After while the one slot streams.
curl -sN --max-time 120 -H 'Authorization: Bearer s3cret-key' -H 'Content-Type: application/json' \
  -d '{"prompt":"Hello","max_tokens":4000,"stream":true}' "$url/v1/completions" > "$work/long.txt" &
long=$!
for _ in $(seq 1 300); do grep -q '"text"' "$work/long.txt" 2> /dev/null && break; sleep 0.1; done
curl -s -D "$work/h429" --max-time 30 -H 'Authorization: Bearer s3cret-key' -H 'Content-Type: application/json' \
  -d '{"prompt":"Hi","max_tokens":2}' "$url/v1/completions" > "$work/b429"
check "queue full" 429 "$(sed -nE 's|^HTTP/[0-9.]+ ([0-9]+).*|\1|p' "$work/h429" | head -1)"
contains "Retry-After" "Retry-After: 2" "$(cat "$work/h429")"
# SIGTERM: the stream in flight ends cleanly ([DONE]); the server exits 130.
kill -TERM "$pid"
wait "$long"
tail_events=$(tail -c 600 "$work/long.txt")
contains "stream finished on SIGTERM" '"finish_reason": "length"' "$tail_events"
contains "stream ended with [DONE]" "data: [DONE]" "$tail_events"
for _ in $(seq 1 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
wait "$pid"
check "exit status after SIGTERM" 130 "$?"
contains "stop reported" "k3-serve: stopping (signal 15)" "$(cat "$work/server3.log")"
finish k3_serve_test
