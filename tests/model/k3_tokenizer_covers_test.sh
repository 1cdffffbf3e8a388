#!/usr/bin/env bash
# A model whose config says more ids (vocab_size) than its own tokenizer
# holds could choose an id with no text: every tool that turns the model's
# ids into text refuses it before any weight is read (exit 3, naming both
# sizes), where it used to crash in the detokenizer; k3-detok refuses an id
# its tokenizer lacks (exit 4). The tiny model with a tokenizer of 8,256 ids
# (8,000 ranks and the 256 specials) beside its config's 8,448.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

m="$work/model"
mkdir -p "$m"
for f in "$TINY"/*; do
  case "$(basename "$f")" in tiktoken.model | tokenizer_config.json) ;; *) ln -s "$f" "$m/" ;; esac
done
head -n 8000 "$TINY/tiktoken.model" > "$m/tiktoken.model"
python3 - "$TINY/tokenizer_config.json" "$m/tokenizer_config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["added_tokens_decoder"] = {str(int(k) - 192): v for k, v in c["added_tokens_decoder"].items()}
json.dump(c, open(sys.argv[2], "w"))
PY
tr -s ' \n' '\n' < "$TINY/prompt_ids.txt" | sed '/^$/d' | head -n 4 > "$work/ids.txt"
sizes="the tokenizer in $m has 8256 ids, fewer than the 8448 of the model in $m (config.json vocab_size)"

TOOL=k3-serve bad "k3-serve" 3 "$sizes" -- timeout 30 "$BIN/k3-serve" "$m" --port 0
TOOL=k3-chat bad "k3-chat" 3 "$sizes" -- "$BIN/k3-chat" "$m" < /dev/null
TOOL=k3-forward bad "k3-forward --stop" 3 "$sizes" -- "$BIN/k3-forward" "$m" --gen 1 --stop x --ids "$work/ids.txt"
# Without --stop k3-forward writes ids, not text: it runs.
check "k3-forward, ids only" 0 "$("$BIN/k3-forward" "$m" --quiet --gen 1 --ids "$work/ids.txt" > /dev/null 2>&1; echo $?)"
TOOL=k3-detok bad "k3-detok, an id the tokenizer lacks" 4 "outside the vocabulary" \
  -- "$BIN/k3-detok" --tok "$m" <<< "8300"
finish k3_tokenizer_covers_test
