#!/usr/bin/env bash
# Messages name the running tool: on a budgeted run (packed trunk and a
# preset, so the memory plan, load steps and speculation notes are printed
# by the library) k3-chat's stderr says "k3-chat:" and never "k3-forward:",
# and k3-forward's the reverse; a refused plan is named by the tool too.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL pack"; exit 1; }

echo "Hello" | "$BIN/k3-chat" "$TINY" --trunk "$work/trunk" --preset min --max-tokens 4 > /dev/null 2> "$work/chat.err"
check "k3-chat budgeted run exit" 0 "$?"
contains "k3-chat names itself in the memory plan" "k3-chat: memory plan" "$(cat "$work/chat.err")"
check "k3-chat's stderr never says k3-forward" 0 "$(grep -c 'k3-forward' "$work/chat.err")"
check "every k3 line of k3-chat's stderr starts with k3-chat:" 0 \
  "$(grep -E '^k3[a-z-]*:' "$work/chat.err" | grep -vc '^k3-chat:')"

"$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --preset min --gen 3 < "$TINY/prompt_ids.txt" > /dev/null 2> "$work/fwd.err"
check "k3-forward budgeted run exit" 0 "$?"
contains "k3-forward names itself in the memory plan" "k3-forward: memory plan" "$(cat "$work/fwd.err")"
contains "k3-forward names itself in the figures" "k3-forward: prefill of" "$(cat "$work/fwd.err")"
check "k3-forward's stderr never says k3-chat" 0 "$(grep -c 'k3-chat' "$work/fwd.err")"

echo "Hello" | K3_AVAILABLE_MEMORY=1000 "$BIN/k3-chat" "$TINY" --trunk "$work/trunk" --preset max > /dev/null 2> "$work/refused.err"
check "k3-chat refused plan exit" 6 "$?"
check "the refused plan is k3-chat's, never k3-forward's" 0 "$(grep -c 'k3-forward' "$work/refused.err")"
contains "the refusal is named k3-chat" "k3-chat: " "$(tail -1 "$work/refused.err")"
finish k3_chat_tool_name_test
