#!/usr/bin/env bash
# API keys no client could send are refused at start (exit 2, before the
# model loads): spaces or tabs around them, control characters, an empty or
# oversized one; --api-key-file reads only a small regular file (/dev/zero,
# a FIFO, a large file are refused at once, never read forever), takes a key
# with or without its line end, and the key it read then works. The seed has
# one range, 0 to 2^63-1, in every tool and the API: outside it refused,
# never wrapped or saturated; the largest seed gives the same ids through
# k3-forward and k3-serve.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

bad "--api-key ' k '" 2 "--api-key: the API key has spaces around it" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key ' k '
bad "--api-key 'k '" 2 "spaces around it" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key 'k '
bad "--api-key tab" 2 "spaces around it" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key $'\tk'
bad "--api-key control" 2 "control character at byte 1" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key $'k\x01k'
bad "--api-key empty" 2 "the API key is empty" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key ''
bad "--api-key 5000 bytes" 2 "more than 4096" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key "$(head -c 5000 /dev/zero | tr '\0' k)"
bad "--api-key-file /dev/zero" 2 "--api-key-file /dev/zero is not a regular file" -- \
  timeout 20 "$BIN/k3-serve" "$TINY" --api-key-file /dev/zero
mkfifo "$work/fifo"
bad "--api-key-file FIFO" 2 "is not a regular file" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key-file "$work/fifo"
head -c 100000 /dev/zero | tr '\0' k > "$work/big"
bad "--api-key-file large, no newline" 2 "is 100000 bytes, more than a key's 4096" -- \
  timeout 20 "$BIN/k3-serve" "$TINY" --api-key-file "$work/big"
printf ' k\n' > "$work/spaced"
bad "--api-key-file ' k'" 2 "spaces around it" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key-file "$work/spaced"
printf '\n' > "$work/blank"
bad "--api-key-file blank line" 2 "the API key is empty" -- timeout 20 "$BIN/k3-serve" "$TINY" --api-key-file "$work/blank"

# Seeds outside 0..2^63-1 are refused by every tool, before anything loads.
for seed in -1 18446744073709551615 18446744073709551616 99999999999999999999999 9223372036854775808 1e3 0x10 ''; do
  TOOL=k3-forward bad "k3-forward --seed '$seed'" 2 "--seed" -- "$BIN/k3-forward" "$TINY" --seed "$seed" < /dev/null
  TOOL=k3-chat bad "k3-chat --seed '$seed'" 2 "--seed" -- "$BIN/k3-chat" "$TINY" --seed "$seed" < /dev/null
  TOOL=k3-synth bad "k3-synth --seed '$seed'" 2 "--seed" -- "$BIN/k3-synth" "$work/synth" --seed "$seed"
done
TOOL=k3-forward bad "k3-forward --seed 2^63 names the range" 2 "valid: an integer from 0 to 9223372036854775807" -- \
  "$BIN/k3-forward" "$TINY" --seed 9223372036854775808 < /dev/null

# A key file without a line end is taken whole; the key works.
printf 's3cret' > "$work/key"
start_server "$work/server.log" --api-key-file "$work/key" --slots 1 || exit 1
check "key without a line end: accepted" 200 \
  "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Authorization: Bearer s3cret' "$url/v1/models")"

# The largest seed: the server's ids are k3-forward's. One past it: 400.
max=9223372036854775807
ids=$(tr '\n' ' ' < "$TINY/prompt_ids.txt" | xargs | tr ' ' ',')
"$BIN/k3-forward" "$TINY" --quiet --gen 8 --temp 0.9 --seed $max --ids "$TINY/prompt_ids.txt" > "$work/gen.ids"
check "k3-forward --seed 2^63-1" 0 "$?"
eos=$(python3 -c "import json; c=json.load(open('$TINY/config.json')); e=c.get('eos_token_id'); print(' '.join(map(str, e if isinstance(e, list) else [e])))")
python3 - "$work/gen.ids" "$eos" << 'PY' # the stop id that ended the run is not part of the text
import sys
ids = open(sys.argv[1]).read().split()
if ids and ids[-1] in sys.argv[2].split(): ids.pop()
open(sys.argv[1], "w").write("\n".join(ids) + "\n")
PY
expected=$("$BIN/k3-detok" --tok "$TINY" < "$work/gen.ids"; echo x)
post body /v1/completions "{\"prompt\":[$ids],\"max_tokens\":8,\"temperature\":0.9,\"seed\":$max}" \
  -H 'Authorization: Bearer s3cret'
check "API seed 2^63-1" 200 "$status"
got=$(python3 -c "import json,sys; sys.stdout.write(json.loads(sys.argv[1])['choices'][0]['text'])" "$body"; echo x)
check "the largest seed: the server's text is k3-forward's" "${expected%x}" "${got%x}"
for seed in 9223372036854775808 -1 18446744073709551616; do
  post body /v1/completions "{\"prompt\":[$ids],\"max_tokens\":2,\"seed\":$seed}" -H 'Authorization: Bearer s3cret'
  check "API seed $seed refused" 400 "$status"
  contains "API seed $seed: the range" "9223372036854775807" "$body"
done

finish k3_serve_key_seed_test
