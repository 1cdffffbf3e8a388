#!/usr/bin/env bash
# k3-serve --draft DIR (the tiny DSpark draft of tests/data/k3-tiny-dspark):
# a greedy and a seeded completion give the same text as without --draft,
# alone (speculated: drafts verified, as /metrics counts) and sent together
# (sharing passes); /metrics counts draft passes, ids proposed, verified and
# accepted; a draft made for another model is refused with exit 3 before
# the server listens.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
ids=$(tr '\n' ' ' < "$TINY/prompt_ids.txt" | xargs | tr ' ' ',')
greedy="{\"prompt\":[$ids],\"max_tokens\":24,\"temperature\":0}"
seeded="{\"prompt\":[$ids],\"max_tokens\":24,\"temperature\":0.9,\"top_p\":0.95,\"seed\":7}"
text() { python3 -c "import json,sys; sys.stdout.write(json.loads(sys.argv[1])['choices'][0]['text'] + '|' + str(json.loads(sys.argv[1])['usage']['completion_tokens']))" "$1"; }
metric() { sed -nE "s/^$1 ([0-9.e+]+)$/\1/p" <<< "$2"; }

start_server "$work/plain.log" --slots 2 || exit 1
post b /v1/completions "$greedy"
check "plain greedy status" 200 "$status"
plain_greedy=$(text "$b")
post b /v1/completions "$seeded"
plain_seeded=$(text "$b")
metrics=$(curl -s --max-time 10 "$url/metrics")
check "no draft: no draft metrics" "" "$(grep k3_draft <<< "$metrics")"
kill "$pid"

start_server "$work/draft.log" --slots 2 --draft "$DRAFT" || exit 1
post b /v1/completions "$greedy"
check "draft greedy status" 200 "$status"
check "greedy: --draft = plain" "$plain_greedy" "$(text "$b")"
post b /v1/completions "$seeded"
check "seeded: --draft = plain" "$plain_seeded" "$(text "$b")"
metrics=$(curl -s --max-time 10 "$url/metrics")
draft_passes=$(metric k3_draft_passes_total "$metrics")  # (check.sh counts its checks in $passes)
holds "draft passes run alone ($draft_passes)" "[ '${draft_passes:-0}' -gt 0 ]"
check "ids proposed = 7 per draft pass" "$((draft_passes * 7))" "$(metric k3_drafts_proposed_total "$metrics")"
verified=$(metric k3_drafts_verified_total "$metrics")
accepted=$(metric k3_drafts_accepted_total "$metrics")
holds "drafts verified ($verified)" "[ '${verified:-0}' -gt 0 ]"
holds "accepted <= verified ($accepted of $verified)" "[ '${accepted:-x}' -le '${verified:-0}' ]"
# Fewer weight passes than ids when drafts were accepted: 2 prompts of 7 ids, 48 ids at most.
wp=$(metric k3_weight_passes_total "$metrics")
gen=$(metric k3_generated_tokens_total "$metrics")
holds "weight passes ($wp) <= generated ids ($gen) + 2 prefills - accepted ($accepted)" \
  "[ '$wp' -le $((gen + 2 - accepted)) ]"

# Both at once: they share passes (no verification there); the same texts.
curl -s --max-time 120 -H 'Content-Type: application/json' -d "$greedy" "$url/v1/completions" > "$work/g.json" &
g=$!
curl -s --max-time 120 -H 'Content-Type: application/json' -d "$seeded" "$url/v1/completions" > "$work/s.json" &
s=$!
wait "$g" "$s"
check "together: greedy = plain" "$plain_greedy" "$(text "$(cat "$work/g.json")")"
check "together: seeded = plain" "$plain_seeded" "$(text "$(cat "$work/s.json")")"
kill "$pid"

# A draft for another model: exit 3, nothing listens.
mkdir -p "$work/other"
ln -s "$DRAFT/model.safetensors" "$work/other/model.safetensors"
python3 -c "import json; c=json.load(open('$DRAFT/config.json')); c['vocab_size']=9000; c['draft_vocab_size']=9000; json.dump(c, open('$work/other/config.json','w'))"
bad "draft for another model" 3 "vocabulary of 9000" -- timeout 60 "$BIN/k3-serve" "$TINY" --port 0 --draft "$work/other"
finish k3_serve_draft_test
