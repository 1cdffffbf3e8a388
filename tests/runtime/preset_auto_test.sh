#!/usr/bin/env bash
# --preset auto at K3's true scale (a headers-only checkpoint with the real
# geometry): for several amounts of memory (K3_AVAILABLE_MEMORY), k3-forward
# says which preset it chose and why, the choice is the largest preset that
# --list-presets marks as fitting, k3-doctor recommends the same one, and
# the refusal without --trunk names it too. Below the floor, auto refuses.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

"$BIN/k3-synth" "$work/k3" --preset k3 --headers-only > "$work/synth.log" 2>&1
check "k3-synth --headers-only exit" 0 "$?"

for avail in 3000000000 30000000000 300000000000; do
  K3_AVAILABLE_MEMORY=$avail "$BIN/k3-forward" "$work/k3" --preset auto --plan < /dev/null > /dev/null 2> "$work/auto.err"
  chosen=$(sed -n 's/^k3-forward: --preset auto chose \([a-z]*\): .*/\1/p' "$work/auto.err")
  differs "$avail: auto names its choice" "" "$chosen"
  contains "$avail: and why" "within the" "$(grep -- '--preset auto chose' "$work/auto.err")"
  contains "$avail: and the source of the figure" "(K3_AVAILABLE_MEMORY" "$(grep -- '--preset auto chose' "$work/auto.err")"
  # Without a packed trunk the plan holds the whole trunk (111 GB): refused
  # where that does not fit, naming the same preset for when it is packed.
  if grep -q "the memory plan needs" "$work/auto.err"; then
    contains "$avail: the refusal names the choice" "with which --preset $chosen fits" "$(tail -1 "$work/auto.err")"
  else
    check "$avail: the resident trunk fits only with over 111 GB" max "$chosen"
  fi
  listed=$(K3_AVAILABLE_MEMORY=$avail "$BIN/k3-forward" "$work/k3" --list-presets | awk '$11 == "yes" {p = $1} END {print p}')
  check "$avail: auto = the largest preset --list-presets says fits" "$listed" "$chosen"
  K3_AVAILABLE_MEMORY=$avail "$BIN/k3-doctor" --model "$work/k3" --no-probe --json > "$work/doctor.json" 2> /dev/null
  doctor=$(python3 -c "
import json, sys
f = json.load(open('$work/doctor.json'))['sections']['forecast']
print([c for c in f if c['name'] == 'preset'][0]['details']['recommended'])")
  check "$avail: k3-doctor recommends what auto chose" "$chosen" "$doctor"
  # k3-chat (its own default context and speculation copies) chooses the same.
  K3_AVAILABLE_MEMORY=$avail "$BIN/k3-chat" "$work/k3" --preset auto --plan < /dev/null > /dev/null 2> "$work/chat.err"
  check "$avail: k3-chat's auto = k3-forward's" "$chosen" \
    "$(sed -n 's/^k3-chat: --preset auto chose \([a-z]*\): .*/\1/p' "$work/chat.err")"
done

# The forecast auto prints is the plan that follows, in each tool (on the tiny
# model with a packed trunk, where the plans fit).
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1
for tool in k3-forward k3-chat; do
  K3_AVAILABLE_MEMORY=8000000000 "$BIN/$tool" "$TINY" --trunk "$work/trunk" --preset auto --plan < /dev/null \
    > /dev/null 2> "$work/$tool.err"
  check "$tool --preset auto --plan exit" 0 "$?"
  forecast=$(sed -n "s/^$tool: --preset auto chose [a-z]*: forecast \([0-9.]* [kMG]*B\), .*/\1/p" "$work/$tool.err")
  plan=$(sed -n 's/^  forecast peak RSS \([0-9.]* [kMG]*B\).*/\1/p' "$work/$tool.err")
  differs "$tool: auto says its forecast" "" "$forecast"
  check "$tool: auto's forecast = the plan's peak RSS" "$plan" "$forecast"
done

# The list without a model directory is the K3 checkpoint's.
rows() { awk '!/^#/ && $1 != "preset" {print $1, $4, $5, $8, $9}'; }
check "--list-presets without a model dir = with the K3 checkpoint" \
  "$("$BIN/k3-forward" "$work/k3" --list-presets | rows)" "$("$BIN/k3-forward" --list-presets | rows)"

K3_AVAILABLE_MEMORY=1000000000 "$BIN/k3-forward" "$work/k3" --preset auto --plan < /dev/null > /dev/null 2> "$work/err"
check "1 GB: auto refuses (exit 6)" 6 "$?"
contains "1 GB: nothing fits" "--preset auto: no preset fits: the smallest (min) needs" "$(tail -1 "$work/err")"
contains "1 GB: names the limit" "limit (90% of 1.00 GB available)" "$(tail -1 "$work/err")"

finish preset_auto_test
