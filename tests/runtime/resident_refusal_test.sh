#!/usr/bin/env bash
# A model too large to hold resident is refused (its last line), and nothing
# claims it is being held before that (the "holding ... resident" line comes
# only once the model fits).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
env K3_AVAILABLE_MEMORY=1000 "$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 1 --threads 2 \
  > "$work/out" 2> "$work/err"
check "over the memory: exit 6" 6 "$?"
contains "over the memory: the refusal is the last line" "the whole model resident needs" "$(tail -1 "$work/err")"
holds "over the memory: nothing says it is held" "! grep -q holding '$work/err'"
check "over the memory: no ids" 0 "$(stat -c %s "$work/out")"
"$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 1 --threads 2 > /dev/null 2> "$work/ok.err"
check "fits: exit 0" 0 "$?"
contains "fits: says what it holds" "holding" "$(cat "$work/ok.err")"
contains "fits: the line names the running tool" "k3-forward: holding" "$(cat "$work/ok.err")"
finish resident_refusal_test
