#!/usr/bin/env bash
# A run may not span more positions than the model's max_position_embeddings
# (config.json): the prompt, a saved state and --gen together, or --ctx,
# beyond it are refused before any weight is read (exit 2, naming both
# numbers). They used to be accepted without a word.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
M="$work/m"
mkdir -p "$M" && cp "$TINY"/* "$M/" && chmod u+w "$M"/*
python3 - "$M/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
(c["text_config"] if "text_config" in c else c)["max_position_embeddings"] = 16
json.dump(c, open(p, "w"), indent=2)
PY
n=$(wc -w < "$TINY/prompt_ids.txt")  # 7 ids

bad "prompt + --gen past 16" 2 "the run spans $((n + 20)) positions" -- "$BIN/k3-forward" "$M" --ids "$TINY/prompt_ids.txt" --gen 20
contains "names the limit" "beyond the 16 the model was trained for (max_position_embeddings in config.json)" "$(cat "$work/err")"
contains "names the flags that decide the span" "positions (--ctx, or the prompt, saved state and --gen)" "$(cat "$work/err")"
bad "--ctx past 16" 2 "the run spans 100 positions" -- "$BIN/k3-forward" "$M" --ids "$TINY/prompt_ids.txt" --gen 2 --ctx 100
"$BIN/k3-pack" "$M" "$work/t" > /dev/null 2>&1
# Streaming prints its memory plan first; the refusal is the last line.
"$BIN/k3-forward" "$M" --trunk "$work/t" --preset min --ids "$TINY/prompt_ids.txt" --gen 20 > "$work/out" 2> "$work/err"
check "streaming: prompt + --gen past 16: exit" 2 "$?"
contains "streaming: prompt + --gen past 16: says why" "k3-forward: the run spans $((n + 20)) positions" "$(tail -1 "$work/err")"
check "streaming: prompt + --gen past 16: no id" 0 "$(stat -c %s "$work/out")"
# Up to the limit runs, and gives the ids the unchanged model gives.
out=$("$BIN/k3-forward" "$M" --ids "$TINY/prompt_ids.txt" --gen $((16 - n)) --ignore-eos 2> "$work/err"); rc=$?
check "exactly 16 positions: exit" 0 "$rc"
check "exactly 16 positions: same ids as the unchanged model" \
  "$("$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen $((16 - n)) --ignore-eos 2> /dev/null)" "$out"
# A saved state counts: 7 + 4 saved, then 6 more is 17.
"$BIN/k3-forward" "$M" --ids "$TINY/prompt_ids.txt" --gen 4 --ignore-eos --state-out "$work/s.k3s" > /dev/null 2>&1
bad "state + --gen past 16" 2 "positions" -- "$BIN/k3-forward" "$M" --state-in "$work/s.k3s" --gen 6 --ignore-eos < /dev/null
# A batch too.
printf '1 2 3\n4 5 6 7 8 9 10 11 12 13\n' > "$work/batch"
bad "batch line + --gen past 16" 2 "the run spans 20 positions" -- "$BIN/k3-forward" "$M" --batch "$work/batch" --gen 10
# And k3-chat's --ctx.
TOOL=k3-chat
bad "k3-chat --ctx past 16" 2 "the run spans 64 positions" -- "$BIN/k3-chat" "$M" --ctx 64 < /dev/null
finish position_limit_test
