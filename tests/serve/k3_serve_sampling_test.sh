#!/usr/bin/env bash
# k3-serve's sampling fields give the ids the k3-forward flags of the same
# name give for the same seed (top_k = --top-k, min_p = --min-p,
# repetition_penalty = --repeat-penalty, frequency_penalty, presence_penalty,
# repeat_last_n): the completion's text equals k3-detok of k3-forward's ids.
# top_k 1 and top_k 50000 differ at one seed (they were once both ignored).
# A field k3-serve does not serve is a 400 naming it; a value out of its
# range is a 400 naming the field with the rule the flag states.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
ids=$(tr '\n' ' ' < "$TINY/prompt_ids.txt" | xargs | tr ' ' ',')
text() { python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.stdout.write(j['choices'][0]['text'] + '|' + str(j['usage']['completion_tokens']))" "$1"; }
# forward FLAGS...: k3-forward's 16 ids for the prompt, as text|count.
forward() {
  "$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 16 --threads 2 "$@" > "$work/ids" 2> /dev/null
  printf '%s|%s' "$(k3_detok < "$work/ids")" "$(wc -w < "$work/ids" | tr -d ' ')"
}
k3_detok() { "$BIN/k3-detok" --tok "$TINY"; }

start_server "$work/serve.log" --slots 2 || exit 1
same() {  # same NAME FIELDS FLAGS...
  local name=$1 fields=$2
  shift 2
  post b /v1/completions "{\"prompt\":[$ids],\"max_tokens\":16,$fields}"
  check "$name: status" 200 "$status"
  check "$name: served = k3-forward $*" "$(forward "$@")" "$(text "$b")"
}
same "top_k" '"temperature":0.9,"top_k":3,"seed":11' --temp 0.9 --top-k 3 --seed 11
same "min_p" '"temperature":1.3,"min_p":0.2,"seed":5' --temp 1.3 --min-p 0.2 --seed 5
minp=$(text "$b") nominp=$(forward --temp 1.3 --seed 5)
holds "min_p changes the text at one seed" '[ "$minp" != "$nominp" ]'
# Below 1 and below 0 the penalties favour repeats: greedy text they change.
same "penalties, greedy" '"temperature":0,"repetition_penalty":0.5,"frequency_penalty":-0.5,"presence_penalty":-2,"repeat_last_n":-1' \
  --repeat-penalty 0.5 --frequency-penalty -0.5 --presence-penalty -2 --repeat-last-n -1
penalised=$(text "$b") plain=$(forward)
holds "the penalties change the greedy text" '[ "$penalised" != "$plain" ]'
same "repetition_penalty, last 8" '"repetition_penalty":0.2,"repeat_last_n":8' --repeat-penalty 0.2 --repeat-last-n 8
same "penalties, sampled" '"temperature":0.7,"top_p":0.9,"presence_penalty":-1,"frequency_penalty":2,"seed":3' \
  --temp 0.7 --top-p 0.9 --presence-penalty -1 --frequency-penalty 2 --seed 3

post k1 /v1/completions "{\"prompt\":[$ids],\"max_tokens\":16,\"temperature\":1.5,\"top_k\":1,\"seed\":2}"
post k50000 /v1/completions "{\"prompt\":[$ids],\"max_tokens\":16,\"temperature\":1.5,\"top_k\":50000,\"seed\":2}"
t1=$(text "$k1") t50000=$(text "$k50000")
holds "top_k 1 and top_k 50000 differ at one seed" '[ "$t1" != "$t50000" ]'
check "top_k 1 is greedy" "$(forward)" "$(text "$k1")"

refused() {  # refused NAME BODY EXPECTED-PARAM EXPECTED-TEXT
  post b "$2" "$3"
  check "$1: status" 400 "$status"
  check "$1: param" "$4" "$(jget "$b" 'j["error"]["param"]')"
  contains "$1: message" "$5" "$b"
}
msg='"messages":[{"role":"user","content":"hi"}]'
refused "best_of" /v1/completions "{\"prompt\":[$ids],\"best_of\":2}" best_of "best_of: is not supported"
refused "suffix" /v1/completions "{\"prompt\":\"a\",\"suffix\":\"b\"}" suffix "suffix: is not supported"
refused "an unknown chat field" /v1/chat/completions "{$msg,\"mirostat\":2}" mirostat "mirostat: is not supported"
refused "top_k -1" /v1/chat/completions "{$msg,\"top_k\":-1}" top_k "top_k: must be >= 0 (0 means off) (found -1)"
refused "top_k 1.5" /v1/chat/completions "{$msg,\"top_k\":1.5}" top_k "top_k: must be >= 0"
refused "min_p 2" /v1/chat/completions "{$msg,\"min_p\":2}" min_p "min_p: must be in [0, 1]"
refused "repetition_penalty 0" /v1/chat/completions "{$msg,\"repetition_penalty\":0}" repetition_penalty \
  "repetition_penalty: must be a finite number > 0"
refused "presence_penalty 3" /v1/chat/completions "{$msg,\"presence_penalty\":3}" presence_penalty \
  "presence_penalty: must be in [-2, 2]"
refused "temperature -1" /v1/chat/completions "{$msg,\"temperature\":-1}" temperature "temperature: must be a finite number >= 0"
# docs/serve.md's table of request fields: each field it marks refused is a 400 naming it.
table_refused=$(python3 - "$K3_SOURCE_DIR/docs/serve.md" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 4 and cells[2] == "refused":
        for field in re.findall(r"`([a-z_]+)`", cells[0]):
            print(("chat" if cells[1] == "chat" else "completions"), field)
PY
)
holds "the docs table marks fields refused" '[ "$(wc -l <<< "$table_refused")" -ge 5 ]'
while read -r endpoint field; do
  if [ "$endpoint" = chat ]; then body="{$msg,\"$field\":1}" path=/v1/chat/completions
  else body="{\"prompt\":\"a\",\"$field\":1}" path=/v1/completions; fi
  refused "docs: $field is refused" "$path" "$body" "$field" "$field: "
done <<< "$table_refused"
finish k3_serve_sampling_test
