#!/usr/bin/env bash
# k3-serve --gpu on Mesa's lavapipe (fma emulated), validation layer on: a
# chat request whose prompt is several hundred ids (passes of up to 256
# prompt rows, at least Model::kDevicePassPromptRows of them: the device
# runs their products) gets the same text, ids and logprobs as from a
# server on the CPU; the server's last lines count the products that ran on
# the device. A short request (fewer prompt rows than that) and its decode
# passes stay on the CPU: no product on the device. A second, different
# conversation in the same slot after the first gets the CPU's logprobs too.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "$K3_SOURCE_DIR/tests/serve/serve_lib.sh"
export K3_GPU_VALIDATION=1
lvp=$(vulkaninfo --summary 2> /dev/null | awk '/^GPU[0-9]+:/ { i = substr($1, 4) + 0 } /deviceName.*llvmpipe/ { print i; exit }')
holds "lavapipe is installed (mesa-vulkan-drivers)" "[ -n '$lvp' ]"
lvp=${lvp:-0}

long=$(python3 -c "print(' '.join('item %d of the list, number %d' % (i, i * 7) for i in range(60)))")
body=$(python3 -c "import json,sys; print(json.dumps({'messages': [{'role': 'user', 'content': sys.argv[1]}],
  'max_tokens': 5, 'temperature': 0, 'logprobs': True, 'top_logprobs': 3}))" "$long")
short='{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5, "temperature": 0}'
# Another conversation after it in the same slot (one pass of about a
# hundred prompt rows, on the device): none of the first one's latent rows
# the device kept may leak into it. Its system prompt's end is kept
# (--system-keep-min) inside that pass: the pass runs each layer in two
# pieces, the KDA states kept on the device across them and synced for the
# capture between; a third conversation with the same system prompt
# continues from that state.
system="You are a careful assistant of a travel agency. Answer briefly and politely."
other=$(python3 -c "import json,sys; print(json.dumps({'messages': [{'role': 'system', 'content': sys.argv[1]},
  {'role': 'user', 'content': ' '.join('entry %d reads %d' % (i, i * 13) for i in range(20))}], 'max_tokens': 5,
  'temperature': 0, 'logprobs': True}))" "$system")
third=$(python3 -c "import json,sys; print(json.dumps({'messages': [{'role': 'system', 'content': sys.argv[1]},
  {'role': 'user', 'content': 'Book me a train to Lyon.'}], 'max_tokens': 5, 'temperature': 0,
  'logprobs': True}))" "$system")
ask() {  # ask NAME BODY [SECOND [THIRD]] FLAGS...: a server with FLAGS answers BODY (and the others), then stops
  local name=$1 request=$2 later=(); shift 2
  while [ $# -gt 0 ] && [ "$1" != "${1#\{}" ]; do later+=("$1"); shift; done
  start_server "$work/$name.log" --slots 1 --system-keep-min 16 "$@" || return 1
  post reply /v1/chat/completions "$request"
  check "$name: status" 200 "$status"
  printf '%s' "$reply" > "$work/$name.json"
  local k=0 what
  for body_k in "${later[@]}"; do
    what=$([ $k -eq 0 ] && echo second || echo third)
    post reply /v1/chat/completions "$body_k"
    check "$name: the $what conversation's status" 200 "$status"
    printf '%s' "$reply" > "$work/$name-$what.json"
    k=$((k + 1))
  done
  kill -TERM "$pid"
  wait "$pid"
  check "$name: exit after SIGTERM" 130 "$?"
}
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps($2, sort_keys=True))" "$work/$1.json"; }

ask cpu "$body" "$other" "$third"
ask gpu "$body" "$other" "$third" --gpu "$lvp"
ask gpu-short "$short" --gpu "$lvp"
prompt=$(field cpu 'j["usage"]["prompt_tokens"]')
holds "the prompt is more than a pass ($prompt ids > 256)" "[ '${prompt:-0}' -gt 256 ]"
check "the same reply text" "$(field cpu 'j["choices"][0]["message"]')" "$(field gpu 'j["choices"][0]["message"]')"
check "the same logprobs, every id and its top 3" "$(field cpu 'j["choices"][0]["logprobs"]')" \
  "$(field gpu 'j["choices"][0]["logprobs"]')"
prompt=$(field cpu-second 'j["usage"]["prompt_tokens"]')
holds "the second conversation is one device pass ($prompt ids)" "[ '${prompt:-0}' -ge 64 ] && [ '${prompt:-0}' -le 256 ]"
check "the second conversation in the slot: the same logprobs" "$(field cpu-second 'j["choices"][0]["logprobs"]')" \
  "$(field gpu-second 'j["choices"][0]["logprobs"]')"
holds "the third conversation continued from the system prompt kept inside the second's pass" \
  "[ '$(field gpu-third 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')' -gt 16 ]"
check "the third conversation, from the kept state: the same logprobs" \
  "$(field cpu-third 'j["choices"][0]["logprobs"]')" "$(field gpu-third 'j["choices"][0]["logprobs"]')"
holds "logprobs were returned" "[ '$(field gpu 'len(j["choices"][0]["logprobs"]["content"])')' -gt 0 ]"
holds "the device ran products" "grep -Eq 'gpu $lvp \\(.*\\): [1-9][0-9]* matrix products' '$work/gpu.log'"
holds "a short prompt and decode: no product on the device" "grep -Eq 'gpu $lvp \\(.*\\): 0 matrix products' '$work/gpu-short.log'"
holds "the CPU server had no device" "! grep -q 'matrix products' '$work/cpu.log'"
holds "no validation errors" "! grep -q 'vulkan validation' '$work/gpu.log'"
finish k3_serve_gpu_test
