#!/usr/bin/env bash
# k3-serve continues a request from the LONGEST kept state whose ids are a
# prefix of its prompt, in RAM and spilled to --cache-dir. Three greedy
# completions from token ids make two kept states that are both prefixes of
# the third prompt: S1 = P + g1 (the first reply) and S2 = P + g1 + X + g2 (the
# second). The third request's usage.prompt_tokens_details.cached_tokens must
# be |S2|, counted from ids k3-forward generates for the same prompts (not
# from the server); continuing from S1 gives the same text and evaluates the
# second turn again, which only cached_tokens shows. A chat follow-up, whose
# kept states are the first prompt and the end of the reply, is checked the
# same way against the ids /tokenize renders.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

m=5
tr -s ' \n' '\n' < "$TINY/prompt_ids.txt" | sed '/^$/d' > "$work/p.txt"
# gen IN OUT: the greedy ids k3-forward generates after IN's ids (m of them).
gen() { "$BIN/k3-forward" "$TINY" --quiet --gen "$m" --ids "$1" | tr -s ' \n' '\n' | sed '/^$/d' > "$2"; }
gen "$work/p.txt" "$work/g1.txt"
check "first reply: $m ids (no stop id)" "$m" "$(wc -l < "$work/g1.txt")"
printf '7\n8\n9\n' > "$work/x.txt"
cat "$work/p.txt" "$work/g1.txt" "$work/x.txt" > "$work/r2.txt"
gen "$work/r2.txt" "$work/g2.txt"
check "second reply: $m ids (no stop id)" "$m" "$(wc -l < "$work/g2.txt")"
printf '11\n12\n' > "$work/y.txt"
cat "$work/r2.txt" "$work/g2.txt" "$work/y.txt" > "$work/r3.txt"
s1=$(($(wc -l < "$work/p.txt") + m))
s2=$(($(wc -l < "$work/r2.txt") + m))
csv() { paste -sd, "$1"; }

# three_turns LABEL: the three requests against $url; checks each cached count.
three_turns() {
  local label=$1 body
  post body /v1/completions "{\"prompt\":[$(csv "$work/p.txt")],\"max_tokens\":$m,\"temperature\":0}"
  check "$label: first request" "200 0" "$status $(jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
  post body /v1/completions "{\"prompt\":[$(csv "$work/r2.txt")],\"max_tokens\":$m,\"temperature\":0}"
  check "$label: second request continues from S1" "200 $s1" \
    "$status $(jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
  post body /v1/completions "{\"prompt\":[$(csv "$work/r3.txt")],\"max_tokens\":$m,\"temperature\":0}"
  check "$label: third request continues from the longest kept state S2, not S1 ($s1)" "200 $s2" \
    "$status $(jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
}

start_server "$work/ram.log" --slots 1 || exit 1
three_turns "in RAM"
mkdir -p "$work/cache"
start_server "$work/spill.log" --slots 1 --cache-dir "$work/cache" --keep-mb 0 || exit 1
three_turns "spilled"
holds "spilled: the states were files in --cache-dir" "ls '$work/cache' | grep -q '\.k3state$'"

# Chat: the first turn keeps its prompt (P1) and the end of its reply (P1 +
# the reply's ids); the follow-up renders the reply back. Its cached count is
# the longer of the two that is a prefix of the follow-up's ids. (The tiny
# model's random weights write gibberish; this prompt's reply is valid UTF-8
# that re-tokenizes to the ids generated, so both states are prefixes.)
start_server "$work/chat.log" --slots 1 || exit 1
first='"messages":[{"role":"user","content":"What is 2+2?"}],"chat_template_kwargs":{"thinking":false}'
post tok /tokenize "{$first}"
p1=$(jget "$tok" '" ".join(map(str, j["tokens"]))')
post body /v1/chat/completions "{$first,\"max_tokens\":$m,\"temperature\":0}"
check "chat: first turn" 200 "$status"
check "chat: cut by max_tokens" length "$(jget "$body" 'j["choices"][0]["finish_reason"]')"
tr ' ' '\n' <<< "$p1" > "$work/c1.txt"
gen "$work/c1.txt" "$work/cg.txt"
reply=$(jget "$body" 'json.dumps(j["choices"][0]["message"]["content"])')
follow="\"messages\":[{\"role\":\"user\",\"content\":\"What is 2+2?\"},{\"role\":\"assistant\",\"content\":$reply},{\"role\":\"user\",\"content\":\"Another.\"}],\"chat_template_kwargs\":{\"thinking\":false}"
post tok2 /tokenize "{$follow}"
f=$(jget "$tok2" '" ".join(map(str, j["tokens"]))')
expected=$(python3 - "$p1" "$(tr '\n' ' ' < "$work/cg.txt")" "$f" <<'PY'
import sys
p1, gen, f = (s.split() for s in sys.argv[1:4])
kept = [p1, p1 + gen]  # the prompt's end and the reply's end
print(max(len(k) for k in kept if f[:len(k)] == k))
PY
)
n1=$(wc -l < "$work/c1.txt")
holds "chat: the reply's state is a prefix of the follow-up ($expected > $n1 ids)" "[ '$expected' -gt '$n1' ]"
post body /v1/chat/completions "{$follow,\"max_tokens\":2,\"temperature\":0}"
check "chat: follow-up continues from the longest kept state" "200 $expected" \
  "$status $(jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
finish k3_serve_longest_prefix_test
